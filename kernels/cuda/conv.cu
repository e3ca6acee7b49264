// 2-D convolution on CUDA devices through cuDNN: forward, and the gradients of the input and of the
// weight, for contiguous NCHW tensors of one floating dtype, with groups. It uses cuDNN's
// descriptor API (kept in cuDNN 9 beside the graph API): cuDNN's heuristics rank the algorithms for
// a problem, the first deterministic one that runs with a workspace the allocator can give is
// taken, and that choice is remembered per problem. float32 runs in TF32 only when the user allows it (set_allow_tf32), as
// the GEMMs do; float16/bfloat16 accumulate in float32.
#include <cudnn.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/storage.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"

namespace tandem::kernels::cuda {

namespace {

// A failed call may leave a CUDA error of its own behind, which the next launch check would blame
// on an innocent kernel: it is cleared.
#define TD_CUDNN_CHECK(call, ...)                                                                     \
  do {                                                                                                \
    cudnnStatus_t td_status_ = (call);                                                                \
    if (td_status_ != CUDNN_STATUS_SUCCESS) (void)cudaGetLastError();                                 \
    TD_CHECK(td_status_ == CUDNN_STATUS_SUCCESS, __VA_ARGS__, ": cuDNN error ",                      \
             cudnnGetErrorString(td_status_), " in " #call);                                          \
  } while (0)

// One handle per logical device and thread (a handle must not be used by two threads at once);
// handles live as long as the process, as cuBLAS's do (cuda/blas.cu).
cudnnHandle_t handle_for(Device device, const char* op) {
  thread_local std::vector<cudnnHandle_t> handles;
  const int d = device.index();
  if (static_cast<int>(handles.size()) <= d) handles.resize(d + 1, nullptr);
  if (!handles[d]) {
    tandem::cuda::DeviceGuard guard(d);
    TD_CUDNN_CHECK(cudnnCreate(&handles[d]), op, " on ", device, ": creating the cuDNN handle");
  }
  TD_CUDNN_CHECK(cudnnSetStream(handles[d], stream_of(device)), op, " on ", device);
  return handles[d];
}

cudnnDataType_t data_type(DType t) {
  switch (t) {
    case kFloat64: return CUDNN_DATA_DOUBLE;
    case kFloat16: return CUDNN_DATA_HALF;
    case kBFloat16: return CUDNN_DATA_BFLOAT16;
    default: return CUDNN_DATA_FLOAT;
  }
}

int as_int(int64_t v) { return static_cast<int>(v); }

// The descriptors of one problem: input x [N, C, H, W], weight [O, C / groups, kh, kw], output y.
class Problem {
 public:
  Problem(const Shape& x, const Shape& w, const Shape& y, DType dtype, const Pool2d& p, int64_t groups,
          const char* op, Device device)
      : op_(op), device_(device) {
    try {
      describe(x, w, y, dtype, p, groups);
    } catch (...) {
      destroy();  // the destructor does not run for a constructor that throws
      throw;
    }
  }
  ~Problem() { destroy(); }
  Problem(const Problem&) = delete;
  Problem& operator=(const Problem&) = delete;

  void describe(const Shape& x, const Shape& w, const Shape& y, DType dtype, const Pool2d& p, int64_t groups) {
    const cudnnDataType_t type = data_type(dtype);
    check(cudnnCreateTensorDescriptor(&x_));
    check(cudnnCreateTensorDescriptor(&y_));
    check(cudnnCreateFilterDescriptor(&w_));
    check(cudnnCreateConvolutionDescriptor(&conv_));
    check(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, type, as_int(x[0]), as_int(x[1]), as_int(x[2]),
                                     as_int(x[3])));
    check(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, type, as_int(y[0]), as_int(y[1]), as_int(y[2]),
                                     as_int(y[3])));
    check(cudnnSetFilter4dDescriptor(w_, type, CUDNN_TENSOR_NCHW, as_int(w[0]), as_int(w[1]), as_int(w[2]),
                                     as_int(w[3])));
    check(cudnnSetConvolution2dDescriptor(conv_, as_int(p.ph), as_int(p.pw), as_int(p.sh), as_int(p.sw),
                                          as_int(p.dh), as_int(p.dw), CUDNN_CROSS_CORRELATION,
                                          dtype == kFloat64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT));
    check(cudnnSetConvolutionGroupCount(conv_, as_int(groups)));
    math_ = math_type(dtype);
    restore_math();
    float_scalars_ = dtype != kFloat64;
  }

  void destroy() {
    if (conv_) cudnnDestroyConvolutionDescriptor(conv_);
    if (w_) cudnnDestroyFilterDescriptor(w_);
    if (y_) cudnnDestroyTensorDescriptor(y_);
    if (x_) cudnnDestroyTensorDescriptor(x_);
    conv_ = nullptr, w_ = nullptr, y_ = nullptr, x_ = nullptr;
  }

  void check(cudnnStatus_t status) const {
    TD_CHECK(status == CUDNN_STATUS_SUCCESS, op_, " on ", device_, ": cuDNN error ", cudnnGetErrorString(status));
  }

  // The problem's own math type, which cuDNN's heuristics rank for (a try may have set another).
  void restore_math() const { check(cudnnSetConvolutionMathType(conv_, math_)); }

  // Tensor cores for 16-bit data; for float32 only with TF32 allowed (FMA math keeps full precision).
  static cudnnMathType_t math_type(DType dtype) {
    if (is_16bit_float(dtype)) return CUDNN_TENSOR_OP_MATH;
    if (dtype == kFloat32) return tandem::cuda::allow_tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
    return CUDNN_DEFAULT_MATH;
  }

  // alpha = 1, beta = 0 in the scalar type cuDNN reads (float but for double problems).
  const void* one() const { return float_scalars_ ? static_cast<const void*>(&one_f_) : &one_d_; }
  const void* zero() const { return float_scalars_ ? static_cast<const void*>(&zero_f_) : &zero_d_; }

  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;

 private:
  const char* op_;
  Device device_;
  cudnnMathType_t math_ = CUDNN_DEFAULT_MATH;
  bool float_scalars_ = true;
  float one_f_ = 1, zero_f_ = 0;
  double one_d_ = 1, zero_d_ = 0;
};

// A problem as a key: the pass, device, dtype, TF32, shapes, geometry, and the operands' alignment
// (some algorithms need 16-byte aligned data, which a view at an offset may not have).
using Key = std::tuple<int, int, int, bool, Shape, Shape, Shape, std::vector<int64_t>>;

enum Pass { kForward, kInputGradient, kWeightGradient };

Key key_of(Pass pass, const Tensor& x, const Tensor& w, const Tensor& y, const Pool2d& p, int64_t groups) {
  auto alignment = [](const Tensor& t) { return static_cast<int64_t>(reinterpret_cast<uintptr_t>(t.data_ptr()) % 16); };
  return {pass, x.device().index(), static_cast<int>(x.dtype()), tandem::cuda::allow_tf32(), x.sizes(), w.sizes(),
          y.sizes(), {p.kh, p.kw, p.sh, p.sw, p.ph, p.pw, p.dh, p.dw, groups, alignment(x), alignment(w), alignment(y)}};
}

// The algorithm, math type and workspace remembered for each problem.
struct Choice {
  int algo;
  cudnnMathType_t math;
  size_t workspace;
};
std::mutex choices_mutex;
std::map<Key, Choice> choices;

// Runs run(algo, workspace, bytes) -> cudnnStatus_t for the problem: with the algorithm remembered
// for `key`, or else (or if that one fails now, e.g. no memory for its workspace) with each
// candidate of rank() in turn, cuDNN's heuristics' order, until one gets its workspace and runs;
// that one is remembered. Only deterministic algorithms are taken (a seed gives the same training
// on a GPU as it does on the CPU), and for float32 without TF32 only those in FMA math.
template <typename Rank, typename Run>
void run_convolution(const Key& key, const Problem& problem, bool fma_only, const Rank& rank, const Run& run,
                     Device device, const char* op) {
  // The status of one try, or the error that stopped it (no memory for the workspace).
  auto attempt = [&](const Choice& c, std::string* failure) {
    try {
      problem.check(cudnnSetConvolutionMathType(problem.conv_, c.math));
      // Freed on return, after the convolution is queued: the allocator orders reuse on the stream.
      Storage workspace = c.workspace > 0 ? Storage::allocate(c.workspace, device) : Storage();
      const cudnnStatus_t status = run(c.algo, c.workspace > 0 ? workspace.data() : nullptr, c.workspace);
      if (status == CUDNN_STATUS_SUCCESS) return true;
      *failure = cudnnGetErrorString(status);
    } catch (const Error& e) {
      *failure = e.what();
    }
    (void)cudaGetLastError();  // a failed try leaves no error for the next launch check to find
    return false;
  };
  std::optional<Choice> known;
  {
    std::lock_guard lock(choices_mutex);
    if (auto it = choices.find(key); it != choices.end()) known = it->second;
  }
  std::string failure, tried;
  if (known && attempt(*known, &failure)) return;
  problem.restore_math();
  for (const auto& perf : rank()) {
    if (perf.status != CUDNN_STATUS_SUCCESS || perf.determinism != CUDNN_DETERMINISTIC) continue;
    if (fma_only && perf.mathType != CUDNN_FMA_MATH) continue;
    const Choice c{static_cast<int>(perf.algo), perf.mathType, perf.memory};
    if (attempt(c, &failure)) {
      std::lock_guard lock(choices_mutex);
      choices[key] = c;
      return;
    }
    tried += (tried.empty() ? "" : "; ") + ("algorithm " + std::to_string(c.algo) + ": " + failure);
  }
  TD_CHECK(false, op, " on ", device, ": no deterministic cuDNN algorithm ran (",
           tried.empty() ? "none offered" : tried, ")");
}

// float32 without TF32: only FMA-math algorithms, whatever the heuristics rank first.
bool exact_float32(DType dtype) { return dtype == kFloat32 && !tandem::cuda::allow_tf32(); }

// cuDNN's ranking of the algorithms for a problem, through its _v7 query for that pass.
template <typename Perf, typename Query>
std::vector<Perf> ranked(const Problem& problem, int count, const Query& query) {
  std::vector<Perf> perf(static_cast<size_t>(count));
  int returned = 0;
  problem.check(query(count, &returned, perf.data()));
  perf.resize(static_cast<size_t>(returned));
  return perf;
}

}  // namespace

bool cudnn_available() { return true; }

void conv2d(const Tensor& out, const Tensor& x, const Tensor& w, const Pool2d& p, int64_t groups) {
  const char* op = "conv2d";
  const Device device = x.device();
  tandem::cuda::DeviceGuard guard(device.index());
  const Problem problem(x.sizes(), w.sizes(), out.sizes(), x.dtype(), p, groups, op, device);
  cudnnHandle_t handle = handle_for(device, op);
  auto rank = [&] {
    int count = 0;
    problem.check(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &count));
    return ranked<cudnnConvolutionFwdAlgoPerf_t>(problem, count, [&](int n, int* returned, auto* perf) {
      return cudnnGetConvolutionForwardAlgorithm_v7(handle, problem.x_, problem.w_, problem.conv_, problem.y_, n,
                                                    returned, perf);
    });
  };
  run_convolution(key_of(kForward, x, w, out, p, groups), problem, exact_float32(x.dtype()), rank,
                  [&](int algo, void* workspace, size_t bytes) {
                    return cudnnConvolutionForward(handle, problem.one(), problem.x_, x.data_ptr(), problem.w_,
                                                   w.data_ptr(), problem.conv_,
                                                   static_cast<cudnnConvolutionFwdAlgo_t>(algo), workspace, bytes,
                                                   problem.zero(), problem.y_, out.data_ptr());
                  },
                  device, op);
}

void conv2d_backward_input(const Tensor& grad_x, const Tensor& grad, const Tensor& w, const Pool2d& p,
                           int64_t groups) {
  const char* op = "conv2d_backward_input";
  const Device device = grad.device();
  tandem::cuda::DeviceGuard guard(device.index());
  const Problem problem(grad_x.sizes(), w.sizes(), grad.sizes(), grad.dtype(), p, groups, op, device);
  cudnnHandle_t handle = handle_for(device, op);
  auto rank = [&] {
    int count = 0;
    problem.check(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle, &count));
    return ranked<cudnnConvolutionBwdDataAlgoPerf_t>(problem, count, [&](int n, int* returned, auto* perf) {
      return cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, problem.w_, problem.y_, problem.conv_, problem.x_, n,
                                                         returned, perf);
    });
  };
  run_convolution(key_of(kInputGradient, grad_x, w, grad, p, groups), problem, exact_float32(grad.dtype()), rank,
                  [&](int algo, void* workspace, size_t bytes) {
                    return cudnnConvolutionBackwardData(handle, problem.one(), problem.w_, w.data_ptr(), problem.y_,
                                                        grad.data_ptr(), problem.conv_,
                                                        static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), workspace,
                                                        bytes, problem.zero(), problem.x_, grad_x.data_ptr());
                  },
                  device, op);
}

void conv2d_backward_weight(const Tensor& grad_w, const Tensor& grad, const Tensor& x, const Pool2d& p,
                            int64_t groups) {
  const char* op = "conv2d_backward_weight";
  const Device device = grad.device();
  tandem::cuda::DeviceGuard guard(device.index());
  const Problem problem(x.sizes(), grad_w.sizes(), grad.sizes(), grad.dtype(), p, groups, op, device);
  cudnnHandle_t handle = handle_for(device, op);
  auto rank = [&] {
    int count = 0;
    problem.check(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle, &count));
    return ranked<cudnnConvolutionBwdFilterAlgoPerf_t>(problem, count, [&](int n, int* returned, auto* perf) {
      return cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, problem.x_, problem.y_, problem.conv_, problem.w_,
                                                           n, returned, perf);
    });
  };
  run_convolution(key_of(kWeightGradient, x, grad_w, grad, p, groups), problem, exact_float32(grad.dtype()), rank,
                  [&](int algo, void* workspace, size_t bytes) {
                    return cudnnConvolutionBackwardFilter(handle, problem.one(), problem.x_, x.data_ptr(), problem.y_,
                                                          grad.data_ptr(), problem.conv_,
                                                          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), workspace,
                                                          bytes, problem.zero(), problem.w_, grad_w.data_ptr());
                  },
                  device, op);
}

}  // namespace tandem::kernels::cuda
