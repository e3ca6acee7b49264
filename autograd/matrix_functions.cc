// The rest of torch.linalg, composed of the factorizations' ops: matrix_exp, norm, vander,
// tensorinv and tensorsolve.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "autograd/grad_mode.h"
#include "autograd/linalg.h"
#include "autograd/ops.h"
#include "kernels/backend.h"
#include "kernels/factorize.h"
#include "kernels/factory.h"

namespace tandem::linalg {

Tensor matrix_exp(const Tensor& a) {
  kernels::check_matrices(a, "linalg.matrix_exp", true);
  if (a.numel() == 0) return clone(a);
  // Scaling and squaring with the [13/13] Pade approximant (Higham, 2005): A is scaled by 2^-s
  // until its 1-norm is at most theta_13, exp(A / 2^s) = (V - U)^-1 (V + U), squared s times. One s
  // serves the whole batch (its largest norm). Every step is a differentiable op, so the gradient
  // is the approximant's own, of any order.
  constexpr double kB[] = {64764752532480000.0,
                           32382376266240000.0,
                           7771770303897600.0,
                           1187353796428800.0,
                           129060195264000.0,
                           10559470521600.0,
                           670442572800.0,
                           33522128640.0,
                           1323241920.0,
                           40840800.0,
                           960960.0,
                           16380.0,
                           182.0,
                           1.0};
  constexpr double kTheta13 = 5.371920351148152;
  double norm1 = 0;
  {
    NoGradGuard no_grad;
    norm1 = amax(sum(abs(a), {-2})).item<double>();
  }
  const int squarings =
      std::isfinite(norm1) && norm1 > kTheta13 ? static_cast<int>(std::ceil(std::log2(norm1 / kTheta13))) : 0;
  const Tensor x = squarings > 0 ? a * std::ldexp(1.0, -squarings) : a;
  const int64_t n = a.sizes().back();
  const Tensor id = expand(eye(n, n, a.options()), a.sizes());
  const Tensor x2 = matmul(x, x), x4 = matmul(x2, x2), x6 = matmul(x4, x2);
  const Tensor u =
      matmul(x, matmul(x6, x6 * kB[13] + x4 * kB[11] + x2 * kB[9]) + x6 * kB[7] + x4 * kB[5] + x2 * kB[3] + id * kB[1]);
  const Tensor v =
      matmul(x6, x6 * kB[12] + x4 * kB[10] + x2 * kB[8]) + x6 * kB[6] + x4 * kB[4] + x2 * kB[2] + id * kB[0];
  Tensor result = solve(v - u, v + u);
  for (int i = 0; i < squarings; ++i) result = matmul(result, result);
  return result;
}

Tensor vander(const Tensor& x, std::optional<int64_t> n) {
  kernels::check_defined(x, "linalg.vander", "x");
  TD_CHECK(x.dim() >= 1, "linalg.vander: x must have at least one dimension, got shape ", shape_str(x.sizes()));
  const int64_t columns = n.value_or(x.sizes().back());
  TD_CHECK(columns > 0, "linalg.vander: N must be greater than 1, got ", columns);
  // Powers by running products, as PyTorch's: exact for integers, and differentiable.
  std::vector<Tensor> powers{ones_like(x)};
  for (int64_t k = 1; k < columns; ++k) powers.push_back(powers.back() * x);
  return stack(powers, -1);
}

namespace {

int64_t product(const Shape& sizes, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= sizes[i];
  return p;
}

}  // namespace

Tensor tensorinv(const Tensor& a, int64_t ind) {
  kernels::check_defined(a, "linalg.tensorinv", "A");
  TD_CHECK(ind > 0 && ind <= a.dim(), "linalg.tensorinv: Expected a strictly positive integer for 'ind' not above A's ",
           a.dim(), " dims, but got ", ind);
  const Shape& sizes = a.sizes();
  const int64_t rows = product(sizes, 0, ind), cols = product(sizes, ind, sizes.size());
  TD_CHECK(rows == cols,
           "linalg.tensorinv: Expected self to satisfy the requirement prod(self.shape[ind:]) == "
           "prod(self.shape[:ind]), but got ",
           cols, " != ", rows, " (shape ", shape_str(sizes), ")");
  Shape out(sizes.begin() + ind, sizes.end());
  out.insert(out.end(), sizes.begin(), sizes.begin() + ind);
  return reshape(inv(reshape(a, {rows, cols})), out);
}

Tensor tensorsolve(const Tensor& a, const Tensor& b, std::optional<std::vector<int64_t>> dims) {
  kernels::check_defined(a, "linalg.tensorsolve", "A");
  kernels::check_defined(b, "linalg.tensorsolve", "B");
  Tensor moved = a;
  if (dims) {
    std::vector<int64_t> destination;
    for (size_t i = 0; i < dims->size(); ++i) destination.push_back(a.dim() - static_cast<int64_t>(dims->size() - i));
    moved = movedim(a, *dims, destination);
  }
  TD_CHECK(moved.dim() >= b.dim() && Shape(moved.sizes().begin(), moved.sizes().begin() + b.dim()) == b.sizes(),
           "linalg.tensorsolve: A's leading dims must be B's shape, got A ", shape_str(a.sizes()), " and B ",
           shape_str(b.sizes()));
  const Shape x_shape(moved.sizes().begin() + b.dim(), moved.sizes().end());
  const int64_t rows = b.numel(), cols = product(x_shape, 0, x_shape.size());
  TD_CHECK(rows == cols, "linalg.tensorsolve: A must be square once reshaped: prod of B's shape ", rows,
           " and of the rest of A's ", cols, " differ (A ", shape_str(a.sizes()), ", B ", shape_str(b.sizes()), ")");
  return reshape(solve(reshape(moved, {rows, cols}), reshape(b, {rows})), x_shape);
}

Tensor norm(const Tensor& x, std::optional<double> ord, std::optional<std::vector<int64_t>> dims, bool keepdim) {
  kernels::check_defined(x, "linalg.norm", "A");
  if (dims) {
    TD_CHECK(dims->size() == 1 || dims->size() == 2, "linalg.norm: dim must be a 1- or 2-tuple, got ", dims->size(),
             " dims");
    if (dims->size() == 1) return vector_norm(x, ord.value_or(2), *dims, keepdim);
    return ord ? matrix_norm(x, *ord, *dims, keepdim) : matrix_norm(x, "fro", *dims, keepdim);
  }
  if (!ord) return vector_norm(x, 2, {}, keepdim);
  TD_CHECK(x.dim() == 1 || x.dim() == 2,
           "linalg.norm: If dim is not specified but ord is, the input must be 1D or "
           "2D. Got ",
           x.dim(), "D.");
  return x.dim() == 1 ? vector_norm(x, *ord, {}, keepdim) : matrix_norm(x, *ord, {-2, -1}, keepdim);
}

Tensor norm(const Tensor& x, const std::string& ord, std::optional<std::vector<int64_t>> dims, bool keepdim) {
  kernels::check_defined(x, "linalg.norm", "A");
  TD_CHECK(dims ? dims->size() == 2 : x.dim() == 2, "linalg.norm: ord \"", ord,
           "\" is a matrix norm: give two dims or a 2-D input, got shape ", shape_str(x.sizes()));
  return matrix_norm(x, ord, dims ? IntList(*dims) : IntList({-2, -1}), keepdim);
}

}  // namespace tandem::linalg
