#include "kernels/linalg.h"

#include "kernels/backend.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/elementwise.h"

namespace tandem::kernels {

namespace {

void check_operands(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(a, op, "input");
  check_defined(b, op, "mat2");
  common_device(op, {&a, &b});
  TD_CHECK(a.dtype() == b.dtype(), op, ": expected both operands to have the same dtype, got ", a.dtype(), " and ",
           b.dtype());
  TD_CHECK(a.dtype() != kBool, op, ": bool matrices are not supported");
}

// out = beta * out + alpha * a @ b on [B, n, k] x [B, k, m] operands. An empty inner dim makes the
// product zero: out = beta * out, which the backends' GEMMs need not handle.
void run_bmm(const Tensor& out, const Tensor& a, const Tensor& b, Scalar beta, Scalar alpha) {
  if (out.numel() == 0) return;
  if (a.sizes()[2] == 0) {
    if (beta.to_double() == 0) return fill_into(out, 0);
    Tensor factor = detail::scalar_tensor(beta, out.dtype(), out.device());
    return out.is_cuda() ? cuda::binary(BinaryOp::Mul, out, out, factor, 1)
                         : cpu::binary(BinaryOp::Mul, out, out, factor, 1);
  }
  out.is_cuda() ? cuda::bmm(out, a, b, beta, alpha) : cpu::bmm(out, a, b, beta, alpha);
}

}  // namespace

Tensor mm(const Tensor& a, const Tensor& b) {
  check_operands("mm", a, b);
  TD_CHECK(a.dim() == 2 && b.dim() == 2, "mm: expected two 2-D matrices, got shapes ", shape_str(a.sizes()), " and ",
           shape_str(b.sizes()));
  TD_CHECK(a.sizes()[1] == b.sizes()[0], "mm: shapes cannot be multiplied (", dims_str(a.sizes()), " and ", dims_str(b.sizes()), ")");
  Tensor out = empty_tensor({a.sizes()[0], b.sizes()[1]}, a.dtype(), a.device());
  run_bmm(unsqueeze(out, 0), unsqueeze(a, 0), unsqueeze(b, 0), 0, 1);
  return out;
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  check_operands("bmm", a, b);
  TD_CHECK(a.dim() == 3 && b.dim() == 3, "bmm: expected two 3-D tensors, got shapes ", shape_str(a.sizes()), " and ",
           shape_str(b.sizes()));
  TD_CHECK(a.sizes()[0] == b.sizes()[0], "bmm: batch sizes differ (", dims_str(a.sizes()), " and ", dims_str(b.sizes()), ")");
  TD_CHECK(a.sizes()[2] == b.sizes()[1], "bmm: shapes cannot be multiplied (", dims_str(a.sizes()), " and ", dims_str(b.sizes()), ")");
  Tensor out = empty_tensor({a.sizes()[0], a.sizes()[1], b.sizes()[2]}, a.dtype(), a.device());
  run_bmm(out, a, b, 0, 1);
  return out;
}

Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b, Scalar beta, Scalar alpha) {
  check_operands("addmm", a, b);
  check_defined(bias, "addmm", "bias");
  common_device("addmm", {&bias, &a});
  TD_CHECK(bias.dtype() == a.dtype(), "addmm: bias has dtype ", bias.dtype(), " but the matrices have ", a.dtype());
  TD_CHECK(a.dim() == 2 && b.dim() == 2, "addmm: expected two 2-D matrices, got shapes ", shape_str(a.sizes()),
           " and ", shape_str(b.sizes()));
  TD_CHECK(a.sizes()[1] == b.sizes()[0], "addmm: shapes cannot be multiplied (", dims_str(a.sizes()), " and ", dims_str(b.sizes()),
           ")");
  Shape shape{a.sizes()[0], b.sizes()[1]};
  Shape expanded = broadcast_shapes(bias.sizes(), shape, "addmm");
  TD_CHECK(expanded == shape, "addmm: bias of shape ", shape_str(bias.sizes()), " does not broadcast to ",
           shape_str(shape));
  Tensor out = empty_tensor(shape, a.dtype(), a.device());
  bool use_bias = beta.to_double() != 0;
  // A Linear layer's form on a GPU: the bias added in the GEMM's epilogue, not in a pass of its own.
  if (out.is_cuda() && beta.to_double() == 1 && alpha.to_double() == 1 &&
      cuda::addmm_bias_epilogue(out, bias, a, b)) {
    return out;
  }
  if (use_bias) copy_into(out, expand(bias, shape));
  run_bmm(unsqueeze(out, 0), unsqueeze(a, 0), unsqueeze(b, 0), use_bias ? beta : Scalar(0), alpha);
  return out;
}

void addmm_out(const Tensor& out, const Tensor& a, const Tensor& b, Scalar beta, Scalar alpha) {
  check_operands("addmm_out", a, b);
  check_defined(out, "addmm_out", "out");
  common_device("addmm_out", {&out, &a});
  TD_CHECK(a.dim() == 2 && b.dim() == 2 && a.sizes()[1] == b.sizes()[0], "addmm_out: expected matrices [n, k] and ",
           "[k, m], got shapes ", shape_str(a.sizes()), " and ", shape_str(b.sizes()));
  TD_CHECK(out.sizes() == Shape({a.sizes()[0], b.sizes()[1]}) && out.dtype() == a.dtype() && out.is_contiguous(),
           "addmm_out: out must be a contiguous [", a.sizes()[0], ", ", b.sizes()[1], "] ", a.dtype(), " matrix, got ",
           shape_str(out.sizes()), " ", out.dtype(), out.is_contiguous() ? "" : " (not contiguous)");
  run_bmm(unsqueeze(out, 0), unsqueeze(a, 0), unsqueeze(b, 0), beta, alpha);
}

}  // namespace tandem::kernels
