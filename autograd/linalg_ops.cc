// Differentiable matrix products. matmul is written with the differentiable mm/bmm and views,
// so its gradient (including the sums over broadcast batch dims) comes from theirs.
#include "autograd/autocast.h"
#include "autograd/ops.h"
#include "autograd/record.h"
#include "kernels/backend.h"
#include "kernels/linalg.h"

namespace tandem {

using autograd::needs_grad;
using autograd::record;
using autograd::sum_to;

namespace {

// Whether m is the transpose of a contiguous matrix, as weight.t() in a linear layer is.
bool is_transposed_contiguous(const Tensor& m) {
  return m.dim() == 2 && m.size(0) > 1 && m.size(1) > 1 && m.stride(0) == 1 && m.stride(1) == m.size(0);
}

// The gradients of a @ b given g, each laid out like its operand: for a transposed operand the
// product is formed transposed (BLAS reads transposed inputs for free), so the gradient reaching
// the contiguous matrix behind it, e.g. a linear layer's weight, needs no transposing copy.
Tensor mm_grad_a(const Tensor& g, const Tensor& b, bool a_transposed) {
  return a_transposed ? t(mm(b, t(g))) : mm(g, t(b));
}

Tensor mm_grad_b(const Tensor& g, const Tensor& a, bool b_transposed) {
  return b_transposed ? t(mm(t(g), a)) : mm(t(a), g);
}

}  // namespace

// mm, bmm and addmm save each operand only for the other's gradient, as PyTorch does: a frozen
// weight does not keep the layer's input alive until backward.
Tensor mm(const Tensor& a, const Tensor& b) {
  if (amp::takes_lower_precision({&a, &b})) {
    amp::SuspendAutocast inside;
    return mm(amp::to_lower_precision(a), amp::to_lower_precision(b));
  }
  Tensor y = kernels::mm(a, b);
  if (!needs_grad({&a, &b})) return y;
  bool need_a = a.requires_grad(), need_b = b.requires_grad();
  SavedTensor sa = SavedTensor::input_if(need_b, a), sb = SavedTensor::input_if(need_a, b);
  bool a_transposed = is_transposed_contiguous(a), b_transposed = is_transposed_contiguous(b);
  record("MmBackward0", {&a, &b}, {&y}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    return {need_a ? mm_grad_a(g[0], sb.unpack("MmBackward0"), a_transposed) : Tensor(),
            need_b ? mm_grad_b(g[0], sa.unpack("MmBackward0"), b_transposed) : Tensor()};
  });
  return y;
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  if (amp::takes_lower_precision({&a, &b})) {
    amp::SuspendAutocast inside;
    return bmm(amp::to_lower_precision(a), amp::to_lower_precision(b));
  }
  Tensor y = kernels::bmm(a, b);
  if (!needs_grad({&a, &b})) return y;
  bool need_a = a.requires_grad(), need_b = b.requires_grad();
  SavedTensor sa = SavedTensor::input_if(need_b, a), sb = SavedTensor::input_if(need_a, b);
  record("BmmBackward0", {&a, &b}, {&y}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    return {need_a ? bmm(g[0], transpose(sb.unpack("BmmBackward0"), 1, 2)) : Tensor(),
            need_b ? bmm(transpose(sa.unpack("BmmBackward0"), 1, 2), g[0]) : Tensor()};
  });
  return y;
}

Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b, Scalar beta, Scalar alpha) {
  if (amp::takes_lower_precision({&bias, &a, &b})) {
    amp::SuspendAutocast inside;
    return addmm(amp::to_lower_precision(bias), amp::to_lower_precision(a), amp::to_lower_precision(b), beta, alpha);
  }
  Tensor y = kernels::addmm(bias, a, b, beta, alpha);
  if (!needs_grad({&bias, &a, &b})) return y;
  bool need_bias = bias.requires_grad(), need_a = a.requires_grad(), need_b = b.requires_grad();
  SavedTensor sa = SavedTensor::input_if(need_b, a), sb = SavedTensor::input_if(need_a, b);
  bool a_transposed = is_transposed_contiguous(a), b_transposed = is_transposed_contiguous(b);
  Shape bias_shape = bias.sizes();
  double be = beta.to_double(), al = alpha.to_double();
  record("AddmmBackward0", {&bias, &a, &b}, {&y}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    Tensor ga = need_a ? mm_grad_a(g[0], sb.unpack("AddmmBackward0"), a_transposed) : Tensor();
    Tensor gb = need_b ? mm_grad_b(g[0], sa.unpack("AddmmBackward0"), b_transposed) : Tensor();
    Tensor gbias = need_bias ? sum_to(be == 1 ? g[0] : g[0] * be, bias_shape) : Tensor();
    return {gbias, ga.defined() && al != 1 ? ga * al : ga, gb.defined() && al != 1 ? gb * al : gb};
  });
  return y;
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  if (amp::takes_lower_precision({&a, &b})) {
    amp::SuspendAutocast inside;
    return matmul(amp::to_lower_precision(a), amp::to_lower_precision(b));
  }
  kernels::check_defined(a, "matmul", "input");
  kernels::check_defined(b, "matmul", "other");
  kernels::common_device("matmul", {&a, &b});
  TD_CHECK(a.dtype() == b.dtype(), "matmul: expected both operands to have the same dtype, got ", a.dtype(), " and ",
           b.dtype());
  TD_CHECK(a.dtype() != kBool, "matmul: bool matrices are not supported");
  const int64_t da = a.dim(), db = b.dim();
  TD_CHECK(da > 0 && db > 0, "matmul: both arguments need at least 1 dimension, got shapes ", shape_str(a.sizes()),
           " and ", shape_str(b.sizes()));
  const int64_t k = a.sizes()[da - 1], k2 = b.sizes()[db == 1 ? 0 : db - 2];
  TD_CHECK(k == k2, "matmul: shapes cannot be multiplied (", dims_str(a.sizes()), " and ", dims_str(b.sizes()), ")");
  if (da == 1 && db == 1) return reshape(mm(unsqueeze(a, 0), unsqueeze(b, 1)), {});
  if (da == 2 && db == 1) return squeeze(mm(a, unsqueeze(b, 1)), 1);
  if (da == 1 && db == 2) return squeeze(mm(unsqueeze(a, 0), b), 0);
  if (da == 2 && db == 2) return mm(a, b);
  if (da >= 3 && db <= 2) {  // [..., n, k] @ [k, m]: fold the batch into rows, one GEMM
    Tensor b2 = db == 1 ? unsqueeze(b, 1) : b;
    Shape out_shape(a.sizes().begin(), a.sizes().end() - 1);
    const int64_t rows = numel_of(out_shape);  // given, not inferred: -1 cannot be where k is 0
    if (db == 2) out_shape.push_back(b.sizes()[1]);
    return reshape(mm(reshape(a, {rows, k}), b2), out_shape);
  }
  // Batched: 1-D operands gain a dim that is dropped again, batch dims broadcast.
  Tensor a3 = da == 1 ? unsqueeze(a, 0) : a;
  Tensor b3 = db == 1 ? unsqueeze(b, 1) : b;
  const int64_t n = a3.sizes()[a3.dim() - 2], m = b3.sizes()[b3.dim() - 1];
  Shape batch = broadcast_shapes(Shape(a3.sizes().begin(), a3.sizes().end() - 2),
                                 Shape(b3.sizes().begin(), b3.sizes().end() - 2), "matmul");
  Shape ea = batch, eb = batch;
  ea.insert(ea.end(), {n, k});
  eb.insert(eb.end(), {k, m});
  const int64_t count = numel_of(batch);
  Tensor out = bmm(reshape(expand(a3, ea), {count, n, k}), reshape(expand(b3, eb), {count, k, m}));
  Shape out_shape = batch;
  if (da > 1) out_shape.push_back(n);
  if (db > 1) out_shape.push_back(m);
  return reshape(out, out_shape);
}

}  // namespace tandem
