// GPU factorizations: cuSOLVER's dense routines (LU, Cholesky, QR, the symmetric eigensolver,
// SVD) and cuBLAS's triangular solve, one call per matrix of the batch on the device's current
// stream. The matrices arrive column-major (see cuda_ops.h), as both libraries read them; info
// stays on the device until the caller reads it.
#include <cusolverDn.h>

#include <algorithm>
#include <cstdint>

#include "core/dispatch.h"
#include "kernels/backend.h"
#include "kernels/column_major.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/handles.cuh"
#include "kernels/cuda/launch.cuh"

namespace tandem::kernels::cuda {

namespace {

#define TD_CUSOLVER_CHECK(call, ...)                                                                                \
  do {                                                                                                              \
    cusolverStatus_t td_status_ = (call);                                                                           \
    if (td_status_ != CUSOLVER_STATUS_SUCCESS) (void)cudaGetLastError();                                            \
    TD_CHECK(td_status_ == CUSOLVER_STATUS_SUCCESS, __VA_ARGS__, ": cuSOLVER error ", static_cast<int>(td_status_), \
             " in " #call);                                                                                         \
  } while (0)

// This thread's cuSOLVER handle for the device, bound to its current stream.
cusolverDnHandle_t solver_handle(Device device, const char* op) {
  cusolverDnHandle_t handle = per_thread_and_device<cusolverDnHandle_t>(device, [&] {
    cusolverDnHandle_t h = nullptr;
    TD_CUSOLVER_CHECK(cusolverDnCreate(&h), op, " on ", device, ": creating the cuSOLVER handle");
    return h;
  });
  TD_CUSOLVER_CHECK(cusolverDnSetStream(handle, stream_of(device)), op, " on ", device);
  return handle;
}

// The float and double routine of each name.
template <typename T>
struct Solver;

template <>
struct Solver<float> {
  static constexpr auto getrf_size = cusolverDnSgetrf_bufferSize;
  static constexpr auto getrf = cusolverDnSgetrf;
  static constexpr auto getrs = cusolverDnSgetrs;
  static constexpr auto potrf_size = cusolverDnSpotrf_bufferSize;
  static constexpr auto potrf = cusolverDnSpotrf;
  static constexpr auto geqrf_size = cusolverDnSgeqrf_bufferSize;
  static constexpr auto geqrf = cusolverDnSgeqrf;
  static constexpr auto orgqr_size = cusolverDnSorgqr_bufferSize;
  static constexpr auto orgqr = cusolverDnSorgqr;
  static constexpr auto syevd_size = cusolverDnSsyevd_bufferSize;
  static constexpr auto syevd = cusolverDnSsyevd;
  static constexpr auto gesvd_size = cusolverDnSgesvd_bufferSize;
  static constexpr auto gesvd = cusolverDnSgesvd;
  static constexpr auto trsm = cublasStrsm;
};

template <>
struct Solver<double> {
  static constexpr auto getrf_size = cusolverDnDgetrf_bufferSize;
  static constexpr auto getrf = cusolverDnDgetrf;
  static constexpr auto getrs = cusolverDnDgetrs;
  static constexpr auto potrf_size = cusolverDnDpotrf_bufferSize;
  static constexpr auto potrf = cusolverDnDpotrf;
  static constexpr auto geqrf_size = cusolverDnDgeqrf_bufferSize;
  static constexpr auto geqrf = cusolverDnDgeqrf;
  static constexpr auto orgqr_size = cusolverDnDorgqr_bufferSize;
  static constexpr auto orgqr = cusolverDnDorgqr;
  static constexpr auto syevd_size = cusolverDnDsyevd_bufferSize;
  static constexpr auto syevd = cusolverDnDsyevd;
  static constexpr auto gesvd_size = cusolverDnDgesvd_bufferSize;
  static constexpr auto gesvd = cusolverDnDgesvd;
  static constexpr auto trsm = cublasDtrsm;
};

// Device scratch of n elements of T, from the caching allocator (freed with the tensor, after the
// stream's work that uses it: the allocator orders reuse on the stream).
template <typename T>
Tensor scratch(int64_t n, Device device) {
  return empty_tensor({std::max<int64_t>(1, n)}, dtype_of<T>, device);
}

}  // namespace

void lu_factor(const Tensor& a, const Tensor& pivots, const Tensor& info) {
  const ColumnMajorBatch m = ColumnMajorBatch::of(a, "lu_factor", "cuSOLVER");
  const Device device = a.device();
  tandem::cuda::DeviceGuard guard(device.index());
  dispatch_types<float, double>(a.dtype(), "lu_factor", [&]<typename T>() {
    cusolverDnHandle_t handle = solver_handle(device, "lu_factor");
    int lwork = 0;
    TD_CUSOLVER_CHECK(Solver<T>::getrf_size(handle, m.rows, m.cols, matrix_at<T>(a, 0), leading_dim(m.rows), &lwork),
                      "lu_factor on ", device);
    Tensor work = scratch<T>(lwork, device);
    for (int64_t b = 0; b < m.batch; ++b) {
      TD_CUSOLVER_CHECK(
          Solver<T>::getrf(handle, m.rows, m.cols, matrix_at<T>(a, b), leading_dim(m.rows), work.data_ptr<T>(),
                           pivots.data_ptr<int32_t>() + b * pivots.sizes()[1], info.data_ptr<int32_t>() + b),
          "lu_factor on ", device);
    }
  });
}

void lu_solve(const Tensor& lu, const Tensor& pivots, const Tensor& b, bool transposed) {
  const ColumnMajorBatch m = ColumnMajorBatch::of(lu, "lu_solve", "cuSOLVER"),
                         rhs = ColumnMajorBatch::of(b, "lu_solve", "cuSOLVER");
  const Device device = lu.device();
  tandem::cuda::DeviceGuard guard(device.index());
  dispatch_types<float, double>(lu.dtype(), "lu_solve", [&]<typename T>() {
    cusolverDnHandle_t handle = solver_handle(device, "lu_solve");
    Tensor info = scratch<int32_t>(1, device);
    for (int64_t i = 0; i < m.batch; ++i) {
      TD_CUSOLVER_CHECK(
          Solver<T>::getrs(handle, transposed ? CUBLAS_OP_T : CUBLAS_OP_N, m.rows, rhs.cols, matrix_at<T>(lu, i),
                           leading_dim(m.rows), pivots.data_ptr<int32_t>() + i * pivots.sizes()[1], matrix_at<T>(b, i),
                           leading_dim(rhs.rows), info.data_ptr<int32_t>()),
          "lu_solve on ", device);
    }
  });
}

void cholesky(const Tensor& a, const Tensor& info) {
  const ColumnMajorBatch m = ColumnMajorBatch::of(a, "cholesky", "cuSOLVER");
  const Device device = a.device();
  tandem::cuda::DeviceGuard guard(device.index());
  dispatch_types<float, double>(a.dtype(), "cholesky", [&]<typename T>() {
    cusolverDnHandle_t handle = solver_handle(device, "cholesky");
    int lwork = 0;
    TD_CUSOLVER_CHECK(
        Solver<T>::potrf_size(handle, CUBLAS_FILL_MODE_LOWER, m.rows, matrix_at<T>(a, 0), leading_dim(m.rows), &lwork),
        "cholesky on ", device);
    Tensor work = scratch<T>(lwork, device);
    for (int64_t b = 0; b < m.batch; ++b) {
      TD_CUSOLVER_CHECK(Solver<T>::potrf(handle, CUBLAS_FILL_MODE_LOWER, m.rows, matrix_at<T>(a, b),
                                         leading_dim(m.rows), work.data_ptr<T>(), lwork, info.data_ptr<int32_t>() + b),
                        "cholesky on ", device);
    }
  });
}

void triangular_solve(const Tensor& a, const Tensor& b, bool lower, bool left, bool transposed, bool unit) {
  const ColumnMajorBatch m = ColumnMajorBatch::of(a, "solve_triangular", "cuBLAS"),
                         rhs = ColumnMajorBatch::of(b, "solve_triangular", "cuBLAS");
  const Device device = a.device();
  tandem::cuda::DeviceGuard guard(device.index());
  dispatch_types<float, double>(a.dtype(), "solve_triangular", [&]<typename T>() {
    cublasHandle_t handle = cublas_handle(device);
    const T one = 1;
    for (int64_t i = 0; i < m.batch; ++i) {
      TD_CUBLAS_CHECK(
          Solver<T>::trsm(handle, left ? CUBLAS_SIDE_LEFT : CUBLAS_SIDE_RIGHT,
                          lower ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER,
                          transposed ? CUBLAS_OP_T : CUBLAS_OP_N, unit ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT,
                          rhs.rows, rhs.cols, &one, matrix_at<T>(a, i), leading_dim(m.rows), matrix_at<T>(b, i),
                          leading_dim(rhs.rows)),
          "solve_triangular on ", device);
    }
  });
}

void qr(const Tensor& a, const Tensor& tau) {
  const ColumnMajorBatch m = ColumnMajorBatch::of(a, "qr", "cuSOLVER");
  const int64_t k = tau.sizes()[1];
  const Device device = a.device();
  tandem::cuda::DeviceGuard guard(device.index());
  dispatch_types<float, double>(a.dtype(), "qr", [&]<typename T>() {
    cusolverDnHandle_t handle = solver_handle(device, "qr");
    int lwork = 0;
    TD_CUSOLVER_CHECK(Solver<T>::geqrf_size(handle, m.rows, m.cols, matrix_at<T>(a, 0), leading_dim(m.rows), &lwork),
                      "qr on ", device);
    Tensor work = scratch<T>(lwork, device), info = scratch<int32_t>(1, device);
    for (int64_t b = 0; b < m.batch; ++b) {
      TD_CUSOLVER_CHECK(
          Solver<T>::geqrf(handle, m.rows, m.cols, matrix_at<T>(a, b), leading_dim(m.rows), tau.data_ptr<T>() + b * k,
                           work.data_ptr<T>(), lwork, info.data_ptr<int32_t>()),
          "qr on ", device);
    }
  });
}

void qr_q(const Tensor& q, const Tensor& tau) {
  const ColumnMajorBatch m = ColumnMajorBatch::of(q, "qr", "cuSOLVER");
  const int k = static_cast<int>(tau.sizes()[1]);
  const Device device = q.device();
  tandem::cuda::DeviceGuard guard(device.index());
  dispatch_types<float, double>(q.dtype(), "qr", [&]<typename T>() {
    cusolverDnHandle_t handle = solver_handle(device, "qr");
    int lwork = 0;
    TD_CUSOLVER_CHECK(Solver<T>::orgqr_size(handle, m.rows, m.cols, k, matrix_at<T>(q, 0), leading_dim(m.rows),
                                            tau.data_ptr<T>(), &lwork),
                      "qr on ", device);
    Tensor work = scratch<T>(lwork, device), info = scratch<int32_t>(1, device);
    for (int64_t b = 0; b < m.batch; ++b) {
      TD_CUSOLVER_CHECK(
          Solver<T>::orgqr(handle, m.rows, m.cols, k, matrix_at<T>(q, b), leading_dim(m.rows),
                           tau.data_ptr<T>() + b * k, work.data_ptr<T>(), lwork, info.data_ptr<int32_t>()),
          "qr on ", device);
    }
  });
}

void eigh(const Tensor& a, const Tensor& w, const Tensor& info, bool vectors) {
  const ColumnMajorBatch m = ColumnMajorBatch::of(a, "eigh", "cuSOLVER");
  const Device device = a.device();
  const cusolverEigMode_t mode = vectors ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
  tandem::cuda::DeviceGuard guard(device.index());
  dispatch_types<float, double>(a.dtype(), "eigh", [&]<typename T>() {
    cusolverDnHandle_t handle = solver_handle(device, "eigh");
    int lwork = 0;
    TD_CUSOLVER_CHECK(Solver<T>::syevd_size(handle, mode, CUBLAS_FILL_MODE_LOWER, m.rows, matrix_at<T>(a, 0),
                                            leading_dim(m.rows), w.data_ptr<T>(), &lwork),
                      "eigh on ", device);
    Tensor work = scratch<T>(lwork, device);
    for (int64_t b = 0; b < m.batch; ++b) {
      TD_CUSOLVER_CHECK(
          Solver<T>::syevd(handle, mode, CUBLAS_FILL_MODE_LOWER, m.rows, matrix_at<T>(a, b), leading_dim(m.rows),
                           w.data_ptr<T>() + b * m.rows, work.data_ptr<T>(), lwork, info.data_ptr<int32_t>() + b),
          "eigh on ", device);
    }
  });
}

void svd(const Tensor& a, const Tensor& s, const Tensor& u, const Tensor& vt, const Tensor& info) {
  const ColumnMajorBatch m = ColumnMajorBatch::of(a, "svd", "cuSOLVER");
  const Device device = a.device();
  const bool vectors = u.defined();
  const signed char jobu = !vectors ? 'N' : (u.sizes()[1] == m.rows ? 'A' : 'S');
  const signed char jobvt = vectors ? 'A' : 'N';
  const int k = std::min(m.rows, m.cols);
  tandem::cuda::DeviceGuard guard(device.index());
  dispatch_types<float, double>(a.dtype(), "svd", [&]<typename T>() {
    cusolverDnHandle_t handle = solver_handle(device, "svd");
    int lwork = 0;
    TD_CUSOLVER_CHECK(Solver<T>::gesvd_size(handle, m.rows, m.cols, &lwork), "svd on ", device);
    Tensor work = scratch<T>(lwork, device), rwork = scratch<T>(k, device);
    for (int64_t b = 0; b < m.batch; ++b) {
      TD_CUSOLVER_CHECK(
          Solver<T>::gesvd(handle, jobu, jobvt, m.rows, m.cols, matrix_at<T>(a, b), leading_dim(m.rows),
                           s.data_ptr<T>() + b * k, vectors ? matrix_at<T>(u, b) : nullptr, leading_dim(m.rows),
                           vectors ? matrix_at<T>(vt, b) : nullptr, leading_dim(m.cols), work.data_ptr<T>(), lwork,
                           rwork.data_ptr<T>(), info.data_ptr<int32_t>() + b),
          "svd on ", device);
    }
  });
}

}  // namespace tandem::kernels::cuda
