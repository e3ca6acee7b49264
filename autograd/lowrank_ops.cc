// torch.svd_lowrank and torch.pca_lowrank: Halko, Martinsson and Tropp's randomized range finder
// (a Gaussian test matrix, niter power iterations with a QR after each product for stability), then
// the SVD of A projected on the basis found. Composed of matmul, linalg::qr and linalg::svd, so
// gradients flow through them. The test matrix comes from the global generator: a seeded run repeats,
// but its draws are not PyTorch's.
#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>

#include "autograd/linalg.h"
#include "autograd/ops.h"
#include "core/error.h"
#include "core/shape.h"
#include "kernels/backend.h"
#include "kernels/factory.h"

namespace tandem {

namespace {

Tensor mT(const Tensor& x) { return transpose(x, -2, -1); }

// A @ x, less M @ x where there is an M.
Tensor product(const Tensor& a, const std::optional<Tensor>& m, const Tensor& x) {
  return m ? sub(matmul(a, x), matmul(*m, x)) : matmul(a, x);
}

// An orthonormal basis [*, rows, k], k <= q, of about the range of A - M.
Tensor approximate_basis(const Tensor& a, const std::optional<Tensor>& m, int64_t q, int64_t niter) {
  const Tensor test = randn({a.size(-1), q}, TensorOptions(a.dtype()).device(a.device()));
  Tensor basis = std::get<0>(linalg::qr(product(a, m, test)));
  const std::optional<Tensor> m_t = m ? std::optional<Tensor>(mT(*m)) : std::nullopt;
  for (int64_t i = 0; i < niter; ++i) {
    basis = std::get<0>(linalg::qr(product(mT(a), m_t, basis)));
    basis = std::get<0>(linalg::qr(product(a, m, basis)));
  }
  return basis;
}

void check_matrix(const Tensor& a, const char* op) {
  kernels::check_defined(a, op, "A");
  TD_CHECK(a.dim() >= 2, op, ": expected a matrix or a batch of matrices [*, m, n], got shape ", shape_str(a.sizes()));
  TD_CHECK(a.dtype() == kFloat32 || a.dtype() == kFloat64, op, ": expected a float32 or float64 tensor, got ",
           a.dtype());
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> svd_lowrank(const Tensor& a, int64_t q, int64_t niter,
                                               const std::optional<Tensor>& m) {
  check_matrix(a, "svd_lowrank");
  TD_CHECK(q >= 0, "svd_lowrank: q must be non-negative, got ", q);
  std::optional<Tensor> offset;
  if (m) {
    kernels::check_defined(*m, "svd_lowrank", "M");
    TD_CHECK(m->dtype() == a.dtype() && m->device() == a.device(), "svd_lowrank: M must have A's dtype and device (",
             a.dtype(), " on ", a.device(), "), got ", m->dtype(), " on ", m->device());
    TD_CHECK(broadcast_shapes(m->sizes(), a.sizes(), "svd_lowrank") == a.sizes(), "svd_lowrank: M of shape ",
             shape_str(m->sizes()), " does not broadcast to A's shape ", shape_str(a.sizes()));
    offset = expand(*m, a.sizes());
  }
  // The range finder wants A tall: a wide one is decomposed as its transpose.
  const bool wide = a.size(-2) < a.size(-1);
  const Tensor tall = wide ? mT(a) : a;
  if (wide && offset) offset = mT(*offset);
  const Tensor basis = approximate_basis(tall, offset, q, niter);
  const Tensor projected = matmul(mT(basis), tall);
  auto [u, s, vh] = linalg::svd(offset ? sub(projected, matmul(mT(basis), *offset)) : projected, false);
  Tensor left = matmul(basis, u), right = mT(vh);
  if (wide) std::swap(left, right);
  return {left, s, right};
}

std::tuple<Tensor, Tensor, Tensor> pca_lowrank(const Tensor& a, std::optional<int64_t> q, bool center, int64_t niter) {
  check_matrix(a, "pca_lowrank");
  const int64_t most = std::min(a.size(-2), a.size(-1));
  const int64_t rank = q.value_or(std::min<int64_t>(6, most));
  TD_CHECK(rank >= 0 && rank <= most, "pca_lowrank: q(=", rank,
           ") must be non-negative and not greater than min(m, n)=", most);
  TD_CHECK(niter >= 0, "pca_lowrank: niter(=", niter, ") must be non-negative");
  // Centred: each column (feature) less its mean over the rows (samples).
  return svd_lowrank(center ? sub(a, mean(a, {-2}, true)) : a, rank, niter, std::nullopt);
}

}  // namespace tandem
