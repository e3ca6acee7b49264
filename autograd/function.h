// Custom differentiable functions, as LibTorch's torch::autograd::Function and PyTorch's
// torch.autograd.Function: a struct with a static forward and backward,
//
//   struct Cube : td::autograd::Function<Cube> {
//     static Tensor forward(td::autograd::AutogradContext* ctx, const Tensor& x) {
//       ctx->save_for_backward({x});
//       return x * x * x;
//     }
//     static std::vector<Tensor> backward(td::autograd::AutogradContext* ctx, const std::vector<Tensor>& g) {
//       const Tensor x = ctx->get_saved_variables()[0];
//       return {g[0] * 3 * x * x};
//     }
//   };
//   Tensor y = Cube::apply(x);  // y.grad_fn()->name() == "CubeBackward"
//
// forward runs with grad mode off and returns a Tensor or a std::vector<Tensor>; its arguments
// are any values, the Tensor ones being the inputs gradients flow to (pass tensors one by one:
// lists and optionals of tensors are refused at compile time). It must not write its tensor
// inputs that require grad in place (LibTorch's mark_dirty is not offered): that is an error.
// backward gets one gradient per output (zeros where an output got none, unless
// set_materialize_grads(false) leaves them undefined) and returns one gradient per forward
// argument, as LibTorch's: undefined for an argument that is not a tensor; for a tensor, of its
// shape (or one that sums down to it), converted to its dtype and device, and dropped where the
// tensor needs none. Undefined extra entries at the end are allowed. backward runs with grad mode
// on under create_graph, so a backward written with differentiable ops can be differentiated
// again. As in LibTorch, an input returned as it is comes back as a view of itself, which
// in-place writes refuse; and backward is not serialised: two threads running backward through
// one retained graph must not both write ctx->saved_data.
#pragma once

#include <any>
#include <functional>
#include <cstdint>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "autograd/grad_mode.h"
#include "autograd/graph.h"
#include "autograd/record.h"
#include "core/tensor.h"

namespace tandem::autograd {

class AutogradContext;

namespace detail {

// The non-template half of Function::apply: the tensor arguments (handles of their own, so that a
// forward taking an argument by value and moving from it leaves them whole), their positions
// among forward's arguments, and how many arguments forward takes after ctx.
struct ApplyState {
  std::vector<Tensor> inputs;
  std::vector<size_t> positions;
  std::vector<bool> tensor_typed;  // per argument: a Tensor (defined or not)
  std::vector<uint32_t> versions;  // of the inputs, before forward
  size_t arity = 0;
};
using BackwardCall = std::function<std::vector<Tensor>(AutogradContext*, const std::vector<Tensor>&)>;
bool any_requires_grad(const ApplyState& state);
// After forward: an input that requires grad and was written in place is an error.
void check_unmodified(const std::string& name, const ApplyState& state);
// Makes the differentiable outputs the results of the function's node (an output that is an
// input returned unchanged becomes a new handle on its data first).
void record_function(const std::shared_ptr<AutogradContext>& ctx, const ApplyState& state,
                     std::vector<Tensor>& outputs, BackwardCall backward);

}  // namespace detail

// What forward leaves for backward (LibTorch's AutogradContext).
class AutogradContext {
 public:
  // Tensors backward reads. Each is checked on the way out: modified in place since forward, it is
  // an error. An output of forward saved here comes back attached to this function's node.
  void save_for_backward(std::vector<Tensor> tensors);
  std::vector<Tensor> get_saved_variables() const;
  // Anything else backward needs, by name (LibTorch: ctx->saved_data["k"] = 2). Not tensors: an
  // output kept here would keep the graph alive through itself (save_for_backward is for those).
  std::map<std::string, std::any> saved_data;
  // Outputs that are not differentiable (indices, masks): they get no gradient function.
  void mark_non_differentiable(const std::vector<Tensor>& outputs);
  // Whether backward gets zeros (the default) or undefined tensors for outputs without a gradient.
  void set_materialize_grads(bool value) { materialize_grads_ = value; }
  // Whether forward's tensor argument `index` (counting the Tensor arguments only, as LibTorch's)
  // requires grad while grad mode was on, i.e. whether backward must return its gradient.
  bool needs_input_grad(size_t index) const;

  AutogradContext() = default;
  AutogradContext(const AutogradContext&) = delete;
  AutogradContext& operator=(const AutogradContext&) = delete;

 private:
  template <typename T>
  friend struct Function;
  friend void detail::record_function(const std::shared_ptr<AutogradContext>& ctx, const detail::ApplyState& state,
                                      std::vector<Tensor>& outputs, detail::BackwardCall backward);
  // After forward: the tensors to save become SavedTensors, those that are outputs as outputs.
  void finish(const std::vector<Tensor>& outputs);
  bool is_non_differentiable(const Tensor& t) const;

  std::string name_;
  std::vector<Tensor> to_save_;
  std::vector<SavedTensor> saved_;
  bool finished_ = false;
  std::vector<const TensorImpl*> non_differentiable_;
  bool materialize_grads_ = true;
  std::vector<bool> needs_input_grad_;
};

namespace detail {

std::string function_name(const std::type_info& type);  // "Cube" for struct Cube

template <typename A>
constexpr bool is_tensor_argument = std::is_same_v<std::remove_cvref_t<A>, Tensor>;
template <typename A>
constexpr bool is_tensor_container = std::is_same_v<std::remove_cvref_t<A>, std::vector<Tensor>> ||
                                     std::is_same_v<std::remove_cvref_t<A>, std::optional<Tensor>>;

inline std::vector<Tensor> output_list(const Tensor& t) { return {t}; }
inline std::vector<Tensor> output_list(const std::vector<Tensor>& ts) { return ts; }
inline void set_outputs(Tensor& out, const std::vector<Tensor>& list) { out = list[0]; }
inline void set_outputs(std::vector<Tensor>& out, const std::vector<Tensor>& list) { out = list; }

}  // namespace detail

template <typename T>
struct Function {
  template <typename... Args>
  static auto apply(Args&&... args) {
    static_assert((!detail::is_tensor_container<Args> && ...),
                  "Function: pass tensors one by one (a std::vector or std::optional of tensors is not an input)");
    static const std::string name = detail::function_name(typeid(T)) + "Backward";
    auto ctx = std::make_shared<AutogradContext>();
    ctx->name_ = name;
    detail::ApplyState state;
    state.arity = sizeof...(Args);
    size_t position = 0;
    auto collect = [&](const auto& arg) {
      state.tensor_typed.push_back(detail::is_tensor_argument<decltype(arg)>);
      if constexpr (detail::is_tensor_argument<decltype(arg)>) {
        if (arg.defined()) {
          state.inputs.push_back(arg);
          state.positions.push_back(position);
          state.versions.push_back(arg.version());
        }
      }
      ++position;
    };
    (collect(args), ...);
    const bool recording = detail::any_requires_grad(state);
    for (size_t a = 0, k = 0; a < state.arity; ++a) {
      if (!state.tensor_typed[a]) continue;
      const bool given = k < state.positions.size() && state.positions[k] == a;
      ctx->needs_input_grad_.push_back(given && recording && state.inputs[k].requires_grad());
      k += given ? 1 : 0;
    }
    using Output = decltype(T::forward(ctx.get(), std::forward<Args>(args)...));
    static_assert(std::is_same_v<Output, Tensor> || std::is_same_v<Output, std::vector<Tensor>>,
                  "Function: forward must return a Tensor or a std::vector<Tensor>");
    Output out;
    {
      AutoGradMode no_grad(false);
      out = T::forward(ctx.get(), std::forward<Args>(args)...);
    }
    detail::check_unmodified(name, state);
    if (!recording) return out;
    std::vector<Tensor> outputs = detail::output_list(out);
    detail::record_function(ctx, state, outputs, [](AutogradContext* c, const std::vector<Tensor>& grads) {
      return T::backward(c, grads);
    });
    detail::set_outputs(out, outputs);
    return out;
  }
};

}  // namespace tandem::autograd
