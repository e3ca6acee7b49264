// CUDA matrix products: cuBLAS strided-batched GEMM for the floating dtypes (float16/bfloat16
// with float32 accumulation; float32 in TF32 only when the user allows it, as PyTorch's
// allow_tf32), and a plain kernel for integers. A Linear layer's addmm (a bias row, beta = alpha
// = 1) goes to cuBLASLt, which adds the bias in the GEMM's epilogue instead of a pass of its own.
// tandem's matrices are row-major and cuBLAS's column-major, so out = a @ b is computed as
// out^T = b^T @ a^T: the operands swap places and each is read in place, transposed or not,
// when its strides allow.
#include <cublasLt.h>
#include <cublas_v2.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "core/allocator.h"
#include "core/convert.h"
#include "core/dispatch.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/functors.h"
#include "kernels/gemm_operand.h"
#include "kernels/views.h"
#include "kernels/cuda/handles.cuh"
#include "kernels/cuda/launch.cuh"

namespace tandem::kernels::cuda {

namespace {

// The cuBLAS element and compute types of a floating dtype: float16 and bfloat16 compute in
// float32, and float32 in TF32 only where the user allowed it. Other dtypes have none.
struct CublasTypes {
  cudaDataType_t element;
  cublasComputeType_t compute;
};
std::optional<CublasTypes> cublas_types(DType dtype) {
  switch (dtype) {
    case kFloat32:
      return CublasTypes{CUDA_R_32F, tandem::cuda::allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F};
    case kFloat64: return CublasTypes{CUDA_R_64F, CUBLAS_COMPUTE_64F};
    case kFloat16: return CublasTypes{CUDA_R_16F, CUBLAS_COMPUTE_32F};
    case kBFloat16: return CublasTypes{CUDA_R_16BF, CUBLAS_COMPUTE_32F};
    default: return std::nullopt;
  }
}

void cublas_bmm(const Tensor& out, const Tensor& a_in, const Tensor& b_in, Scalar beta, Scalar alpha) {
  const int64_t batch = out.sizes()[0], n = out.sizes()[1], m = out.sizes()[2], k = a_in.sizes()[2];
  const Device device = out.device();
  GemmOperand la{}, lb{};
  Tensor a = gemm_ready(a_in, la), b = gemm_ready(b_in, lb);
  const cublasOperation_t op_a = la.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = lb.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const std::optional<CublasTypes> types = cublas_types(out.dtype());
  TD_CHECK(types, "matmul on ", device, ": no cuBLAS path for dtype ", out.dtype());
  const cudaDataType_t type = types->element;
  const cublasComputeType_t compute = types->compute;
  const double alpha64 = alpha.to_double(), beta64 = beta.to_double();
  const float alpha32 = static_cast<float>(alpha64), beta32 = static_cast<float>(beta64);
  const void* alpha_ptr = out.dtype() == kFloat64 ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta_ptr = out.dtype() == kFloat64 ? static_cast<const void*>(&beta64) : &beta32;
  TD_CHECK(std::max({n, m, k, la.ld, lb.ld}) <= INT32_MAX && batch <= INT32_MAX, "matmul on ", device,
           ": a dimension beyond 2^31 - 1 is not supported by cuBLAS (out [", batch, ", ", n, ", ", m, "], k ", k, ")");
  tandem::cuda::DeviceGuard guard(device.index());
  // out^T (m x n, column-major, ld m) = op(b as column-major) @ op(a as column-major)
  TD_CUBLAS_CHECK(cublasGemmStridedBatchedEx(cublas_handle(device), op_b, op_a, static_cast<int>(m),
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
      acc = fn::sum(acc, fn::product(a[bi * g.sa0 + i * g.sa1 + p * g.sa2], b[bi * g.sb0 + p * g.sb1 + j * g.sb2]));
    }
    c[e] = fn::sum(beta == 0 ? T(0) : fn::product(beta, c[e]), fn::product(alpha, acc));
  }
}

// ---- cuBLASLt: the bias epilogue ----

cublasLtHandle_t lt_handle_for(Device device) {
  return per_thread_and_device<cublasLtHandle_t>(device, [&] {
    cublasLtHandle_t h = nullptr;
    TD_CUBLAS_CHECK(cublasLtCreate(&h), "addmm on ", device, ": creating the cuBLASLt handle");
    return h;
  });
}

// The descriptors of one cuBLASLt product, destroyed with it.
struct LtProblem {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  LtProblem() = default;
  LtProblem(const LtProblem&) = delete;
  LtProblem& operator=(const LtProblem&) = delete;
  ~LtProblem() {
    if (preference) cublasLtMatmulPreferenceDestroy(preference);
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

// The most workspace a product may use: Hopper's kernels want more than earlier GPUs'.
uint64_t lt_workspace_limit(Device device) {
  return per_thread_and_device<uint64_t>(device, [&] {
    int major = 0;
    TD_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
                                         tandem::cuda::physical_device(device.index())),
                  "addmm on ", device);
    return major >= 9 ? (uint64_t{32} << 20) : (uint64_t{4} << 20);
  });
}

template <typename T>
bool lt_set(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const T& value) {
  return cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof(value)) == CUBLAS_STATUS_SUCCESS;
}

std::atomic<int64_t> lt_addmm_calls{0};

// This thread's cuBLAS workspace for work on `stream` of the device. With the workspace pool
// cublasSetStream gives a handle, products on streams that run at once may be computed by other
// kernels than on one stream alone, so their bits would depend on what else runs; with a
// workspace of its own per stream they do not (cuBLAS's reproducibility rule). One is made on
// first use and kept as the handles are (cuBLAS may still use it when the thread ends). Without
// memory for one, even after the pools' caches are given back, none: the handle keeps the pool.
struct Workspace {
  void* data = nullptr;
  size_t bytes = 0;
};
std::optional<Workspace> stream_workspace(Device device, cudaStream_t stream) {
  thread_local std::map<std::pair<int, cudaStream_t>, Workspace> workspaces;
  const auto key = std::make_pair(device.index(), stream);
  if (auto it = workspaces.find(key); it != workspaces.end()) return it->second;
  Workspace w;
  w.bytes = lt_workspace_limit(device);
  tandem::cuda::DeviceGuard guard(device.index());
  cudaError_t err = cudaMalloc(&w.data, w.bytes);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // leaves no error behind for the next launch
    tandem::empty_cache(kCUDA);  // the pools may hold what is missing
    err = cudaMalloc(&w.data, w.bytes);
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      return std::nullopt;  // tried again next time
    }
  }
  TD_CUDA_CHECK(err, "matmul on ", device, ": allocating the cuBLAS workspace");
  workspaces.emplace(key, w);
  return w;
}

}  // namespace

cublasHandle_t cublas_handle(Device device) {
  cublasHandle_t handle = per_thread_and_device<cublasHandle_t>(device, [&] {
    cublasHandle_t h = nullptr;
    TD_CUBLAS_CHECK(cublasCreate(&h), "matmul on ", device, ": creating the cuBLAS handle");
    // float16/bfloat16 products accumulate in float32 throughout, as on the CPU: cuBLAS would
    // otherwise be free to add split-K partial sums in 16 bits.
    TD_CUBLAS_CHECK(cublasSetMathMode(h, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH |
                                                                   CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
                    "matmul on ", device, ": setting the cuBLAS math mode");
    return h;
  });
  const cudaStream_t stream = stream_of(device);
  TD_CUBLAS_CHECK(cublasSetStream(handle, stream), "matmul on ", device);
  if (const std::optional<Workspace> workspace = stream_workspace(device, stream)) {
    TD_CUBLAS_CHECK(cublasSetWorkspace(handle, workspace->data, workspace->bytes), "matmul on ", device,
                    ": setting the cuBLAS workspace");
  }
  return handle;
}

bool addmm_bias_epilogue(const Tensor& out, const Tensor& bias, const Tensor& a_in, const Tensor& b_in) {
  const int64_t n = out.sizes()[0], m = out.sizes()[1], k = a_in.sizes()[1];
  const DType dtype = out.dtype();
  if (dtype != kFloat32 && dtype != kFloat16 && dtype != kBFloat16) return false;
  // A matrix with one row or column is left to cuBLAS, as PyTorch does: cuBLASLt's heuristics
  // have turned such problems down.
  if (n <= 1 || m <= 1 || k <= 1) return false;
  // One value per column of out, packed: [m] or [1, m] with unit stride, 16-byte aligned (some
  // epilogue kernels assume it).
  if (bias.dim() < 1 || bias.dim() > 2 || bias.numel() != m || bias.sizes().back() != m ||
      bias.strides().back() != 1 || reinterpret_cast<uintptr_t>(bias.data_ptr()) % 16 != 0) {
    return false;
  }
  const Device device = out.device();
  GemmOperand la{}, lb{};
  Tensor a = gemm_ready(unsqueeze(a_in, 0), la), b = gemm_ready(unsqueeze(b_in, 0), lb);
  const CublasTypes types = *cublas_types(dtype);  // float32, float16 or bfloat16 (checked above)
  const cudaDataType_t type = types.element;
  const cublasComputeType_t compute = types.compute;
  // The attributes' documented types: int32_t for the operations, uint32_t for the epilogue.
  const int32_t op_a = la.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int32_t op_b = lb.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const uint32_t epilogue = CUBLASLT_EPILOGUE_BIAS;
  const void* bias_ptr = bias.data_ptr();
  tandem::cuda::DeviceGuard guard(device.index());
  // As in cublas_bmm: D = out^T (m x n, column-major) = op(b) @ op(a), each described as stored;
  // the bias runs along D's m rows.
  LtProblem p;
  const bool described =
      cublasLtMatmulDescCreate(&p.desc, compute, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS &&
      lt_set(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, op_b) && lt_set(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, op_a) &&
      lt_set(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue) &&
      lt_set(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias_ptr) &&
      cublasLtMatrixLayoutCreate(&p.a, type, lb.transposed ? k : m, lb.transposed ? m : k, lb.ld) ==
          CUBLAS_STATUS_SUCCESS &&
      cublasLtMatrixLayoutCreate(&p.b, type, la.transposed ? n : k, la.transposed ? k : n, la.ld) ==
          CUBLAS_STATUS_SUCCESS &&
      cublasLtMatrixLayoutCreate(&p.d, type, m, n, m) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulPreferenceCreate(&p.preference) == CUBLAS_STATUS_SUCCESS;
  if (!described) return false;
  const uint64_t workspace_bytes = lt_workspace_limit(device);
  // The heuristics assume 256-byte aligned operands unless told otherwise (views may start
  // anywhere); so views at other offsets may take another kernel and differ in the last bits.
  auto alignment = [](const void* ptr) {
    uint32_t bytes = 256;
    while (bytes > 1 && reinterpret_cast<uintptr_t>(ptr) % bytes != 0) bytes /= 2;
    return bytes;
  };
  const uint32_t align_a = alignment(b.data_ptr()), align_b = alignment(a.data_ptr()), align_d = alignment(out.data_ptr());
  auto prefer = [&](cublasLtMatmulPreferenceAttributes_t attribute, const auto& value) {
    return cublasLtMatmulPreferenceSetAttribute(p.preference, attribute, &value, sizeof(value)) == CUBLAS_STATUS_SUCCESS;
  };
  // Split-K partial sums in float32 (or none), never in a 16-bit output type; see cublas_handle.
  const uint32_t reductions = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  if (!prefer(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, workspace_bytes) ||
      !prefer(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, reductions) ||
      !prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_a) ||
      !prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_b) ||
      !prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_d) ||
      !prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_d)) {
    return false;
  }
  cublasLtHandle_t handle = lt_handle_for(device);
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  if (cublasLtMatmulAlgoGetHeuristic(handle, p.desc, p.a, p.b, p.d, p.d, p.preference, 1, &heuristic, &found) !=
          CUBLAS_STATUS_SUCCESS ||
      found == 0 || heuristic.state != CUBLAS_STATUS_SUCCESS) {
    return false;
  }
  // From the caching allocator, back there once the product is queued (reuse is ordered on the stream).
  Storage workspace;
  try {
    if (heuristic.workspaceSize > 0) workspace = Storage::allocate(heuristic.workspaceSize, device);
  } catch (const Error&) {
    return false;  // no memory for the workspace: cuBLAS does without
  }
  const float one = 1, zero = 0;
  const cublasStatus_t status =
      cublasLtMatmul(handle, p.desc, &one, b.data_ptr(), p.a, a.data_ptr(), p.b, &zero, out.data_ptr(), p.d,
                     out.data_ptr(), p.d, &heuristic.algo, heuristic.workspaceSize > 0 ? workspace.data() : nullptr,
                     heuristic.workspaceSize, stream_of(device));
  if (status == CUBLAS_STATUS_NOT_SUPPORTED) return false;
  TD_CUBLAS_CHECK(status, "addmm on ", device, " (out [", n, ", ", m, "], k ", k, ", dtype ", dtype, ", cuBLASLt)");
  lt_addmm_calls.fetch_add(1, std::memory_order_relaxed);
  return true;
}

int64_t addmm_bias_epilogue_count() { return lt_addmm_calls.load(); }

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
