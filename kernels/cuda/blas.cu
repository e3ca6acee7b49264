// CUDA matrix products: cuBLAS strided-batched GEMM for the floating dtypes (float16/bfloat16
// with float32 accumulation; float32 in TF32 only when the user allows it, as PyTorch's
// allow_tf32), and a plain kernel for integers. tandem's matrices are row-major and cuBLAS's
// column-major, so out = a @ b is computed as out^T = b^T @ a^T: the operands swap places and
// each is read in place, transposed or not, when its strides allow.
#include <cublas_v2.h>

#include <algorithm>
#include <vector>

#include "core/convert.h"
#include "core/dispatch.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/gemm_operand.h"
#include "kernels/cuda/launch.cuh"

namespace tandem::kernels::cuda {

namespace {

#define TD_CUBLAS_CHECK(call, ...)                                                                        \
  do {                                                                                                    \
    cublasStatus_t td_status_ = (call);                                                                   \
    TD_CHECK(td_status_ == CUBLAS_STATUS_SUCCESS, __VA_ARGS__, ": cuBLAS error ", cublasGetStatusName(td_status_), \
             " (", cublasGetStatusString(td_status_), ") in " #call);                                     \
  } while (0)

// One handle per logical device and thread (a handle must not be used by two threads at once);
// handles live as long as the process, as the device threads of DataParallel do.
cublasHandle_t handle_for(Device device) {
  thread_local std::vector<cublasHandle_t> handles;
  const int d = device.index();
  if (static_cast<int>(handles.size()) <= d) handles.resize(d + 1, nullptr);
  if (!handles[d]) {
    tandem::cuda::DeviceGuard guard(d);
    TD_CUBLAS_CHECK(cublasCreate(&handles[d]), "matmul on ", device, ": creating the cuBLAS handle");
  }
  TD_CUBLAS_CHECK(cublasSetStream(handles[d], stream_of(device)), "matmul on ", device);
  return handles[d];
}

void cublas_bmm(const Tensor& out, const Tensor& a_in, const Tensor& b_in, Scalar beta, Scalar alpha) {
  const int64_t batch = out.sizes()[0], n = out.sizes()[1], m = out.sizes()[2], k = a_in.sizes()[2];
  const Device device = out.device();
  GemmOperand la{}, lb{};
  Tensor a = gemm_ready(a_in, la), b = gemm_ready(b_in, lb);
  const cublasOperation_t op_a = la.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = lb.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  cudaDataType_t type = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  switch (out.dtype()) {
    case kFloat32: compute = tandem::cuda::allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F; break;
    case kFloat64: type = CUDA_R_64F; compute = CUBLAS_COMPUTE_64F; break;
    case kFloat16: type = CUDA_R_16F; break;
    case kBFloat16: type = CUDA_R_16BF; break;
    default: TD_FAIL("matmul on ", device, ": no cuBLAS path for dtype ", out.dtype());
  }
  const double alpha64 = alpha.to_double(), beta64 = beta.to_double();
  const float alpha32 = static_cast<float>(alpha64), beta32 = static_cast<float>(beta64);
  const void* alpha_ptr = out.dtype() == kFloat64 ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta_ptr = out.dtype() == kFloat64 ? static_cast<const void*>(&beta64) : &beta32;
  TD_CHECK(std::max({n, m, k, la.ld, lb.ld}) <= INT32_MAX && batch <= INT32_MAX, "matmul on ", device,
           ": a dimension beyond 2^31 - 1 is not supported by cuBLAS (out [", batch, ", ", n, ", ", m, "], k ", k, ")");
  tandem::cuda::DeviceGuard guard(device.index());
  // out^T (m x n, column-major, ld m) = op(b as column-major) @ op(a as column-major)
  TD_CUBLAS_CHECK(cublasGemmStridedBatchedEx(handle_for(device), op_b, op_a, static_cast<int>(m),
                                             static_cast<int>(n), static_cast<int>(k), alpha_ptr, b.data_ptr(), type,
                                             static_cast<int>(lb.ld), b.strides()[0], a.data_ptr(), type,
                                             static_cast<int>(la.ld), a.strides()[0], beta_ptr, out.data_ptr(), type,
                                             static_cast<int>(std::max<int64_t>(1, m)), n * m,
                                             static_cast<int>(batch), compute, CUBLAS_GEMM_DEFAULT),
                  "matmul on ", device, " (out [", batch, ", ", n, ", ", m, "], k ", k, ", dtype ", out.dtype(), ")");
}

struct IntGemm {
  int64_t batch, n, m, k;
  int64_t sa0, sa1, sa2, sb0, sb1, sb2;
};

template <typename T>
__global__ void int_bmm_kernel(T* c, const T* a, const T* b, IntGemm g, T beta, T alpha) {
  TD_GRID_STRIDE(e, g.batch * g.n * g.m) {
    const int64_t j = e % g.m, i = (e / g.m) % g.n, bi = e / (g.n * g.m);
    T acc = 0;
    for (int64_t p = 0; p < g.k; ++p) {
      acc = static_cast<T>(acc + a[bi * g.sa0 + i * g.sa1 + p * g.sa2] * b[bi * g.sb0 + p * g.sb1 + j * g.sb2]);
    }
    c[e] = static_cast<T>((beta == 0 ? T(0) : static_cast<T>(beta * c[e])) + alpha * acc);
  }
}

}  // namespace

void bmm(const Tensor& out, const Tensor& a, const Tensor& b, Scalar beta, Scalar alpha) {
  if (is_floating(out.dtype())) return cublas_bmm(out, a, b, beta, alpha);
  const IntGemm g{out.sizes()[0], out.sizes()[1], out.sizes()[2], a.sizes()[2], a.strides()[0], a.strides()[1],
                  a.strides()[2], b.strides()[0], b.strides()[1], b.strides()[2]};
  dispatch_types<int64_t, int32_t, uint8_t>(out.dtype(), "bmm", [&]<typename T>() {
    launch("bmm", out.device(), out.numel(), int_bmm_kernel<T>, static_cast<T*>(out.data_ptr()),
           static_cast<const T*>(a.data_ptr()), static_cast<const T*>(b.data_ptr()), g, beta.to<T>(), alpha.to<T>());
  });
}

}  // namespace tandem::kernels::cuda
