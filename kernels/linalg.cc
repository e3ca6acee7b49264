#include "kernels/linalg.h"

#include "kernels/backend.h"
#include "kernels/cpu/cpu_ops.h"

namespace tandem {

namespace {

void check_operands(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(a, op, "input");
  check_defined(b, op, "mat2");
  common_device(op, {&a, &b});
  TD_CHECK(a.dtype() == b.dtype(), op, ": expected both operands to have the same dtype, got ", a.dtype(), " and ",
           b.dtype());
  TD_CHECK(a.dtype() != kBool, op, ": bool matrices are not supported");
}

// out = beta * out + alpha * a @ b on [B, n, k] x [B, k, m] operands.
void run_bmm(const Tensor& out, const Tensor& a, const Tensor& b, Scalar beta, Scalar alpha) {
  switch (out.device().type()) {
    case kCPU: return cpu::bmm(out, a, b, beta, alpha);
    case kCUDA: break;
  }
  unsupported_device("matmul", out.device());
}

std::string dims_str(const Tensor& t) {
  std::string s;
  for (int64_t i = 0; i < t.dim(); ++i) {
    if (i > 0) s += 'x';  // not `"x" + std::to_string(...)`: GCC 12 at -O3 flags that as -Wrestrict
    s += std::to_string(t.sizes()[i]);
  }
  return s;
}

}  // namespace

Tensor mm(const Tensor& a, const Tensor& b) {
  check_operands("mm", a, b);
  TD_CHECK(a.dim() == 2 && b.dim() == 2, "mm: expected two 2-D matrices, got shapes ", shape_str(a.sizes()), " and ",
           shape_str(b.sizes()));
  TD_CHECK(a.sizes()[1] == b.sizes()[0], "mm: shapes cannot be multiplied (", dims_str(a), " and ", dims_str(b), ")");
  Tensor out = empty_tensor({a.sizes()[0], b.sizes()[1]}, a.dtype(), a.device());
  run_bmm(out.unsqueeze(0), a.unsqueeze(0), b.unsqueeze(0), 0, 1);
  return out;
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  check_operands("bmm", a, b);
  TD_CHECK(a.dim() == 3 && b.dim() == 3, "bmm: expected two 3-D tensors, got shapes ", shape_str(a.sizes()), " and ",
           shape_str(b.sizes()));
  TD_CHECK(a.sizes()[0] == b.sizes()[0], "bmm: batch sizes differ (", dims_str(a), " and ", dims_str(b), ")");
  TD_CHECK(a.sizes()[2] == b.sizes()[1], "bmm: shapes cannot be multiplied (", dims_str(a), " and ", dims_str(b), ")");
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
  TD_CHECK(a.sizes()[1] == b.sizes()[0], "addmm: shapes cannot be multiplied (", dims_str(a), " and ", dims_str(b),
           ")");
  Shape shape{a.sizes()[0], b.sizes()[1]};
  Shape expanded = broadcast_shapes(bias.sizes(), shape, "addmm");
  TD_CHECK(expanded == shape, "addmm: bias of shape ", shape_str(bias.sizes()), " does not broadcast to ",
           shape_str(shape));
  Tensor out = empty_tensor(shape, a.dtype(), a.device());
  bool use_bias = beta.to_double() != 0;
  if (use_bias) out.copy_(bias.expand(shape));
  run_bmm(out.unsqueeze(0), a.unsqueeze(0), b.unsqueeze(0), use_bias ? beta : Scalar(0), alpha);
  return out;
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_operands("matmul", a, b);
  const int64_t da = a.dim(), db = b.dim();
  TD_CHECK(da > 0 && db > 0, "matmul: both arguments need at least 1 dimension, got shapes ", shape_str(a.sizes()),
           " and ", shape_str(b.sizes()));
  if (da == 1 && db == 1) {
    TD_CHECK(a.sizes()[0] == b.sizes()[0], "matmul: vectors of sizes ", a.sizes()[0], " and ", b.sizes()[0],
             " cannot be multiplied");
    return mm(a.unsqueeze(0), b.unsqueeze(1)).view({});
  }
  if (da == 2 && db == 1) return mm(a, b.unsqueeze(1)).squeeze(1);
  if (da == 1 && db == 2) return mm(a.unsqueeze(0), b).squeeze(0);
  if (da == 2 && db == 2) return mm(a, b);
  if (da >= 3 && db <= 2) {
    // [..., n, k] @ [k, m]: fold the batch into rows, one GEMM.
    Tensor b2 = db == 1 ? b.unsqueeze(1) : b;
    TD_CHECK(a.sizes()[da - 1] == b2.sizes()[0], "matmul: shapes cannot be multiplied (", dims_str(a), " and ",
             dims_str(b), ")");
    Shape out_shape(a.sizes().begin(), a.sizes().end() - 1);
    if (db == 2) out_shape.push_back(b.sizes()[1]);
    return mm(a.reshape({-1, a.sizes()[da - 1]}), b2).view(out_shape);
  }
  // Batched: 1-D operands gain a dim that is dropped again, batch dims broadcast.
  Tensor a3 = da == 1 ? a.unsqueeze(0) : a;
  Tensor b3 = db == 1 ? b.unsqueeze(1) : b;
  const int64_t n = a3.sizes()[a3.dim() - 2], k = a3.sizes()[a3.dim() - 1];
  const int64_t k2 = b3.sizes()[b3.dim() - 2], m = b3.sizes()[b3.dim() - 1];
  TD_CHECK(k == k2, "matmul: shapes cannot be multiplied (", dims_str(a), " and ", dims_str(b), ")");
  Shape batch_a(a3.sizes().begin(), a3.sizes().end() - 2), batch_b(b3.sizes().begin(), b3.sizes().end() - 2);
  Shape batch = broadcast_shapes(batch_a, batch_b, "matmul");
  int64_t batch_count = numel_of(batch);
  Shape ea = batch, eb = batch;
  ea.insert(ea.end(), {n, k});
  eb.insert(eb.end(), {k, m});
  Tensor out = bmm(a3.expand(ea).reshape({batch_count, n, k}), b3.expand(eb).reshape({batch_count, k, m}));
  Shape out_shape = batch;
  if (da > 1) out_shape.push_back(n);
  if (db > 1) out_shape.push_back(m);
  return out.view(out_shape);
}

}  // namespace tandem
