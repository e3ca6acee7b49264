// Higher-level differentiation of whole functions, as torch.autograd.functional: vector-Jacobian
// and Jacobian-vector products, full Jacobians and Hessians, and Hessian-vector products. Each is
// built on autograd::grad: a Jacobian row by row from backward passes, a Jacobian-vector product
// by the double-backward trick (the gradient with respect to a dummy output gradient u of
// vjp(u) = u^T J is J^T, so differentiating u -> J^T u along v gives J v).
//
// Every function takes `inputs` (floating tensors) and a function of them: one tensor to one
// tensor, or a list to a list. The inputs are not modified. Without create_graph they are
// replaced by detached copies inside, and the results are detached; with create_graph an input
// that requires grad stays in its graph, so that the results can be differentiated again with
// respect to it (and to anything it was computed from). A result that does not depend on an
// input gives zeros where strict is false, and an error naming the input where it is true; strict
// mode also refuses an output that depends on no input, and, with create_graph, a result that is
// a constant (PyTorch's strict mode).
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace tandem::autograd::functional {

using Function = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
using TensorFunction = std::function<Tensor(const Tensor&)>;

// How jacobian builds the matrix: one backward pass per output element (reverse mode, the
// default: cheaper when outputs are fewer than inputs), or one Jacobian-vector product per input
// element (forward mode: cheaper when inputs are fewer).
enum class JacobianStrategy { reverse_mode, forward_mode };

// v^T J and the function's outputs: v holds one tensor per output, of its shape. v may be left
// out (empty) when every output has one element: ones.
std::pair<std::vector<Tensor>, std::vector<Tensor>> vjp(const Function& f, const std::vector<Tensor>& inputs,
                                                        const std::vector<Tensor>& v = {}, bool create_graph = false,
                                                        bool strict = false);
std::pair<Tensor, Tensor> vjp(const TensorFunction& f, const Tensor& input, const Tensor& v = Tensor(),
                              bool create_graph = false, bool strict = false);

// J v and the function's outputs: v holds one tensor per input, of its shape (or is left out
// when every input has one element).
std::pair<std::vector<Tensor>, std::vector<Tensor>> jvp(const Function& f, const std::vector<Tensor>& inputs,
                                                        const std::vector<Tensor>& v = {}, bool create_graph = false,
                                                        bool strict = false);
std::pair<Tensor, Tensor> jvp(const TensorFunction& f, const Tensor& input, const Tensor& v = Tensor(),
                              bool create_graph = false, bool strict = false);

// The Jacobian: result[i][j] = d outputs[i] / d inputs[j], of shape outputs[i].shape +
// inputs[j].shape (torch.autograd.functional.jacobian's tuple of tuples).
std::vector<std::vector<Tensor>> jacobian(const Function& f, const std::vector<Tensor>& inputs,
                                          bool create_graph = false, bool strict = false,
                                          JacobianStrategy strategy = JacobianStrategy::reverse_mode);
Tensor jacobian(const TensorFunction& f, const Tensor& input, bool create_graph = false, bool strict = false,
                JacobianStrategy strategy = JacobianStrategy::reverse_mode);

// The Hessian of a function with one output of one element: result[i][j] = d^2 f / d inputs[i]
// d inputs[j], of shape inputs[i].shape + inputs[j].shape. outer_strategy builds the Jacobian
// of the gradient.
std::vector<std::vector<Tensor>> hessian(const Function& f, const std::vector<Tensor>& inputs,
                                         bool create_graph = false, bool strict = false,
                                         JacobianStrategy outer_strategy = JacobianStrategy::reverse_mode);
Tensor hessian(const TensorFunction& f, const Tensor& input, bool create_graph = false, bool strict = false,
               JacobianStrategy outer_strategy = JacobianStrategy::reverse_mode);

// v^T H and H v for a function with one output of one element, with that output: v holds one
// tensor per input (or is left out when every input has one element). vhp takes one backward of
// the gradient; hvp the double-backward trick on top, as PyTorch's (the two agree wherever the
// second derivatives are continuous, H being symmetric there).
std::pair<Tensor, std::vector<Tensor>> vhp(const Function& f, const std::vector<Tensor>& inputs,
                                           const std::vector<Tensor>& v = {}, bool create_graph = false,
                                           bool strict = false);
std::pair<Tensor, Tensor> vhp(const TensorFunction& f, const Tensor& input, const Tensor& v = Tensor(),
                              bool create_graph = false, bool strict = false);
std::pair<Tensor, std::vector<Tensor>> hvp(const Function& f, const std::vector<Tensor>& inputs,
                                           const std::vector<Tensor>& v = {}, bool create_graph = false,
                                           bool strict = false);
std::pair<Tensor, Tensor> hvp(const TensorFunction& f, const Tensor& input, const Tensor& v = Tensor(),
                              bool create_graph = false, bool strict = false);

}  // namespace tandem::autograd::functional
