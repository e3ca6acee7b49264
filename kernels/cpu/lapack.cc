// CPU factorizations: LAPACK's routines (OpenBLAS ships them) and BLAS's triangular solve, one
// matrix of the batch at a time on the calling thread. Matrices arrive column-major (see
// cpu_ops.h), as LAPACK reads them, so nothing is transposed here.
#include <cblas.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/dispatch.h"
#include "kernels/column_major.h"
#include "kernels/cpu/cpu_ops.h"

// LAPACK's Fortran entry points; each character argument adds its length at the end (gfortran's
// convention), passed as 1.
extern "C" {
void sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void sgetrs_(const char* trans, const int* n, const int* nrhs, const float* a, const int* lda, const int* ipiv,
             float* b, const int* ldb, int* info, size_t);
void dgetrs_(const char* trans, const int* n, const int* nrhs, const double* a, const int* lda, const int* ipiv,
             double* b, const int* ldb, int* info, size_t);
void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info, size_t);
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info, size_t);
void sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work, const int* lwork,
             int* info);
void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work, const int* lwork,
             int* info);
void sorgqr_(const int* m, const int* n, const int* k, float* a, const int* lda, const float* tau, float* work,
             const int* lwork, int* info);
void dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau, double* work,
             const int* lwork, int* info);
void ssyevd_(const char* jobz, const char* uplo, const int* n, float* a, const int* lda, float* w, float* work,
             const int* lwork, int* iwork, const int* liwork, int* info, size_t, size_t);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w, double* work,
             const int* lwork, int* iwork, const int* liwork, int* info, size_t, size_t);
void sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s, float* u, const int* ldu,
             float* vt, const int* ldvt, float* work, const int* lwork, int* iwork, int* info, size_t);
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s, double* u,
             const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork, int* iwork, int* info,
             size_t);
}

namespace tandem::kernels::cpu {

namespace {

// The float and double routine of each name.
template <typename T>
struct Lapack;

template <>
struct Lapack<float> {
  static constexpr auto getrf = sgetrf_;
  static constexpr auto getrs = sgetrs_;
  static constexpr auto potrf = spotrf_;
  static constexpr auto geqrf = sgeqrf_;
  static constexpr auto orgqr = sorgqr_;
  static constexpr auto syevd = ssyevd_;
  static constexpr auto gesdd = sgesdd_;
  static constexpr auto trsm = cblas_strsm;
};

template <>
struct Lapack<double> {
  static constexpr auto getrf = dgetrf_;
  static constexpr auto getrs = dgetrs_;
  static constexpr auto potrf = dpotrf_;
  static constexpr auto geqrf = dgeqrf_;
  static constexpr auto orgqr = dorgqr_;
  static constexpr auto syevd = dsyevd_;
  static constexpr auto gesdd = dgesdd_;
  static constexpr auto trsm = cblas_dtrsm;
};

// The work array a routine asked for in its size query (lwork = -1).
template <typename T>
int work_size(T query) {
  return std::max(1, static_cast<int>(query));
}

}  // namespace

void lu_factor(const Tensor& a, const Tensor& pivots, const Tensor& info) {
  const ColumnMajorBatch m = ColumnMajorBatch::of(a, "lu_factor", "LAPACK");
  dispatch_types<float, double>(a.dtype(), "lu_factor", [&]<typename T>() {
    for (int64_t b = 0; b < m.batch; ++b) {
      Lapack<T>::getrf(&m.rows, &m.cols, matrix_at<T>(a, b), &m.rows,
                       pivots.data_ptr<int32_t>() + b * pivots.sizes()[1], info.data_ptr<int32_t>() + b);
    }
  });
}

void lu_solve(const Tensor& lu, const Tensor& pivots, const Tensor& b, bool transposed) {
  const ColumnMajorBatch m = ColumnMajorBatch::of(lu, "lu_solve", "LAPACK"),
                         rhs = ColumnMajorBatch::of(b, "lu_solve", "LAPACK");
  const char trans = transposed ? 'T' : 'N';
  dispatch_types<float, double>(lu.dtype(), "lu_solve", [&]<typename T>() {
    for (int64_t i = 0; i < m.batch; ++i) {
      int info = 0;
      Lapack<T>::getrs(&trans, &m.rows, &rhs.cols, matrix_at<T>(lu, i), &m.rows,
                       pivots.data_ptr<int32_t>() + i * pivots.sizes()[1], matrix_at<T>(b, i), &rhs.rows, &info, 1);
    }
  });
}

void cholesky(const Tensor& a, const Tensor& info) {
  const ColumnMajorBatch m = ColumnMajorBatch::of(a, "cholesky", "LAPACK");
  dispatch_types<float, double>(a.dtype(), "cholesky", [&]<typename T>() {
    for (int64_t b = 0; b < m.batch; ++b) {
      Lapack<T>::potrf("L", &m.rows, matrix_at<T>(a, b), &m.rows, info.data_ptr<int32_t>() + b, 1);
    }
  });
}

void triangular_solve(const Tensor& a, const Tensor& b, bool lower, bool left, bool transposed, bool unit) {
  const ColumnMajorBatch m = ColumnMajorBatch::of(a, "solve_triangular", "BLAS"),
                         rhs = ColumnMajorBatch::of(b, "solve_triangular", "BLAS");
  dispatch_types<float, double>(a.dtype(), "solve_triangular", [&]<typename T>() {
    for (int64_t i = 0; i < m.batch; ++i) {
      Lapack<T>::trsm(CblasColMajor, left ? CblasLeft : CblasRight, lower ? CblasLower : CblasUpper,
                      transposed ? CblasTrans : CblasNoTrans, unit ? CblasUnit : CblasNonUnit, rhs.rows, rhs.cols, T(1),
                      matrix_at<T>(a, i), leading_dim(m.rows), matrix_at<T>(b, i), leading_dim(rhs.rows));
    }
  });
}

void qr(const Tensor& a, const Tensor& tau) {
  const ColumnMajorBatch m = ColumnMajorBatch::of(a, "qr", "LAPACK");
  const int64_t k = tau.sizes()[1];
  dispatch_types<float, double>(a.dtype(), "qr", [&]<typename T>() {
    int info = 0, query = -1;
    T size{};
    Lapack<T>::geqrf(&m.rows, &m.cols, matrix_at<T>(a, 0), &m.rows, tau.data_ptr<T>(), &size, &query, &info);
    const int lwork = work_size(size);
    std::vector<T> work(lwork);
    for (int64_t b = 0; b < m.batch; ++b) {
      Lapack<T>::geqrf(&m.rows, &m.cols, matrix_at<T>(a, b), &m.rows, tau.data_ptr<T>() + b * k, work.data(), &lwork,
                       &info);
    }
  });
}

void qr_q(const Tensor& q, const Tensor& tau) {
  const ColumnMajorBatch m = ColumnMajorBatch::of(q, "qr", "LAPACK");
  const int k = static_cast<int>(tau.sizes()[1]);
  dispatch_types<float, double>(q.dtype(), "qr", [&]<typename T>() {
    int info = 0, query = -1;
    T size{};
    Lapack<T>::orgqr(&m.rows, &m.cols, &k, matrix_at<T>(q, 0), &m.rows, tau.data_ptr<T>(), &size, &query, &info);
    const int lwork = work_size(size);
    std::vector<T> work(lwork);
    for (int64_t b = 0; b < m.batch; ++b) {
      Lapack<T>::orgqr(&m.rows, &m.cols, &k, matrix_at<T>(q, b), &m.rows, tau.data_ptr<T>() + b * k, work.data(),
                       &lwork, &info);
    }
  });
}

void eigh(const Tensor& a, const Tensor& w, const Tensor& info, bool vectors) {
  const ColumnMajorBatch m = ColumnMajorBatch::of(a, "eigh", "LAPACK");
  const char jobz = vectors ? 'V' : 'N';
  dispatch_types<float, double>(a.dtype(), "eigh", [&]<typename T>() {
    int query = -1, iwork_size = 0, query_info = 0;
    T size{};
    Lapack<T>::syevd(&jobz, "L", &m.rows, matrix_at<T>(a, 0), &m.rows, w.data_ptr<T>(), &size, &query, &iwork_size,
                     &query, &query_info, 1, 1);
    const int lwork = work_size(size), liwork = std::max(1, iwork_size);
    std::vector<T> work(lwork);
    std::vector<int> iwork(liwork);
    for (int64_t b = 0; b < m.batch; ++b) {
      Lapack<T>::syevd(&jobz, "L", &m.rows, matrix_at<T>(a, b), &m.rows, w.data_ptr<T>() + b * m.rows, work.data(),
                       &lwork, iwork.data(), &liwork, info.data_ptr<int32_t>() + b, 1, 1);
    }
  });
}

void svd(const Tensor& a, const Tensor& s, const Tensor& u, const Tensor& vt, const Tensor& info) {
  const ColumnMajorBatch m = ColumnMajorBatch::of(a, "svd", "LAPACK");
  const bool vectors = u.defined();
  // All of U's columns where u has room for them, else the first min(m, n).
  const char jobz = !vectors ? 'N' : (u.sizes()[1] == m.rows ? 'A' : 'S');
  const int ldu = leading_dim(m.rows), ldvt = leading_dim(m.cols), k = std::min(m.rows, m.cols);
  dispatch_types<float, double>(a.dtype(), "svd", [&]<typename T>() {
    T* u0 = vectors ? u.data_ptr<T>() : nullptr;
    T* vt0 = vectors ? vt.data_ptr<T>() : nullptr;
    std::vector<int> iwork(8 * std::max(1, k));
    int query = -1, query_info = 0;
    T size{};
    Lapack<T>::gesdd(&jobz, &m.rows, &m.cols, matrix_at<T>(a, 0), &m.rows, s.data_ptr<T>(), u0, &ldu, vt0, &ldvt, &size,
                     &query, iwork.data(), &query_info, 1);
    const int lwork = work_size(size);
    std::vector<T> work(lwork);
    for (int64_t b = 0; b < m.batch; ++b) {
      Lapack<T>::gesdd(&jobz, &m.rows, &m.cols, matrix_at<T>(a, b), &m.rows, s.data_ptr<T>() + b * k,
                       vectors ? matrix_at<T>(u, b) : nullptr, &ldu, vectors ? matrix_at<T>(vt, b) : nullptr, &ldvt,
                       work.data(), &lwork, iwork.data(), info.data_ptr<int32_t>() + b, 1);
    }
  });
}

}  // namespace tandem::kernels::cpu
