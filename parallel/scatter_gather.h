// Scatter and gather of whole argument lists and results, recursively: a Tensor is split along
// dim into one chunk per replica; std::vector, std::array, std::pair, std::tuple, std::map,
// std::unordered_map, std::optional and std::variant are walked element by element; any other
// value (a number, a string, a flag, a struct) is given to every replica as it is. A
// std::map<std::string, ...> of tensors (or of std::variant<Tensor, bool, ...>) is how
// keyword-style arguments travel. Gathering joins tensors along dim on one device and keeps the
// structure; 0-dim tensors (one per replica, such as losses) become a 1-D tensor of one value per
// replica; undefined tensors from every replica (PyTorch's None) give an undefined tensor. An
// output gather cannot see inside (a struct, say) is a compile-time error, where it would
// otherwise return the first replica's part alone.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "core/tensor.h"
#include "kernels/views.h"
#include "parallel/functions.h"

namespace tandem::parallel {

// Where each replica's share goes: chunk i (chunk_sizes[i] rows along dim) to devices[i].
struct ScatterPlan {
  std::vector<Device> devices;
  std::vector<int64_t> chunk_sizes;
  int64_t dim = 0;
  int64_t rows = 0;  // the batch: the size along dim every scattered tensor has
};

namespace detail {

template <typename T>
struct is_vector : std::false_type {};
template <typename T, typename A>
struct is_vector<std::vector<T, A>> : std::true_type {};
template <typename T>
struct is_array : std::false_type {};
template <typename T, size_t N>
struct is_array<std::array<T, N>> : std::true_type {};
template <typename T>
struct is_map : std::false_type {};
template <typename K, typename V, typename C, typename A>
struct is_map<std::map<K, V, C, A>> : std::true_type {};
template <typename K, typename V, typename H, typename E, typename A>
struct is_map<std::unordered_map<K, V, H, E, A>> : std::true_type {};
template <typename T>
struct is_tuple_like : std::false_type {};
template <typename... T>
struct is_tuple_like<std::tuple<T...>> : std::true_type {};
template <typename A, typename B>
struct is_tuple_like<std::pair<A, B>> : std::true_type {};
template <typename T>
struct is_optional : std::false_type {};
template <typename T>
struct is_optional<std::optional<T>> : std::true_type {};
template <typename T>
struct is_variant : std::false_type {};
template <typename... T>
struct is_variant<std::variant<T...>> : std::true_type {};
// Values gather takes from the first replica: what cannot hold a tensor.
template <typename T>
constexpr bool is_plain_value = std::is_arithmetic_v<T> || std::is_enum_v<T> || std::is_same_v<T, std::string> ||
                                std::is_same_v<T, Device> || std::is_same_v<T, std::monostate>;

// Calls f on every tensor inside v, depth first.
template <typename T, typename F>
void for_each_tensor(const T& v, F&& f) {
  using U = std::decay_t<T>;
  if constexpr (std::is_same_v<U, Tensor>) {
    f(v);
  } else if constexpr (is_vector<U>::value || is_array<U>::value) {
    for (const auto& e : v) for_each_tensor(e, f);
  } else if constexpr (is_map<U>::value) {
    for (const auto& [k, e] : v) for_each_tensor(e, f);
  } else if constexpr (is_tuple_like<U>::value) {
    std::apply([&](const auto&... e) { (for_each_tensor(e, f), ...); }, v);
  } else if constexpr (is_optional<U>::value) {
    if (v) for_each_tensor(*v, f);
  } else if constexpr (is_variant<U>::value) {
    std::visit([&](const auto& e) { for_each_tensor(e, f); }, v);
  }
}

// Fails unless the tensor v can be split along plan.dim into the plan's chunks.
inline void check_scatterable(const Tensor& v, const ScatterPlan& plan) {
  TD_CHECK(v.dim() > 0, "DataParallel: a 0-dim tensor argument has no dim ", plan.dim, " to scatter along (pass "
           "values every replica needs whole as non-tensor arguments)");
  const int64_t d = wrap_dim(plan.dim, v.dim(), "DataParallel");
  TD_CHECK(v.sizes()[d] == plan.rows, "DataParallel: a tensor of shape ", shape_str(v.sizes()), " is to be "
           "scattered along dim ", plan.dim, ", but the batch has ", plan.rows, " rows there (the first tensor "
           "argument's size); every tensor argument is split into the replicas' chunks, so each needs ", plan.rows,
           " along dim ", plan.dim, " (pass values every replica needs whole as non-tensor arguments)");
}

// Checks every tensor inside values before any is split, so that a bad one moves nothing.
template <typename... Values>
void check_all_scatterable(const ScatterPlan& plan, const Values&... values) {
  auto check = [&](const Tensor& t) {
    if (t.defined()) check_scatterable(t, plan);
  };
  (for_each_tensor(values, check), ...);
  (void)check;  // unused when there are no values
}

// v split into plan.chunk_sizes.size() values, one per replica.
template <typename T>
std::vector<T> scatter_value(const T& v, const ScatterPlan& plan) {
  const size_t n = plan.chunk_sizes.size();
  using U = std::decay_t<T>;
  if constexpr (std::is_same_v<U, Tensor>) {
    if (!v.defined()) return std::vector<T>(n, v);
    check_scatterable(v, plan);
    const int64_t d = wrap_dim(plan.dim, v.dim(), "DataParallel");  // a negative dim counts from each tensor's end
    return Scatter::apply(v, plan.devices, plan.chunk_sizes, d);
  } else if constexpr (is_vector<U>::value) {
    std::vector<T> out(n);
    for (auto& o : out) o.reserve(v.size());
    for (const auto& e : v) {
      auto parts = scatter_value(e, plan);
      for (size_t i = 0; i < n; ++i) out[i].push_back(std::move(parts[i]));
    }
    return out;
  } else if constexpr (is_array<U>::value) {
    std::vector<T> out(n);
    for (size_t k = 0; k < v.size(); ++k) {
      auto parts = scatter_value(v[k], plan);
      for (size_t i = 0; i < n; ++i) out[i][k] = std::move(parts[i]);
    }
    return out;
  } else if constexpr (is_map<U>::value) {
    std::vector<T> out(n);
    for (const auto& [k, e] : v) {
      auto parts = scatter_value(e, plan);
      for (size_t i = 0; i < n; ++i) out[i].emplace(k, std::move(parts[i]));
    }
    return out;
  } else if constexpr (is_tuple_like<U>::value) {
    auto parts = std::apply([&](const auto&... e) { return std::make_tuple(scatter_value(e, plan)...); }, v);
    std::vector<T> out;
    for (size_t i = 0; i < n; ++i) {
      out.push_back(std::apply([i](auto&... p) { return T{std::move(p[i])...}; }, parts));
    }
    return out;
  } else if constexpr (is_optional<U>::value) {
    if (!v) return std::vector<T>(n);
    auto parts = scatter_value(*v, plan);
    return std::vector<T>(std::make_move_iterator(parts.begin()), std::make_move_iterator(parts.end()));
  } else if constexpr (is_variant<U>::value) {
    return std::visit(
        [&](const auto& e) {
          auto parts = scatter_value(e, plan);
          return std::vector<T>(std::make_move_iterator(parts.begin()), std::make_move_iterator(parts.end()));
        },
        v);
  } else {
    return std::vector<T>(n, v);
  }
}

// The replicas' values joined into one: tensors along dim on destination, containers element
// by element (every replica's of the same length, keys or alternative); plain values (numbers,
// strings) are taken from the first replica. A lone tensor already on destination is returned as
// it is unless always_copy (as PyTorch's DataParallel returns the module's own output on one device).
template <typename T>
T gather_value(const std::vector<T>& outs, Device destination, int64_t dim, bool always_copy) {
  using U = std::decay_t<T>;
  if constexpr (std::is_same_v<U, Tensor>) {
    size_t defined = 0;
    bool all_scalars = true;
    for (const Tensor& t : outs) {
      if (!t.defined()) continue;
      ++defined;
      all_scalars = all_scalars && t.dim() == 0;
    }
    if (defined == 0) return Tensor();  // None from every replica
    TD_CHECK(defined == outs.size(), "DataParallel: ", outs.size() - defined, " of ", outs.size(),
             " replicas returned an undefined tensor where the others returned one");
    if (outs.size() == 1 && outs[0].device() == destination && !always_copy) {
      if (all_scalars) return outs[0].unsqueeze(0);
      wrap_dim(dim, outs[0].dim(), "gather");  // the check a gather of several makes
      return outs[0];
    }
    if (!all_scalars) return Gather::apply(outs, destination, dim);
    std::vector<Tensor> rows;
    for (const Tensor& t : outs) rows.push_back(t.unsqueeze(0));
    return Gather::apply(rows, destination, 0);
  } else if constexpr (is_vector<U>::value || is_array<U>::value) {
    for (const T& o : outs) {
      TD_CHECK(o.size() == outs[0].size(), "DataParallel: replicas returned lists of different lengths (",
               outs[0].size(), " and ", o.size(), ")");
    }
    T out = outs[0];
    for (size_t k = 0; k < outs[0].size(); ++k) {
      std::vector<std::decay_t<decltype(outs[0][k])>> column;
      for (const T& o : outs) column.push_back(o[k]);
      out[k] = gather_value(column, destination, dim, always_copy);
    }
    return out;
  } else if constexpr (is_map<U>::value) {
    for (const T& o : outs) {
      TD_CHECK(o.size() == outs[0].size(), "DataParallel: replicas returned maps with different keys (",
               outs[0].size(), " and ", o.size(), " of them)");
    }
    T out;
    for (const auto& [key, first] : outs[0]) {
      std::vector<std::decay_t<decltype(first)>> column;
      for (const T& o : outs) {
        auto it = o.find(key);
        TD_CHECK(it != o.end(), "DataParallel: replicas returned maps with different keys");
        column.push_back(it->second);
      }
      out.emplace(key, gather_value(column, destination, dim, always_copy));
    }
    return out;
  } else if constexpr (is_tuple_like<U>::value) {
    return [&]<size_t... I>(std::index_sequence<I...>) {
      auto column = [&]<size_t K>() {
        std::vector<std::decay_t<std::tuple_element_t<K, U>>> c;
        for (const T& o : outs) c.push_back(std::get<K>(o));
        return gather_value(c, destination, dim, always_copy);
      };
      return T{column.template operator()<I>()...};
    }(std::make_index_sequence<std::tuple_size_v<U>>{});
  } else if constexpr (is_optional<U>::value) {
    std::vector<std::decay_t<decltype(*outs[0])>> column;
    for (const T& o : outs) {
      TD_CHECK(o.has_value() == outs[0].has_value(), "DataParallel: some replicas returned a value and others none");
      if (o) column.push_back(*o);
    }
    if (column.empty()) return T{};
    return gather_value(column, destination, dim, always_copy);
  } else if constexpr (is_variant<U>::value) {
    for (const T& o : outs) {
      TD_CHECK(o.index() == outs[0].index(), "DataParallel: replicas returned different alternatives of a variant (",
               outs[0].index(), " and ", o.index(), ")");
    }
    return std::visit(
        [&](const auto& first) -> T {
          using E = std::decay_t<decltype(first)>;
          std::vector<E> column;
          for (const T& o : outs) column.push_back(std::get<E>(o));
          return gather_value(column, destination, dim, always_copy);
        },
        outs[0]);
  } else {
    static_assert(is_plain_value<U>, "DataParallel cannot gather this output type: it sees inside Tensor, "
                  "std::vector, std::array, std::pair, std::tuple, std::map, std::unordered_map, std::optional and "
                  "std::variant, and takes numbers, enums, strings and devices from the first replica. Return the "
                  "tensors of a struct in a std::tuple or a std::map.");
    return outs[0];
  }
}

// An argument as scatter and move_to take it: a C array (a string literal, say) as a pointer to its
// first element, as it would reach a function taking it by value; anything else as it is.
template <typename T>
const T& as_argument(const T& v) {
  return v;
}
template <typename T, size_t N>
const T* as_argument(const T (&v)[N]) {
  return v;
}
template <typename T>
using argument_t = std::decay_t<decltype(as_argument(std::declval<const T&>()))>;

}  // namespace detail

// The batch size along dim: that of the first tensor inside args, if any.
template <typename... Args>
std::optional<int64_t> batch_rows(int64_t dim, const Args&... args) {
  std::optional<int64_t> rows;
  auto visit = [&](const Tensor& t) {
    if (rows || !t.defined()) return;
    TD_CHECK(t.dim() > 0, "DataParallel: the first tensor argument is 0-dim, so it has no batch dim to split");
    rows = t.sizes()[wrap_dim(dim, t.dim(), "DataParallel")];
  };
  (detail::for_each_tensor(args, visit), ...);
  (void)visit;  // unused when there are no arguments
  return rows;
}

// Each argument split per replica: result[i] holds replica i's arguments.
template <typename... Args>
std::vector<std::tuple<detail::argument_t<Args>...>> scatter_arguments(const ScatterPlan& plan, const Args&... args) {
  detail::check_all_scatterable(plan, args...);
  auto parts = std::make_tuple(detail::scatter_value(detail::as_argument(args), plan)...);
  std::vector<std::tuple<detail::argument_t<Args>...>> out;
  for (size_t i = 0; i < plan.chunk_sizes.size(); ++i) {
    out.push_back(std::apply([i](auto&... p) { return std::tuple<detail::argument_t<Args>...>{std::move(p[i])...}; }, parts));
  }
  return out;
}

// always_copy: a lone replica's tensors are copied too, so that the output never shares memory
// with the replica's (an input a module returns as it is, say).
template <typename T>
T gather_outputs(const std::vector<T>& outputs, Device destination, int64_t dim = 0, bool always_copy = false) {
  TD_CHECK(!outputs.empty(), "gather: no outputs to gather");
  return detail::gather_value(outputs, destination, dim, always_copy);
}

}  // namespace tandem::parallel
