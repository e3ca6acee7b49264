// CPU reductions: the Ops policies run by reduce_engine.h. Sums and norms accumulate floating
// inputs in float64 (more accurate than the float32 result needs), integers in int64.
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/convert.h"
#include "core/dispatch.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/reduce_engine.h"
#include "kernels/functors.h"

namespace tandem::kernels::cpu {

ReduceDims reduce_dims(const Tensor& in, const std::vector<bool>& reduced) {
  ReduceDims d;
  for (int64_t i = 0; i < in.dim(); ++i) {
    const int64_t size = in.sizes()[i], stride = in.strides()[i];
    const bool r = reduced[i];
    (r ? d.fold : d.outputs) *= size;
    if (size == 1) continue;
    auto& sizes = r ? d.reduced_sizes : d.kept_sizes;
    auto& strides = r ? d.reduced_strides : d.kept_strides;
    if (!sizes.empty() && strides.back() == stride * size) {  // continues the previous dim of its kind
      sizes.back() *= size;
      strides.back() = stride;
    } else {
      sizes.push_back(size);
      strides.push_back(stride);
    }
  }
  TD_CHECK(d.reduced_sizes.size() <= 64, "reduce: too many reduced dims");
  return d;
}

namespace {

// Accumulation type for sums and products of In.
template <typename In>
using sum_acc_t = std::conditional_t<is_floating_type_v<In>, double, int64_t>;

template <typename In>
auto op_value(In x) {
  return static_cast<opmath_t<In>>(x);
}

template <typename In, typename Out>
struct SumOps {
  static constexpr bool kLanes = true;
  using Acc = sum_acc_t<In>;
  Out* out;
  bool mean;
  Acc init() const { return 0; }
  Acc step(Acc a, In x, int64_t) const { return fn::sum(a, static_cast<Acc>(op_value(x))); }
  Acc combine(Acc a, Acc b) const { return fn::sum(a, b); }
  void write(int64_t o, Acc a, int64_t n) const {
    out[o] = mean ? convert<Out>(static_cast<double>(a) / static_cast<double>(n)) : convert<Out>(a);
  }
};

template <typename In, typename Out>
struct ProdOps {
  static constexpr bool kLanes = true;
  using Acc = sum_acc_t<In>;
  Out* out;
  Acc init() const { return 1; }
  Acc step(Acc a, In x, int64_t) const { return fn::product(a, static_cast<Acc>(op_value(x))); }
  Acc combine(Acc a, Acc b) const { return fn::product(a, b); }
  void write(int64_t o, Acc a, int64_t) const { out[o] = convert<Out>(a); }
};

// max (is_max) or min of the values, NaN propagating, +0 above -0.
template <typename In>
struct ExtremumOps {
  static constexpr bool kLanes = true;
  using M = opmath_t<In>;
  struct Acc {
    M value;
    bool empty = true;
  };
  In* out;
  bool is_max;
  Acc init() const { return Acc{M(0), true}; }
  Acc step(Acc a, In xin, int64_t) const {
    M x = op_value(xin);
    if (a.empty) return Acc{x, false};
    if (fn::is_nan(a.value)) return a;
    if (fn::is_nan(x) || (is_max ? fn::above(x, a.value) : fn::above(a.value, x))) return Acc{x, false};
    return a;
  }
  Acc combine(Acc a, Acc b) const { return b.empty ? a : step(a, static_cast<In>(b.value), 0); }
  void write(int64_t o, Acc a, int64_t) const { out[o] = static_cast<In>(a.value); }
};

template <typename In>
struct ArgOps {
  using M = opmath_t<In>;
  struct Acc {
    M value;
    int64_t index = -1;  // -1: nothing folded yet
  };
  In* values;  // may be null
  int64_t* indices;
  bool is_max;
  Acc init() const { return Acc{M(0), -1}; }
  // Whether `later` replaces `earlier`: a NaN sticks, ties keep the first.
  bool replaces(const Acc& earlier, const Acc& later) const {
    if (later.index < 0) return false;
    if (earlier.index < 0) return true;
    if (fn::is_nan(earlier.value)) return false;
    if (fn::is_nan(later.value)) return true;
    return is_max ? later.value > earlier.value : later.value < earlier.value;
  }
  Acc step(Acc a, In x, int64_t position) const {
    Acc b{op_value(x), position};
    return replaces(a, b) ? b : a;
  }
  Acc combine(Acc a, Acc b) const { return replaces(a, b) ? b : a; }
  void write(int64_t o, Acc a, int64_t) const {
    if (values) values[o] = static_cast<In>(a.value);
    indices[o] = a.index;
  }
};

// Welford's running mean and squared deviation; chunks merge with Chan's formula.
template <typename In, typename Out>
struct VarOps {
  struct Acc {
    double mean = 0, m2 = 0;
    int64_t n = 0;
  };
  Out* out;
  int64_t correction;
  bool take_sqrt;
  Acc init() const { return Acc{}; }
  Acc step(Acc a, In xin, int64_t) const {
    double x = static_cast<double>(op_value(xin));
    a.n += 1;
    double delta = x - a.mean;
    a.mean += delta / static_cast<double>(a.n);
    a.m2 += delta * (x - a.mean);
    return a;
  }
  Acc combine(Acc a, Acc b) const {
    if (a.n == 0) return b;
    if (b.n == 0) return a;
    int64_t n = a.n + b.n;
    double delta = b.mean - a.mean;
    double mean = a.mean + delta * static_cast<double>(b.n) / static_cast<double>(n);
    double m2 = a.m2 + b.m2 + delta * delta * static_cast<double>(a.n) * static_cast<double>(b.n) / static_cast<double>(n);
    return Acc{mean, m2, n};
  }
  void write(int64_t o, Acc a, int64_t) const {
    double divisor = std::max<double>(0, static_cast<double>(a.n - correction));
    double v = a.m2 / divisor;
    out[o] = convert<Out>(take_sqrt ? std::sqrt(v) : v);
  }
};

// Any: one instantiation for the norms that training does not use (0, -inf, other p), which
// switches on the kind per element; 1, 2 and inf (clip_grad_norm_) are compiled per kind.
enum class NormKind { Zero, One, Two, Inf, NegInf, P, Any };

// The larger (or smaller) of two magnitudes, NaN sticking.
inline double pick(double a, double x, bool larger) {
  if (std::isnan(a) || std::isnan(x)) return std::isnan(a) ? a : x;
  return (larger ? x > a : x < a) ? x : a;
}

template <typename In, NormKind K>
struct NormOps {
  static constexpr bool kLanes = K != NormKind::Any;
  using Acc = double;
  In* out;
  double p;
  NormKind kind;  // K, or for Any the kind this norm is
  NormKind which() const { return K == NormKind::Any ? kind : K; }
  Acc init() const { return which() == NormKind::NegInf ? std::numeric_limits<double>::infinity() : 0.0; }
  Acc step(Acc a, In xin, int64_t) const { return fold(a, std::abs(static_cast<double>(op_value(xin)))); }
  Acc fold(Acc a, double x) const {
    switch (which()) {
      case NormKind::Zero: return a + (x != 0 ? 1 : 0);
      case NormKind::One: return a + x;
      case NormKind::Two: return a + x * x;
      case NormKind::Inf: return pick(a, x, true);
      case NormKind::NegInf: return pick(a, x, false);
      case NormKind::P: return a + std::pow(x, p);
      case NormKind::Any: break;
    }
    return a;
  }
  Acc combine(Acc a, Acc b) const {
    if (which() == NormKind::Inf || which() == NormKind::NegInf) return pick(a, b, which() == NormKind::Inf);
    return a + b;
  }
  void write(int64_t o, Acc a, int64_t) const {
    double v = a;
    if (which() == NormKind::Two) v = std::sqrt(a);
    if (which() == NormKind::P) v = std::pow(a, 1.0 / p);
    out[o] = convert<In>(v);
  }
};

template <typename In, typename Out>
struct LogicalOps {
  static constexpr bool kLanes = true;
  using Acc = bool;
  Out* out;
  bool is_all;
  Acc init() const { return is_all; }
  Acc step(Acc a, In x, int64_t) const { return is_all ? (a && convert<bool>(x)) : (a || convert<bool>(x)); }
  Acc combine(Acc a, Acc b) const { return is_all ? (a && b) : (a || b); }
  void write(int64_t o, Acc a, int64_t) const { out[o] = static_cast<Out>(a); }
};

void sum_or_mean(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced, bool mean) {
  dispatch_all(in.dtype(), "sum", [&]<typename In>() {
    dispatch_sum_output<In>(out.dtype(), mean ? "mean" : "sum", [&]<typename Out>() {
      reduce<In>(in, reduced, SumOps<In, Out>{static_cast<Out*>(out.data_ptr()), mean});
    });
  });
}

// all and any: a bool result, or uint8 for a uint8 input (as PyTorch keeps it).
void logical(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced, bool is_all) {
  const char* op = is_all ? "all" : "any";
  dispatch_all(in.dtype(), op, [&]<typename In>() {
    using Out = std::conditional_t<std::is_same_v<In, uint8_t>, uint8_t, bool>;
    TD_CHECK(out.dtype() == dtype_of<Out>, op, ": an output of dtype ", out.dtype(), " for an input of dtype ",
             dtype_of<In>, " is not supported");
    reduce<In>(in, reduced, LogicalOps<In, Out>{static_cast<Out*>(out.data_ptr()), is_all});
  });
}

}  // namespace

void sum(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced) {
  sum_or_mean(out, in, reduced, false);
}

void mean(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced) {
  sum_or_mean(out, in, reduced, true);
}

void prod(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced) {
  dispatch_all(in.dtype(), "prod", [&]<typename In>() {
    dispatch_sum_output<In>(out.dtype(), "prod", [&]<typename Out>() {
      reduce<In>(in, reduced, ProdOps<In, Out>{static_cast<Out*>(out.data_ptr())});
    });
  });
}

void amax(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced) {
  dispatch_all(in.dtype(), "amax", [&]<typename In>() {
    reduce<In>(in, reduced, ExtremumOps<In>{static_cast<In*>(out.data_ptr()), true});
  });
}

void amin(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced) {
  dispatch_all(in.dtype(), "amin", [&]<typename In>() {
    reduce<In>(in, reduced, ExtremumOps<In>{static_cast<In*>(out.data_ptr()), false});
  });
}

void arg_reduce(const Tensor& values, const Tensor& indices, const Tensor& in, const std::vector<bool>& reduced,
                bool is_max) {
  dispatch_all(in.dtype(), "argmax", [&]<typename In>() {
    In* v = values.defined() ? static_cast<In*>(values.data_ptr()) : nullptr;
    reduce<In>(in, reduced, ArgOps<In>{v, indices.data_ptr<int64_t>(), is_max});
  });
}

void var(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced, int64_t correction, bool take_sqrt) {
  dispatch_floating(in.dtype(), "var", [&]<typename In>() {
    reduce<In>(in, reduced, VarOps<In, In>{static_cast<In*>(out.data_ptr()), correction, take_sqrt});
  });
}

void norm(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced, double p) {
  dispatch_floating(in.dtype(), "norm", [&]<typename In>() {
    In* o = static_cast<In*>(out.data_ptr());
    if (p == 1) return reduce<In>(in, reduced, NormOps<In, NormKind::One>{o, p, NormKind::One});
    if (p == 2) return reduce<In>(in, reduced, NormOps<In, NormKind::Two>{o, p, NormKind::Two});
    if (std::isinf(p) && p > 0) return reduce<In>(in, reduced, NormOps<In, NormKind::Inf>{o, p, NormKind::Inf});
    const NormKind kind = p == 0 ? NormKind::Zero : std::isinf(p) ? NormKind::NegInf : NormKind::P;
    reduce<In>(in, reduced, NormOps<In, NormKind::Any>{o, p, kind});
  });
}

void all(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced) { logical(out, in, reduced, true); }

void any(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced) { logical(out, in, reduced, false); }

ScanLines scan_lines(const Tensor& out, const Tensor& in, int64_t dim) {
  ScanLines s;
  s.length = in.dim() == 0 ? 1 : in.sizes()[dim];
  s.lines = s.length == 0 ? 0 : in.numel() / s.length;
  s.in_stride = in.dim() == 0 ? 0 : in.strides()[dim];
  s.out_stride = in.dim() == 0 ? 0 : out.strides()[dim];
  std::vector<bool> along(in.dim(), false);
  if (in.dim() > 0) along[dim] = true;
  s.in_starts = reduce_dims(in, along);
  s.out_starts = reduce_dims(out, along);
  return s;
}

namespace {

// Running sums or products along `dim`: lines along it, each scanned in order; lines run in
// parallel. The running value is kept as sum and prod keep theirs (float64 for floating outputs,
// int64 for integers), as PyTorch's CPU scans do.
template <bool kProduct>
void scan(const char* op, const Tensor& out, const Tensor& in, int64_t dim) {
  const ScanLines s = scan_lines(out, in, dim);
  dispatch_all(in.dtype(), op, [&]<typename In>() {
    dispatch_sum_output<In>(out.dtype(), op, [&]<typename Out>() {
      const In* src = static_cast<const In*>(in.data_ptr());
      Out* dst = static_cast<Out*>(out.data_ptr());
      const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(s.length, 1));
      parallel_for(0, s.lines, grain, [&](int64_t b, int64_t e) {
        for (int64_t line = b; line < e; ++line) {
          const In* from = src + kept_offset(s.in_starts, line);
          Out* to = dst + kept_offset(s.out_starts, line);
          sum_acc_t<Out> acc = kProduct ? 1 : 0;
          for (int64_t i = 0; i < s.length; ++i) {
            const auto v = convert<sum_acc_t<Out>>(op_value(from[i * s.in_stride]));  // NaN to int64: defined
            acc = kProduct ? fn::product(acc, v) : fn::sum(acc, v);
            to[i * s.out_stride] = convert<Out>(acc);
          }
        }
      });
    });
  });
}

}  // namespace

void cumsum(const Tensor& out, const Tensor& in, int64_t dim) { scan<false>("cumsum", out, in, dim); }

void cumprod(const Tensor& out, const Tensor& in, int64_t dim) { scan<true>("cumprod", out, in, dim); }

}  // namespace tandem::kernels::cpu
