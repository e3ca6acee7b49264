// CPU matrix products: OpenBLAS sgemm/dgemm for float32/float64 (operands whose layout BLAS can
// read are passed in place, transposed or not), float16/bfloat16 through float32 GEMM, and a
// plain loop for integers.
#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

#include "core/convert.h"
#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "kernels/copy.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/functors.h"
#include "kernels/gemm_operand.h"
#include "kernels/views.h"

namespace tandem::kernels::cpu {

namespace {

// One BLAS call on the calling thread.
template <typename T>
void blas_call(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t n, int64_t m, int64_t k, T alpha, const T* a,
               int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, ta, tb, n, m, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else {
    cblas_dgemm(CblasRowMajor, ta, tb, n, m, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
}

// OpenBLAS keeps threads of its own that spin (sched_yield) while they wait for work; beside our
// pool they fight for the same cores, and every elementwise op after a GEMM paid for it. So BLAS
// runs single-threaded, and parallel_gemm splits the product across our pool instead. Even then
// OpenBLAS's idle threads go on spinning; blas_thread_shutdown_ (the routine OpenBLAS runs before
// a fork) ends them, and single-threaded calls never start them again. Declared weak: a BLAS
// without it only keeps its idle threads.
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

// OpenBLAS picks its kernels by the CPU's family and model. Debian 12's (0.3.21) does not know
// CPUs newer than itself, a 5th-generation Xeon (family 6, model 207) among them, and falls back
// to its Prescott (SSE3) kernels: sgemm 512 took 7.45 ms there against PyTorch's 1.06 ms, and
// 1.07 ms with the Cooperlake kernels the CPU's AVX-512 runs. So where the user has not chosen
// (OPENBLAS_CORETYPE) and OpenBLAS fell back, the kernels are chosen by the CPU's instructions,
// through the two routines a DYNAMIC_ARCH OpenBLAS selects its kernels with (weak: any other BLAS
// keeps its own choice). This runs as the program loads, before main: setenv may not run beside
// another thread's getenv, and OpenBLAS has no kernels between the two routines.
extern "C" void gotoblas_dynamic_init(void) __attribute__((weak));
extern "C" void gotoblas_dynamic_quit(void) __attribute__((weak));

const char* kernels_for_instructions() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512bf16")) return "Cooperlake";
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq")) {
    return "SkylakeX";
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return nullptr;
}

void choose_kernels_where_openblas_fell_back() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr || gotoblas_dynamic_init == nullptr ||
      gotoblas_dynamic_quit == nullptr || std::string(openblas_get_corename()) != "Prescott") {
    return;
  }
  const char* kernels = kernels_for_instructions();
  if (kernels == nullptr) return;
  // The routines read the choice from the environment only; it is taken back at once.
  setenv("OPENBLAS_CORETYPE", kernels, 1);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  unsetenv("OPENBLAS_CORETYPE");
}

[[maybe_unused]] const bool kernels_chosen = (choose_kernels_where_openblas_fell_back(), true);

void prepare_blas() {
  static const bool once = [] {
    openblas_set_num_threads(1);
    if (blas_thread_shutdown_ != nullptr) blas_thread_shutdown_();
    return true;
  }();
  (void)once;
}

// c = alpha * op(a) @ op(b) + beta * c with c split into one band of rows (or of columns, when
// it is wide) per thread, one single-threaded GEMM per band. Bands start at whole multiples of
// 16, BLAS's register blocking, each within 8 of an equal split. One band per thread beats
// many narrow ones: each GEMM call packs the whole of the other operand again, and 7 bands of 64
// on 2 threads ran 4 against 3 (a convolution's weight gradient, [32, 12544] x [12544, 400]:
// 2.34 ms in bands of 64, 1.82 ms in two bands). Small products stay in one call.
template <typename T>
void parallel_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t n, int64_t m, int64_t k, T alpha, const T* a,
                   int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  // The BLAS takes its sizes as 32-bit ints: a larger one would arrive cut, and be refused.
  constexpr int64_t kMaxBlas = std::numeric_limits<int>::max();
  TD_CHECK(std::max({n, m, k, lda, ldb, ldc}) <= kMaxBlas, "matmul: a product of [", n, ", ", k, "] by [", k, ", ",
           m, "] (leading dims ", lda, ", ", ldb, ", ", ldc,
           ") has a size over 2^31 - 1, more than the CPU BLAS takes");
  prepare_blas();
  constexpr int64_t kAlign = 16, kMinFlopsPerBand = int64_t{1} << 18;
  const bool split_rows = n >= m;
  const int64_t extent = split_rows ? n : m;
  const int64_t bands =
      std::min<int64_t>({num_threads(), (extent + kAlign - 1) / kAlign, n * m * k / kMinFlopsPerBand});
  if (in_parallel_region() || bands < 2) {
    blas_call<T>(ta, tb, n, m, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  // Band i starts at i * extent / bands rounded to the nearest multiple of 16.
  auto start = [&](int64_t band) {
    return band == bands ? extent : (band * extent / bands + kAlign / 2) / kAlign * kAlign;
  };
  parallel_for(0, bands, 1, [&](int64_t first, int64_t last) {
    for (int64_t band = first; band < last; ++band) {
      const int64_t begin = start(band), len = std::min(extent, start(band + 1)) - begin;
      if (len <= 0) continue;
      if (split_rows) {  // rows of op(a) and of c
        const T* a_rows = ta == CblasNoTrans ? a + begin * lda : a + begin;
        blas_call<T>(ta, tb, len, m, k, alpha, a_rows, lda, b, ldb, beta, c + begin * ldc, ldc);
      } else {  // columns of op(b) and of c
        const T* b_cols = tb == CblasNoTrans ? b + begin : b + begin * ldb;
        blas_call<T>(ta, tb, n, len, k, alpha, a, lda, b_cols, ldb, beta, c + begin, ldc);
      }
    }
  });
}

template <typename T>
void blas_bmm(const Tensor& out, const Tensor& a_in, const Tensor& b_in, T beta, T alpha) {
  const int64_t batch = out.sizes()[0], n = out.sizes()[1], m = out.sizes()[2], k = a_in.sizes()[2];
  GemmOperand la{}, lb{};
  Tensor a = gemm_ready(a_in, la), b = gemm_ready(b_in, lb);
  const CBLAS_TRANSPOSE ta = la.transposed ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = lb.transposed ? CblasTrans : CblasNoTrans;
  const T* pa = static_cast<const T*>(a.data_ptr());
  const T* pb = static_cast<const T*>(b.data_ptr());
  T* pc = static_cast<T*>(out.data_ptr());
  const int64_t ldc = std::max<int64_t>(1, m);
  auto one = [&](int64_t i) {
    parallel_gemm<T>(ta, tb, n, m, k, alpha, pa + i * a.strides()[0], la.ld, pb + i * b.strides()[0],
                     lb.ld, beta, pc + i * n * m, ldc);
  };
  if (batch >= num_threads() && !in_parallel_region()) {
    prepare_blas();
    // Many small products: one per task (inside the pool parallel_gemm stays single-threaded).
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 18) / std::max<int64_t>(1, n * m * k));
    parallel_for(0, batch, grain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) one(i);
    });
  } else {
    for (int64_t i = 0; i < batch; ++i) one(i);
  }
}

// Integers: out = beta * out + alpha * a @ b, one output row per task.
template <typename T>
void loop_bmm(const Tensor& out, const Tensor& a, const Tensor& b, T beta, T alpha) {
  const int64_t batch = out.sizes()[0], n = out.sizes()[1], m = out.sizes()[2], k = a.sizes()[2];
  const T* pa = static_cast<const T*>(a.data_ptr());
  const T* pb = static_cast<const T*>(b.data_ptr());
  T* pc = static_cast<T*>(out.data_ptr());
  const auto& sa = a.strides();
  const auto& sb = b.strides();
  parallel_for(0, batch * n, 16, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t bi = row / n, i = row % n;
      for (int64_t j = 0; j < m; ++j) {
        T acc = 0;
        for (int64_t p = 0; p < k; ++p) {
          acc = fn::sum(acc, fn::product(pa[bi * sa[0] + i * sa[1] + p * sa[2]], pb[bi * sb[0] + p * sb[1] + j * sb[2]]));
        }
        T& c = pc[(bi * n + i) * m + j];
        c = fn::sum(beta == 0 ? T(0) : fn::product(beta, c), fn::product(alpha, acc));
      }
    }
  });
}

// A fresh contiguous tensor holding t's values as dtype.
Tensor converted(const Tensor& t, DType dtype) {
  Tensor c = Tensor::make(Storage::allocate(t.numel() * element_size(dtype), t.device()), t.sizes(),
                          contiguous_strides(t.sizes()), 0, dtype);
  copy(c, t);
  return c;
}

}  // namespace

template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t n, int64_t m, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc) {
  parallel_gemm<T>(trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, n, m, k, alpha, a, lda,
                   b, ldb, beta, c, ldc);
}

template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                          float, float*, int64_t);
template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t, const double*,
                           int64_t, double, double*, int64_t);

void bmm(const Tensor& out, const Tensor& a, const Tensor& b, Scalar beta, Scalar alpha) {
  switch (out.dtype()) {
    case kFloat32: return blas_bmm<float>(out, a, b, beta.to<float>(), alpha.to<float>());
    case kFloat64: return blas_bmm<double>(out, a, b, beta.to<double>(), alpha.to<double>());
    case kFloat16:
    case kBFloat16: {
      // float32 GEMM on converted copies, rounded once at the end.
      Tensor out32 = converted(out, kFloat32);
      blas_bmm<float>(out32, converted(a, kFloat32), converted(b, kFloat32), beta.to<float>(), alpha.to<float>());
      copy(out, out32);
      return;
    }
    default:
      dispatch_types<int64_t, int32_t, uint8_t>(out.dtype(), "bmm", [&]<typename T>() {
        loop_bmm<T>(out, a, b, beta.to<T>(), alpha.to<T>());
      });
  }
}

std::string blas_description() {
  prepare_blas();
  std::string config = openblas_get_config();  // "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..."
  std::string name = config.substr(0, config.find(' ', config.find(' ') + 1));
  return name + ", " + openblas_get_corename() + " kernels";
}

}  // namespace tandem::kernels::cpu
