#include "autograd/functional.h"

#include <string>

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "kernels/factory.h"

namespace tandem::autograd::functional {

namespace {

// The inputs as the function sees them (see the header): views of the caller's inputs that
// stay in their graph, or detached leaves of their own.
std::vector<Tensor> prepare(const std::vector<Tensor>& inputs, bool create_graph, const char* op) {
  TD_CHECK(!inputs.empty(), op, ": expected at least one input");
  std::vector<Tensor> prepared;
  for (size_t j = 0; j < inputs.size(); ++j) {
    const Tensor& x = inputs[j];
    TD_CHECK(x.defined(), op, ": input ", j, " is an undefined tensor");
    TD_CHECK(is_floating(x.dtype()), op, ": input ", j, " must be a floating tensor, got ", x.dtype());
    prepared.push_back(create_graph && x.requires_grad() ? x.view_as(x) : x.detach().requires_grad_(true));
  }
  return prepared;
}

std::vector<Tensor> call(const Function& f, const std::vector<Tensor>& inputs, const char* op) {
  std::vector<Tensor> outputs = f(inputs);
  TD_CHECK(!outputs.empty(), op, ": the function returned no outputs");
  for (size_t i = 0; i < outputs.size(); ++i) {
    TD_CHECK(outputs[i].defined(), op, ": output ", i, " of the function is an undefined tensor");
    TD_CHECK(is_floating(outputs[i].dtype()), op, ": output ", i, " of the function must be floating, got ",
             outputs[i].dtype());
  }
  return outputs;
}

// In strict mode every output must depend on the inputs.
void check_outputs(const std::vector<Tensor>& outputs, bool strict, const char* op) {
  for (size_t i = 0; i < outputs.size() && strict; ++i) {
    TD_CHECK(outputs[i].requires_grad(), op, ": output ", i, " of the function does not require grad (it depends ",
             "on no input): not allowed in strict mode");
  }
}

// The one output of a function that hessian, vhp and hvp differentiate twice.
Tensor single_output(const Function& f, const std::vector<Tensor>& inputs, const char* op) {
  const std::vector<Tensor> outputs = call(f, inputs, op);
  TD_CHECK(outputs.size() == 1 && outputs[0].numel() == 1, op, ": the function must return one tensor of one ",
           "element, got ", outputs.size() == 1 ? "shape " + shape_str(outputs[0].sizes())
                                                : std::to_string(outputs.size()) + " outputs");
  return outputs[0];
}

// v checked against the tensors it goes with (the outputs for vjp, the inputs otherwise), or
// ones where it is left out and every one of them has one element.
std::vector<Tensor> vectors(const std::vector<Tensor>& v, const std::vector<Tensor>& like, const char* what,
                            const char* op) {
  if (v.empty()) {
    std::vector<Tensor> ones;
    for (size_t k = 0; k < like.size(); ++k) {
      TD_CHECK(like[k].numel() == 1, op, ": v may be left out only when every ", what, " has one element; ", what,
               " ", k, " has shape ", shape_str(like[k].sizes()));
      ones.push_back(ones_like(like[k]));
    }
    return ones;
  }
  TD_CHECK(v.size() == like.size(), op, ": v has ", v.size(), " tensors but there are ", like.size(), " ", what,
           "s");
  for (size_t k = 0; k < v.size(); ++k) {
    TD_CHECK(v[k].defined(), op, ": v[", k, "] is an undefined tensor");
    TD_CHECK(v[k].sizes() == like[k].sizes(), op, ": v[", k, "] has shape ", shape_str(v[k].sizes()), " but ", what,
             " ", k, " has shape ", shape_str(like[k].sizes()));
    TD_CHECK(v[k].device() == like[k].device(), op, ": v[", k, "] is on ", v[k].device(), " but ", what, " ", k,
             " is on ", like[k].device());
  }
  return v;
}

// The gradients of the outputs that depend on anything (weighted by their grad_outputs, if
// given) with respect to inputs; undefined for an input none of them reaches.
std::vector<Tensor> gradients(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                              const std::vector<Tensor>& grad_outputs, bool create_graph) {
  std::vector<Tensor> used, weights;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].defined() || !outputs[i].requires_grad()) continue;
    used.push_back(outputs[i]);
    if (!grad_outputs.empty()) weights.push_back(grad_outputs[i].to(outputs[i].dtype()));
  }
  if (used.empty()) return std::vector<Tensor>(inputs.size());
  return grad(used, inputs, weights, /*retain_graph=*/true, create_graph, /*allow_unused=*/true);
}

// Zeros (shaped as like[k]) for the gradients no output reached; an error in strict mode, which
// `independent(k)` words; in strict mode with create_graph (the caller's, or the first gradient
// of a second derivative), also for a gradient that is a constant (one that does not require
// grad), as PyTorch's.
template <typename Message>
std::vector<Tensor> zeros_where_unused(std::vector<Tensor> grads, const std::vector<Tensor>& like, bool strict,
                                       bool create_graph, const Message& independent) {
  for (size_t k = 0; k < grads.size(); ++k) {
    if (grads[k].defined()) {
      TD_CHECK(!strict || !create_graph || grads[k].requires_grad(), independent(k),
               " (its derivative is a constant): not allowed in strict mode");
      continue;
    }
    TD_CHECK(!strict, independent(k), ": not allowed in strict mode");
    grads[k] = zeros_like(like[k]);
  }
  return grads;
}

std::vector<Tensor> detached_unless(std::vector<Tensor> tensors, bool create_graph) {
  if (!create_graph) {
    for (Tensor& t : tensors) t = t.detach();
  }
  return tensors;
}

// A tensor shaped like `like` with a one at flat position k.
Tensor one_hot_like(const Tensor& like, int64_t k) {
  Tensor e = zeros({like.numel()}, like.options());
  e.narrow(0, k, 1).fill_(1);
  return e.view(like.sizes());
}

Shape joined(const Shape& a, const Shape& b) {
  Shape s = a;
  s.insert(s.end(), b.begin(), b.end());
  return s;
}

Function of_lists(const TensorFunction& f) {
  return [f](const std::vector<Tensor>& inputs) { return std::vector<Tensor>{f(inputs[0])}; };
}

std::vector<Tensor> one_or_none(const Tensor& v) { return v.defined() ? std::vector<Tensor>{v} : std::vector<Tensor>{}; }

// What a Jacobian's rows are in errors: the function's outputs ("jacobian: output 1 of the
// function is independent of input 0"), or, for hessian, the gradient's parts.
using RowName = std::string (*)(size_t);
std::string output_row(size_t i) { return "output " + std::to_string(i) + " of the function"; }
std::string gradient_row(size_t i) { return "the gradient with respect to input " + std::to_string(i); }

// result[i][j] of shape outputs[i].shape + inputs[j].shape, one backward pass per output element.
std::vector<std::vector<Tensor>> reverse_jacobian(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                                                  bool create_graph, bool strict, const char* op, RowName row_name) {
  std::vector<std::vector<Tensor>> result(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    std::vector<std::vector<Tensor>> rows(inputs.size());
    for (int64_t k = 0; k < out.numel(); ++k) {
      const std::vector<Tensor> row =
          zeros_where_unused(gradients({out}, inputs, {one_hot_like(out, k)}, create_graph), inputs, strict,
                             create_graph, [&](size_t j) {
                               return std::string(op) + ": " + row_name(i) + " is independent of input " +
                                      std::to_string(j);
                             });
      for (size_t j = 0; j < inputs.size(); ++j) rows[j].push_back(row[j]);
    }
    for (size_t j = 0; j < inputs.size(); ++j) {
      const Shape shape = joined(out.sizes(), inputs[j].sizes());
      result[i].push_back(rows[j].empty() ? zeros(shape, inputs[j].options()) : stack(rows[j]).view(shape));
    }
  }
  return result;
}

// The same matrix one Jacobian-vector product per input element, by the double-backward trick.
std::vector<std::vector<Tensor>> forward_jacobian(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                                                  bool create_graph, bool strict, const char* op, RowName row_name) {
  std::vector<Tensor> dummies;
  for (const Tensor& out : outputs) dummies.push_back(zeros_like(out).requires_grad_(true));
  auto independent = [&](size_t i, size_t j) {
    return std::string(op) + ": " + row_name(i) + " is independent of input " + std::to_string(j);
  };
  const std::vector<Tensor> transposed = gradients(outputs, inputs, dummies, /*create_graph=*/true);
  std::vector<std::vector<Tensor>> result(outputs.size(), std::vector<Tensor>(inputs.size()));
  for (size_t j = 0; j < inputs.size(); ++j) {
    std::vector<std::vector<Tensor>> columns(outputs.size());
    for (int64_t k = 0; k < inputs[j].numel(); ++k) {
      const std::vector<Tensor> column =
          transposed[j].defined()
              ? gradients({transposed[j]}, dummies, {one_hot_like(inputs[j], k)}, create_graph)
              : std::vector<Tensor>(outputs.size());
      for (size_t i = 0; i < outputs.size(); ++i) {
        TD_CHECK(!strict || column[i].defined(), independent(i, j), ": not allowed in strict mode");
        TD_CHECK(!strict || !create_graph || !column[i].defined() || column[i].requires_grad(), independent(i, j),
                 " (its derivative is a constant): not allowed in strict mode");
        columns[i].push_back(column[i].defined() ? column[i] : zeros_like(outputs[i]));
      }
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      const Shape shape = joined(outputs[i].sizes(), inputs[j].sizes());
      result[i][j] = columns[i].empty() ? zeros(shape, outputs[i].options())
                                        : stack(columns[i], outputs[i].dim()).view(shape);
    }
  }
  return result;
}

// The Jacobian of `outputs` with respect to `inputs` by either strategy, detached unless create_graph.
std::vector<std::vector<Tensor>> full_jacobian(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                                               bool create_graph, bool strict, JacobianStrategy strategy,
                                               const char* op, RowName row_name) {
  std::vector<std::vector<Tensor>> result =
      strategy == JacobianStrategy::reverse_mode
          ? reverse_jacobian(outputs, inputs, create_graph, strict, op, row_name)
          : forward_jacobian(outputs, inputs, create_graph, strict, op, row_name);
  for (std::vector<Tensor>& row : result) row = detached_unless(row, create_graph);
  return result;
}

// d f / d inputs, recorded for differentiating again: what hessian, vhp and hvp start from. In
// strict mode each part must depend on the inputs again (else the second derivatives are zeros).
std::vector<Tensor> first_gradient(const Tensor& out, const std::vector<Tensor>& inputs, bool strict, const char* op) {
  check_outputs({out}, strict, op);
  return zeros_where_unused(gradients({out}, inputs, {}, /*create_graph=*/true), inputs, strict,
                            /*create_graph=*/true, [&](size_t j) {
                              return std::string(op) + ": the gradient with respect to input " + std::to_string(j) +
                                     " is independent of the inputs";
                            });
}

}  // namespace

std::pair<std::vector<Tensor>, std::vector<Tensor>> vjp(const Function& f, const std::vector<Tensor>& inputs,
                                                        const std::vector<Tensor>& v, bool create_graph, bool strict) {
  AutoGradMode enabled(true);
  const std::vector<Tensor> xs = prepare(inputs, create_graph, "vjp");
  const std::vector<Tensor> outputs = call(f, xs, "vjp");
  check_outputs(outputs, strict, "vjp");
  const std::vector<Tensor> weights = vectors(v, outputs, "output", "vjp");
  const std::vector<Tensor> products =
      zeros_where_unused(gradients(outputs, xs, weights, create_graph), xs, strict, create_graph, [](size_t j) {
        return "vjp: the outputs of the function are independent of input " + std::to_string(j);
      });
  return {detached_unless(outputs, create_graph), detached_unless(products, create_graph)};
}

std::pair<Tensor, Tensor> vjp(const TensorFunction& f, const Tensor& input, const Tensor& v, bool create_graph,
                              bool strict) {
  auto [outputs, products] = vjp(of_lists(f), {input}, one_or_none(v), create_graph, strict);
  return {outputs[0], products[0]};
}

std::pair<std::vector<Tensor>, std::vector<Tensor>> jvp(const Function& f, const std::vector<Tensor>& inputs,
                                                        const std::vector<Tensor>& v, bool create_graph, bool strict) {
  AutoGradMode enabled(true);
  const std::vector<Tensor> xs = prepare(inputs, create_graph, "jvp");
  const std::vector<Tensor> directions = vectors(v, xs, "input", "jvp");
  const std::vector<Tensor> outputs = call(f, xs, "jvp");
  check_outputs(outputs, strict, "jvp");
  // transposed[j] = J_j^T u is linear in the dummy u; its gradient along v with respect to u is J v.
  std::vector<Tensor> dummies;
  for (const Tensor& out : outputs) dummies.push_back(zeros_like(out).requires_grad_(true));
  const std::vector<Tensor> transposed = gradients(outputs, xs, dummies, /*create_graph=*/true);
  std::vector<Tensor> used, along;
  for (size_t j = 0; j < xs.size(); ++j) {
    TD_CHECK(!strict || transposed[j].defined(), "jvp: the outputs of the function are independent of input ", j,
             ": not allowed in strict mode");
    if (!transposed[j].defined()) continue;
    used.push_back(transposed[j]);
    along.push_back(directions[j]);
  }
  const std::vector<Tensor> products =
      zeros_where_unused(gradients(used, dummies, along, create_graph), outputs, strict, create_graph, [](size_t i) {
        return "jvp: output " + std::to_string(i) + " of the function is independent of the inputs";
      });
  return {detached_unless(outputs, create_graph), detached_unless(products, create_graph)};
}

std::pair<Tensor, Tensor> jvp(const TensorFunction& f, const Tensor& input, const Tensor& v, bool create_graph,
                              bool strict) {
  auto [outputs, products] = jvp(of_lists(f), {input}, one_or_none(v), create_graph, strict);
  return {outputs[0], products[0]};
}

std::vector<std::vector<Tensor>> jacobian(const Function& f, const std::vector<Tensor>& inputs, bool create_graph,
                                          bool strict, JacobianStrategy strategy) {
  AutoGradMode enabled(true);
  const std::vector<Tensor> xs = prepare(inputs, create_graph, "jacobian");
  const std::vector<Tensor> outputs = call(f, xs, "jacobian");
  check_outputs(outputs, strict, "jacobian");
  return full_jacobian(outputs, xs, create_graph, strict, strategy, "jacobian", output_row);
}

Tensor jacobian(const TensorFunction& f, const Tensor& input, bool create_graph, bool strict,
                JacobianStrategy strategy) {
  return jacobian(of_lists(f), {input}, create_graph, strict, strategy)[0][0];
}

std::vector<std::vector<Tensor>> hessian(const Function& f, const std::vector<Tensor>& inputs, bool create_graph,
                                         bool strict, JacobianStrategy outer_strategy) {
  AutoGradMode enabled(true);
  const std::vector<Tensor> xs = prepare(inputs, create_graph, "hessian");
  const Tensor out = single_output(f, xs, "hessian");
  const std::vector<Tensor> gradient = first_gradient(out, xs, strict, "hessian");
  return full_jacobian(gradient, xs, create_graph, strict, outer_strategy, "hessian", gradient_row);
}

Tensor hessian(const TensorFunction& f, const Tensor& input, bool create_graph, bool strict,
               JacobianStrategy outer_strategy) {
  return hessian(of_lists(f), {input}, create_graph, strict, outer_strategy)[0][0];
}

std::pair<Tensor, std::vector<Tensor>> vhp(const Function& f, const std::vector<Tensor>& inputs,
                                           const std::vector<Tensor>& v, bool create_graph, bool strict) {
  AutoGradMode enabled(true);
  const std::vector<Tensor> xs = prepare(inputs, create_graph, "vhp");
  const std::vector<Tensor> directions = vectors(v, xs, "input", "vhp");
  const Tensor out = single_output(f, xs, "vhp");
  const std::vector<Tensor> gradient = first_gradient(out, xs, strict, "vhp");
  const std::vector<Tensor> products =
      zeros_where_unused(gradients(gradient, xs, directions, create_graph), xs, strict, create_graph, [](size_t j) {
        return "vhp: the gradient of the function is independent of input " + std::to_string(j);
      });
  return {create_graph ? out : out.detach(), detached_unless(products, create_graph)};
}

std::pair<Tensor, Tensor> vhp(const TensorFunction& f, const Tensor& input, const Tensor& v, bool create_graph,
                              bool strict) {
  auto [out, products] = vhp(of_lists(f), {input}, one_or_none(v), create_graph, strict);
  return {out, products[0]};
}

std::pair<Tensor, std::vector<Tensor>> hvp(const Function& f, const std::vector<Tensor>& inputs,
                                           const std::vector<Tensor>& v, bool create_graph, bool strict) {
  AutoGradMode enabled(true);
  const std::vector<Tensor> xs = prepare(inputs, create_graph, "hvp");
  const std::vector<Tensor> directions = vectors(v, xs, "input", "hvp");
  const Tensor out = single_output(f, xs, "hvp");
  const std::vector<Tensor> gradient = first_gradient(out, xs, strict, "hvp");
  // H^T w for a dummy w, then its gradient along v with respect to w: H v.
  std::vector<Tensor> dummies;
  for (const Tensor& x : xs) dummies.push_back(zeros_like(x).requires_grad_(true));
  const std::vector<Tensor> transposed =
      zeros_where_unused(gradients(gradient, xs, dummies, /*create_graph=*/true), xs, strict, /*create_graph=*/false,
                         [](size_t j) {
                           return "hvp: the gradient of the function is independent of input " + std::to_string(j);
                         });
  const std::vector<Tensor> products = zeros_where_unused(
      gradients(transposed, dummies, directions, create_graph), xs, strict, create_graph, [](size_t j) {
        return "hvp: the second derivatives of the function do not involve input " + std::to_string(j);
      });
  return {create_graph ? out : out.detach(), detached_unless(products, create_graph)};
}

std::pair<Tensor, Tensor> hvp(const TensorFunction& f, const Tensor& input, const Tensor& v, bool create_graph,
                              bool strict) {
  auto [out, products] = hvp(of_lists(f), {input}, one_or_none(v), create_graph, strict);
  return {out, products[0]};
}

}  // namespace tandem::autograd::functional
