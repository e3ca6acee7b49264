#include "distributions/transforms.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <string_view>
#include <typeinfo>

#include "autograd/grad_mode.h"
#include "autograd/linalg.h"
#include "autograd/ops.h"
#include "distributions/internal.h"
#include "kernels/factory.h"

namespace tandem::distributions {

using internal::joined;
using internal::softplus;
using internal::sum_rightmost;

namespace {

// Whether all of each event's `n` rightmost dims of `mask` hold (a mask of fewer dims: all of it).
Tensor all_rightmost(const Tensor& mask, int64_t n) {
  if (n == 0) return mask;
  if (mask.dim() < n) return mask.all();
  Shape shape(mask.sizes().begin(), mask.sizes().end() - n);
  shape.push_back(-1);
  return mask.reshape(shape).all(-1);
}

}  // namespace

// ---- Transform ----

Transform::Transform(int cache_size) : cache_size_(cache_size) {
  TD_CHECK(cache_size == 0 || cache_size == 1, "Transform: cache_size must be 0 or 1, got ", cache_size);
}

Tensor Transform::through_cache(const Tensor& input, bool is_x,
                                const std::function<Tensor(const Tensor&)>& compute) const {
  if (cache_size_ == 0) return compute(input);
  {
    std::lock_guard lock(cache_mutex_);
    const Tensor& key = is_x ? cached_x_ : cached_y_;
    if (key.defined() && input.is_same(key)) return is_x ? cached_y_ : cached_x_;
  }
  Tensor output = compute(input);
  std::lock_guard lock(cache_mutex_);
  (is_x ? cached_x_ : cached_y_) = input;
  (is_x ? cached_y_ : cached_x_) = output;
  return output;
}

Tensor Transform::operator()(const Tensor& x) const {
  TD_CHECK(x.defined(), name(), ": the input is an undefined tensor");
  return through_cache(x, true, [this](const Tensor& t) { return forward(t); });
}

Tensor Transform::inv(const Tensor& y) const {
  TD_CHECK(y.defined(), name(), ": the value to invert is an undefined tensor");
  return through_cache(y, false, [this](const Tensor& t) { return inverse(t); });
}

std::shared_ptr<const Transform> Transform::inv() const {
  std::shared_ptr<const Transform> self;
  try {
    self = shared_from_this();
  } catch (const std::bad_weak_ptr&) {
    TD_FAIL(name(), ": inv() needs the transform held by a std::shared_ptr (std::make_shared)");
  }
  return std::make_shared<InverseTransform>(self);
}

Tensor Transform::in_domain(const Tensor& x) const { return x == x; }
Tensor Transform::in_codomain(const Tensor& y) const { return y == y; }

// ---- the transforms ----

Tensor ExpTransform::forward(const Tensor& x) const { return x.exp(); }
Tensor ExpTransform::inverse(const Tensor& y) const { return y.log(); }
Tensor ExpTransform::log_abs_det_jacobian(const Tensor& x, const Tensor&) const { return x; }
Tensor ExpTransform::in_codomain(const Tensor& y) const { return y > 0; }

AffineTransform::AffineTransform(Param loc, Param scale, int64_t event_dim, int cache_size)
    : Transform(cache_size), loc_(std::move(loc)), scale_(std::move(scale)), event_dim_(event_dim) {
  for (const Param* p : {&loc_, &scale_}) {
    TD_CHECK(!p->is_tensor() || (p->tensor().defined() && is_floating(p->tensor().dtype())),
             "AffineTransform: loc and scale must be floating tensors or numbers");
  }
  TD_CHECK(event_dim_ >= 0, "AffineTransform: event_dim must be >= 0, got ", event_dim_);
}

Tensor AffineTransform::as_tensor(const Param& p, const Tensor& like) const {
  return p.is_tensor() ? p.tensor() : full({}, p.number(), like.options());
}

Tensor AffineTransform::forward(const Tensor& x) const { return as_tensor(loc_, x) + as_tensor(scale_, x) * x; }
Tensor AffineTransform::inverse(const Tensor& y) const { return (y - as_tensor(loc_, y)) / as_tensor(scale_, y); }

Tensor AffineTransform::log_abs_det_jacobian(const Tensor& x, const Tensor&) const {
  const Tensor result = as_tensor(scale_, x).abs().log();
  const Shape shape = broadcast_shapes(result.sizes(), x.sizes(), "AffineTransform");
  TD_CHECK(static_cast<int64_t>(shape.size()) >= event_dim_, "AffineTransform: events of ", event_dim_,
           " dims, but x has shape ", shape_str(x.sizes()));
  return sum_rightmost(result.expand(shape), event_dim_);
}

std::optional<Param> AffineTransform::sign() const {
  if (!scale_.is_tensor()) return scale_.number() > 0 ? 1.0 : scale_.number() < 0 ? -1.0 : 0.0;
  return Param(scale_.tensor().detach().sign());
}

Shape AffineTransform::forward_shape(const Shape& shape) const {
  Shape s = shape;
  for (const Param* p : {&loc_, &scale_}) {
    if (p->is_tensor()) s = broadcast_shapes(s, p->tensor().sizes(), "AffineTransform");
  }
  return s;
}

Shape AffineTransform::inverse_shape(const Shape& shape) const { return forward_shape(shape); }

Tensor AffineTransform::in_domain(const Tensor& x) const { return all_rightmost(x == x, event_dim_); }
Tensor AffineTransform::in_codomain(const Tensor& y) const { return all_rightmost(y == y, event_dim_); }
std::string AffineTransform::domain() const {
  return event_dim_ == 0 ? "Real()" : "IndependentConstraint(Real(), " + std::to_string(event_dim_) + ")";
}

bool AffineTransform::equals(const Transform& other) const {
  const auto* o = dynamic_cast<const AffineTransform*>(&other);
  if (!o) return false;
  // By value, numbers and tensors alike, broadcasting, as PyTorch's __eq__.
  auto same = [](const Param& a, const Param& b) {
    if (!a.is_tensor() && !b.is_tensor()) return a.number() == b.number();
    NoGradGuard no_grad;
    const Tensor ta = a.is_tensor() ? a.tensor() : full({}, a.number(), b.tensor().options());
    const Tensor tb = b.is_tensor() ? b.tensor() : full({}, b.number(), ta.options());
    Shape shape;
    try {
      shape = broadcast_shapes(ta.sizes(), tb.sizes(), "AffineTransform");
    } catch (const Error&) {
      return false;
    }
    return (ta.to(tb.device()) == tb).all().item<bool>();
  };
  return o->event_dim_ == event_dim_ && same(loc_, o->loc_) && same(scale_, o->scale_);
}

Tensor SigmoidTransform::forward(const Tensor& x) const {
  return x.sigmoid().clamp(finfo(x.dtype()).tiny, 1 - finfo(x.dtype()).eps);
}
Tensor SigmoidTransform::inverse(const Tensor& y) const {
  const Tensor kept = y.clamp(finfo(y.dtype()).tiny, 1 - finfo(y.dtype()).eps);
  return kept.log() - (-kept).log1p();
}
Tensor SigmoidTransform::log_abs_det_jacobian(const Tensor& x, const Tensor&) const {
  return -softplus(-x) - softplus(x);
}
Tensor SigmoidTransform::in_codomain(const Tensor& y) const { return (y >= 0) & (y <= 1); }

Tensor TanhTransform::forward(const Tensor& x) const { return x.tanh(); }
Tensor TanhTransform::inverse(const Tensor& y) const { return y.atanh(); }
// log(1 - tanh(x)^2) = 2 (log 2 - x - softplus(-2x)), stable where tanh(x) rounds to 1.
Tensor TanhTransform::log_abs_det_jacobian(const Tensor& x, const Tensor&) const {
  return (std::numbers::ln2 - x - softplus(x * -2)) * 2;
}
Tensor TanhTransform::in_codomain(const Tensor& y) const { return (y >= -1) & (y <= 1); }

Tensor SoftplusTransform::forward(const Tensor& x) const { return softplus(x); }
Tensor SoftplusTransform::inverse(const Tensor& y) const { return y + (-(-y).expm1()).log(); }
Tensor SoftplusTransform::log_abs_det_jacobian(const Tensor& x, const Tensor&) const { return -softplus(-x); }
Tensor SoftplusTransform::in_codomain(const Tensor& y) const { return y > 0; }

PowerTransform::PowerTransform(double exponent, int cache_size) : Transform(cache_size), exponent_(exponent) {
  TD_CHECK(exponent != 0 && std::isfinite(exponent), "PowerTransform: the exponent must be finite and not 0, got ",
           exponent);
}
Tensor PowerTransform::forward(const Tensor& x) const { return x.pow(exponent_); }
Tensor PowerTransform::inverse(const Tensor& y) const { return y.pow(1 / exponent_); }
Tensor PowerTransform::log_abs_det_jacobian(const Tensor& x, const Tensor& y) const {
  return (y * exponent_ / x).abs().log();
}
Tensor PowerTransform::in_domain(const Tensor& x) const { return x > 0; }
Tensor PowerTransform::in_codomain(const Tensor& y) const { return y > 0; }
bool PowerTransform::equals(const Transform& other) const {
  const auto* o = dynamic_cast<const PowerTransform*>(&other);
  return o && o->exponent_ == exponent_;
}

Tensor AbsTransform::log_abs_det_jacobian(const Tensor&, const Tensor&) const {
  TD_FAIL("AbsTransform: log_abs_det_jacobian is not defined: |x| is not invertible");
}
Tensor AbsTransform::in_codomain(const Tensor& y) const { return y >= 0; }

namespace {

void check_vectors(const Tensor& t, const char* transform, const char* what) {
  TD_CHECK(t.dim() >= 1, transform, ": the ", what, " must have a dim of vectors, got shape ", shape_str(t.sizes()));
}

// log(n), log(n - 1), ..., log(1): the stick-breaking offsets for vectors of n reals.
Tensor stick_offsets(int64_t n, const Tensor& like) {
  return arange(static_cast<double>(n), 0.0, -1.0, like.options()).log();
}

}  // namespace

Tensor StickBreakingTransform::forward(const Tensor& x) const {
  check_vectors(x, "StickBreakingTransform", "input");
  const Tensor u = x - stick_offsets(x.size(-1), x);
  // What each break takes and leaves. sigmoid(-u) keeps the digits that 1 - sigmoid(u) loses as u
  // grows, so the inverse finds x again where y_i rounds to 1 (PyTorch clamps y_i below 1 - eps,
  // which caps the x it gives back near 36 in float64). Above 0, so that log y stays finite.
  const double tiny = finfo(x.dtype()).tiny;
  const Tensor taken = u.sigmoid().clamp_min(tiny);
  const Tensor left = (-u).sigmoid().clamp_min(tiny).cumprod(-1);
  Shape one = x.sizes();
  one.back() = 1;
  const Tensor ones_column = ones(one, x.options());
  return cat({taken, ones_column}, -1) * cat({ones_column, left}, -1);
}

Tensor StickBreakingTransform::inverse(const Tensor& y) const {
  check_vectors(y, "StickBreakingTransform", "value");
  const int64_t n = y.size(-1) - 1;
  TD_CHECK(n >= 1, "StickBreakingTransform: a point of the simplex needs at least 2 numbers, got shape ",
           shape_str(y.sizes()));
  // What is left after each y_i: the sum of the y after it.
  const Tensor rest = y.flip({-1}).cumsum(-1).flip({-1}).narrow(-1, 1, n).clamp_min(finfo(y.dtype()).tiny);
  return y.narrow(-1, 0, n).log() - rest.log() + stick_offsets(n, y);
}

// dy_i/dx_i = y_i (1 - z_i) and the Jacobian of y_1..y_{K-1} is triangular.
Tensor StickBreakingTransform::log_abs_det_jacobian(const Tensor& x, const Tensor& y) const {
  check_vectors(x, "StickBreakingTransform", "input");
  const int64_t n = x.size(-1);
  TD_CHECK(y.dim() >= 1 && y.size(-1) == n + 1, "StickBreakingTransform: log_abs_det_jacobian takes y one longer ",
           "than x in the last dim, got x ", shape_str(x.sizes()), " and y ", shape_str(y.sizes()));
  const Tensor u = x - stick_offsets(n, x);
  return (y.narrow(-1, 0, n).log() - softplus(u)).sum(-1);
}

Tensor StickBreakingTransform::in_domain(const Tensor& x) const {
  return internal::is_real_vector(x);
}
Tensor StickBreakingTransform::in_codomain(const Tensor& y) const { return internal::is_on_simplex(y); }

Shape StickBreakingTransform::forward_shape(const Shape& shape) const {
  TD_CHECK(!shape.empty(), "StickBreakingTransform: maps vectors, got shape ", shape_str(shape));
  Shape out = shape;
  out.back() += 1;
  return out;
}

Shape StickBreakingTransform::inverse_shape(const Shape& shape) const {
  TD_CHECK(!shape.empty() && shape.back() >= 2, "StickBreakingTransform: a point of the simplex needs at least 2 ",
           "numbers, got shape ", shape_str(shape));
  Shape out = shape;
  out.back() -= 1;
  return out;
}

Tensor SoftmaxTransform::forward(const Tensor& x) const {
  check_vectors(x, "SoftmaxTransform", "input");
  return x.softmax(-1);
}
Tensor SoftmaxTransform::log_abs_det_jacobian(const Tensor&, const Tensor&) const {
  TD_FAIL("SoftmaxTransform: log_abs_det_jacobian is not defined: softmax is not invertible");
}
Tensor SoftmaxTransform::in_domain(const Tensor& x) const { return internal::is_real_vector(x); }
Tensor SoftmaxTransform::in_codomain(const Tensor& y) const { return internal::is_on_simplex(y); }

namespace {

// D for vectors of D (D - 1) / 2 numbers, the strict lower triangle of D x D matrices.
int64_t corr_matrix_size(int64_t n) {
  const auto d = static_cast<int64_t>(std::llround((1 + std::sqrt(1 + 8.0 * static_cast<double>(n))) / 2));
  TD_CHECK(d * (d - 1) / 2 == n, "CorrCholeskyTransform: ", n, " numbers are no strict lower triangle (D x D ",
           "matrices take D (D - 1) / 2)");
  return d;
}

// Flat row-major positions in n x n matrices of the entries at or below diagonal `offset` (-1:
// the strict lower triangle), row by row: the order in which PyTorch fills a triangle.
std::vector<int64_t> lower_positions(int64_t n, int64_t offset) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j <= std::min(i + offset, n - 1); ++j) out.push_back(i * n + j);
  }
  return out;
}

Tensor index_tensor(const std::vector<int64_t>& index, const Tensor& like) {
  return tensor(index, TensorOptions(kInt64).device(like.device()));
}

// Matrices [..., n, n] holding v's entries [..., n (n - 1) / 2] in their strict lower triangle,
// row by row, and `elsewhere` on and above the diagonal.
Tensor fill_strict_lower(const Tensor& v, int64_t n, double elsewhere = 0) {
  std::vector<int64_t> source(static_cast<size_t>(n * n), v.size(-1));  // the value appended below
  const std::vector<int64_t> positions = lower_positions(n, -1);
  for (size_t k = 0; k < positions.size(); ++k) source[static_cast<size_t>(positions[k])] = static_cast<int64_t>(k);
  Shape one = v.sizes();
  one.back() = 1;
  Shape shape(v.sizes().begin(), v.sizes().end() - 1);
  shape.push_back(n);
  shape.push_back(n);
  return cat({v, full(one, elsewhere, v.options())}, -1).index_select(-1, index_tensor(source, v)).reshape(shape);
}

// The entries of matrices [..., n, n] at or below diagonal `offset`, row by row.
Tensor lower_entries(const Tensor& m, int64_t offset) {
  const int64_t n = m.size(-1);
  Shape flat(m.sizes().begin(), m.sizes().end() - 2);
  flat.push_back(n * n);
  return m.reshape(flat).index_select(-1, index_tensor(lower_positions(n, offset), m));
}

// Along each row of y: the sums of y^2 from each entry to the row's end (the norm each entry and
// the ones after it share; 1 - cumsum before it, on a unit row, without the cancellation).
Tensor tail_squares(const Tensor& y) { return y.pow(2).flip({-1}).cumsum(-1).flip({-1}); }

void check_square(const Tensor& m, const char* transform, const char* what) {
  TD_CHECK(m.dim() >= 2 && m.size(-1) == m.size(-2), transform, ": the ", what, " must be square matrices, got shape ",
           shape_str(m.sizes()));
}

}  // namespace

Tensor CorrCholeskyTransform::forward(const Tensor& x) const {
  check_vectors(x, "CorrCholeskyTransform", "input");
  const int64_t n = corr_matrix_size(x.size(-1));
  const Tensor r = fill_strict_lower(x.tanh(), n);
  // sqrt(1 - r^2) = 1 / cosh(x): what each entry leaves of its row's unit norm (1 off the triangle).
  const Tensor left = fill_strict_lower(x.cosh().reciprocal().clamp_min(finfo(x.dtype()).tiny), n, 1);
  const Tensor kept = left.cumprod(-1);
  Shape one = kept.sizes();
  one.back() = 1;
  const Tensor before = cat({ones(one, x.options()), kept.narrow(-1, 0, n - 1)}, -1);  // each entry's share
  return (r + eye(n, -1, x.options())) * before;
}

Tensor CorrCholeskyTransform::inverse(const Tensor& y) const {
  check_square(y, "CorrCholeskyTransform", "value");
  const Tensor share = lower_entries(tail_squares(y), -1).sqrt();  // the norm from each entry on
  return (lower_entries(y, -1) / share).atanh();
}

// The stick-breaking part: half the log of each row's tail norms T_j for 1 <= j < i; the tanh part:
// log(1 - tanh(x)^2) = 2 (log 2 - x - softplus(-2 x)).
Tensor CorrCholeskyTransform::log_abs_det_jacobian(const Tensor& x, const Tensor& y) const {
  check_vectors(x, "CorrCholeskyTransform", "input");
  check_square(y, "CorrCholeskyTransform", "value");
  const int64_t n = y.size(-1);
  Tensor stick = zeros(Shape(y.sizes().begin(), y.sizes().end() - 2), y.options());
  if (n >= 3) {
    // shifted[i][j] = T_{j+1} of row i (1 past the last column), read where j <= i - 2.
    const Tensor tails = tail_squares(y);
    const Tensor shifted = cat({tails.narrow(-1, 1, n - 1), ones_like(tails.narrow(-1, 0, 1))}, -1);
    stick = lower_entries(shifted, -2).log().sum(-1) * 0.5;
  }
  return stick + ((std::numbers::ln2 - x - softplus(x * -2)) * 2).sum(-1);
}

Tensor CorrCholeskyTransform::in_domain(const Tensor& x) const { return internal::is_real_vector(x); }
Tensor CorrCholeskyTransform::in_codomain(const Tensor& y) const { return internal::is_corr_cholesky(y); }

Shape CorrCholeskyTransform::forward_shape(const Shape& shape) const {
  TD_CHECK(!shape.empty(), "CorrCholeskyTransform: maps vectors, got shape ", shape_str(shape));
  Shape out(shape.begin(), shape.end() - 1);
  const int64_t n = corr_matrix_size(shape.back());
  out.push_back(n);
  out.push_back(n);
  return out;
}

Shape CorrCholeskyTransform::inverse_shape(const Shape& shape) const {
  TD_CHECK(shape.size() >= 2 && shape.back() == shape[shape.size() - 2],
           "CorrCholeskyTransform: the value must be square matrices, got shape ", shape_str(shape));
  Shape out(shape.begin(), shape.end() - 2);
  out.push_back(shape.back() * (shape.back() - 1) / 2);
  return out;
}

Tensor LowerCholeskyTransform::forward(const Tensor& x) const {
  check_square(x, "LowerCholeskyTransform", "input");
  return x.tril(-1) + diag_embed(x.diagonal(0, -2, -1).exp());
}
Tensor LowerCholeskyTransform::inverse(const Tensor& y) const {
  check_square(y, "LowerCholeskyTransform", "value");
  return y.tril(-1) + diag_embed(y.diagonal(0, -2, -1).log());
}
Tensor LowerCholeskyTransform::log_abs_det_jacobian(const Tensor&, const Tensor&) const {
  TD_FAIL("LowerCholeskyTransform: log_abs_det_jacobian is not defined: the map ignores x's upper triangle");
}
Tensor LowerCholeskyTransform::in_domain(const Tensor& x) const {
  return internal::is_real_matrix(x);
}
Tensor LowerCholeskyTransform::in_codomain(const Tensor& y) const { return internal::is_lower_cholesky(y); }

Tensor PositiveDefiniteTransform::forward(const Tensor& x) const {
  const Tensor l = LowerCholeskyTransform()(x);
  return l.matmul(l.transpose(-2, -1));
}
Tensor PositiveDefiniteTransform::inverse(const Tensor& y) const {
  check_square(y, "PositiveDefiniteTransform", "value");
  return LowerCholeskyTransform().inv(linalg::cholesky(y));
}
Tensor PositiveDefiniteTransform::log_abs_det_jacobian(const Tensor&, const Tensor&) const {
  TD_FAIL("PositiveDefiniteTransform: log_abs_det_jacobian is not defined: the map ignores x's upper triangle");
}
Tensor PositiveDefiniteTransform::in_domain(const Tensor& x) const {
  return internal::is_real_matrix(x);
}
Tensor PositiveDefiniteTransform::in_codomain(const Tensor& y) const {
  return y.dim() < 2 || y.size(-1) != y.size(-2) ? y != y : internal::is_positive_definite(y);
}

CumulativeDistributionTransform::CumulativeDistributionTransform(std::shared_ptr<const Distribution> distribution,
                                                                 int cache_size)
    : Transform(cache_size), distribution_(std::move(distribution)) {
  TD_CHECK(distribution_ != nullptr, "CumulativeDistributionTransform: the distribution is null");
}
Tensor CumulativeDistributionTransform::log_abs_det_jacobian(const Tensor& x, const Tensor&) const {
  return distribution_->log_prob(x);
}
Tensor CumulativeDistributionTransform::in_codomain(const Tensor& y) const { return (y >= 0) & (y <= 1); }

IndependentTransform::IndependentTransform(std::shared_ptr<const Transform> base, int64_t reinterpreted_batch_ndims,
                                           int cache_size)
    : Transform(cache_size), base_(std::move(base)), ndims_(reinterpreted_batch_ndims) {
  TD_CHECK(base_ != nullptr, "IndependentTransform: the base transform is null");
  TD_CHECK(ndims_ >= 0, "IndependentTransform: reinterpreted_batch_ndims must be >= 0, got ", ndims_);
}

Tensor IndependentTransform::log_abs_det_jacobian(const Tensor& x, const Tensor& y) const {
  const Tensor per_point = base_->log_abs_det_jacobian(x, y);
  TD_CHECK(per_point.dim() >= ndims_, "IndependentTransform: ", ndims_, " batch dims to reinterpret, but ",
           base_->name(), "'s log |dy/dx| has shape ", shape_str(per_point.sizes()));
  return sum_rightmost(per_point, ndims_);
}

Tensor IndependentTransform::in_domain(const Tensor& x) const { return all_rightmost(base_->in_domain(x), ndims_); }
std::string IndependentTransform::domain() const {
  return "IndependentConstraint(" + base_->domain() + ", " + std::to_string(ndims_) + ")";
}
Tensor IndependentTransform::in_codomain(const Tensor& y) const {
  return all_rightmost(base_->in_codomain(y), ndims_);
}
std::string IndependentTransform::codomain() const {
  return "IndependentConstraint(" + base_->codomain() + ", " + std::to_string(ndims_) + ")";
}

bool IndependentTransform::equals(const Transform& other) const {
  const auto* o = dynamic_cast<const IndependentTransform*>(&other);
  return o && o->ndims_ == ndims_ && base_->equals(*o->base_);
}

ReshapeTransform::ReshapeTransform(Shape in_shape, Shape out_shape, int cache_size)
    : Transform(cache_size), in_shape_(std::move(in_shape)), out_shape_(std::move(out_shape)) {
  for (const Shape* s : {&in_shape_, &out_shape_}) {
    for (int64_t d : *s) TD_CHECK(d >= 0, "ReshapeTransform: sizes must be >= 0, got ", shape_str(*s));
  }
  TD_CHECK(numel_of(in_shape_) == numel_of(out_shape_), "ReshapeTransform: in_shape ", shape_str(in_shape_),
           " and out_shape ", shape_str(out_shape_), " hold different numbers of elements");
}

Shape ReshapeTransform::replaced(const Shape& shape, const Shape& from, const Shape& to, const char* what) const {
  const auto n = static_cast<int64_t>(from.size());
  TD_CHECK(static_cast<int64_t>(shape.size()) >= n && Shape(shape.end() - n, shape.end()) == from,
           "ReshapeTransform: the ", what, "'s shape ", shape_str(shape), " does not end in ", shape_str(from));
  Shape out(shape.begin(), shape.end() - n);
  out.insert(out.end(), to.begin(), to.end());
  return out;
}

Tensor ReshapeTransform::forward(const Tensor& x) const { return x.reshape(forward_shape(x.sizes())); }
Tensor ReshapeTransform::inverse(const Tensor& y) const { return y.reshape(inverse_shape(y.sizes())); }
Shape ReshapeTransform::forward_shape(const Shape& shape) const {
  return replaced(shape, in_shape_, out_shape_, "input");
}
Shape ReshapeTransform::inverse_shape(const Shape& shape) const {
  return replaced(shape, out_shape_, in_shape_, "value");
}

Tensor ReshapeTransform::log_abs_det_jacobian(const Tensor& x, const Tensor&) const {
  const Shape batch = replaced(x.sizes(), in_shape_, {}, "input");
  return zeros(batch, x.options());
}

bool ReshapeTransform::equals(const Transform& other) const {
  const auto* o = dynamic_cast<const ReshapeTransform*>(&other);
  return o && o->in_shape_ == in_shape_ && o->out_shape_ == out_shape_;
}

// ---- CatTransform and StackTransform ----

namespace {

using Parts = std::vector<std::shared_ptr<const Transform>>;

int64_t most_event_dims(const Parts& parts, bool of_domain) {
  int64_t most = 0;
  for (const auto& part : parts) most = std::max(most, of_domain ? part->domain_event_dim() : part->codomain_event_dim());
  return most;
}

// apply(i, slice i) for consecutive slices of t along dim, of the given lengths.
std::vector<Tensor> each_slice(const Tensor& t, int64_t dim, const std::vector<int64_t>& lengths,
                               const std::function<Tensor(size_t, const Tensor&)>& apply) {
  std::vector<Tensor> out;
  int64_t start = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    out.push_back(apply(i, t.narrow(dim, start, lengths[i])));
    start += lengths[i];
  }
  return out;
}

}  // namespace

PartwiseTransform::PartwiseTransform(std::vector<std::shared_ptr<const Transform>> parts, int64_t dim, int cache_size,
                                     const char* kind)
    : Transform(cache_size), parts_(std::move(parts)), dim_(dim) {
  TD_CHECK(!parts_.empty(), kind, ": needs at least one transform");
  for (size_t i = 0; i < parts_.size(); ++i) TD_CHECK(parts_[i] != nullptr, kind, ": part ", i, " is null");
}

std::optional<Param> PartwiseTransform::sign() const {
  std::optional<double> common;
  for (const auto& part : parts_) {
    const std::optional<Param> s = part->sign();
    if (!s || s->is_tensor() || (common && *common != s->number())) return std::nullopt;
    common = s->number();
  }
  return Param(*common);
}

int64_t PartwiseTransform::domain_event_dim() const { return most_event_dims(parts_, true); }
int64_t PartwiseTransform::codomain_event_dim() const { return most_event_dims(parts_, false); }

std::string PartwiseTransform::arguments() const { return "dim=" + std::to_string(dim_); }

// "Cat([Real(), GreaterThan(lower_bound=0.0)], dim=-1, lengths=[2, 3])": the parts' domains or codomains.
std::string PartwiseTransform::constraint(bool of_domain) const {
  std::string kind = name();
  if (kind.ends_with("Transform")) kind.resize(kind.size() - std::string_view("Transform").size());
  std::string out = kind + "([";
  for (size_t i = 0; i < parts_.size(); ++i) {
    out += (i ? ", " : "") + (of_domain ? parts_[i]->domain() : parts_[i]->codomain());
  }
  return out + "], " + arguments() + ")";
}

bool PartwiseTransform::equals(const Transform& other) const {
  const auto* o = dynamic_cast<const PartwiseTransform*>(&other);
  if (o == nullptr || typeid(*o) != typeid(*this) || o->arguments() != arguments() ||
      o->parts_.size() != parts_.size()) {
    return false;
  }
  for (size_t i = 0; i < parts_.size(); ++i) {
    if (!parts_[i]->equals(*o->parts_[i])) return false;
  }
  return true;
}

CatTransform::CatTransform(std::vector<std::shared_ptr<const Transform>> parts, int64_t dim,
                           std::vector<int64_t> lengths, int cache_size)
    : PartwiseTransform(std::move(parts), dim, cache_size, "CatTransform"), lengths_(std::move(lengths)) {
  if (lengths_.empty()) lengths_.assign(parts_.size(), 1);
  TD_CHECK(lengths_.size() == parts_.size(), "CatTransform: ", lengths_.size(), " lengths for ", parts_.size(),
           " transforms");
  for (int64_t n : lengths_) TD_CHECK(n >= 1, "CatTransform: lengths must be >= 1, got ", shape_str(lengths_));
}

int64_t CatTransform::dim_in(int64_t rank, const char* what) const {
  TD_CHECK(dim_ >= -rank && dim_ < rank, "CatTransform: dim ", dim_, " is out of range for the ", what, " of ", rank,
           " dims");
  return dim_ < 0 ? dim_ + rank : dim_;
}

bool CatTransform::dim_is_batch(int64_t dim, int64_t rank) const {
  return dim < rank - std::max(domain_event_dim(), codomain_event_dim());
}

std::vector<int64_t> CatTransform::codomain_lengths(const Shape& shape, int64_t dim) const {
  const bool batch = dim_is_batch(dim, static_cast<int64_t>(shape.size()));
  // Equal ranks, equal sizes outside dim.
  auto agree = [dim](const Shape& a, const Shape& b) {
    if (a.size() != b.size()) return false;
    for (size_t j = 0; j < a.size(); ++j) {
      if (j != static_cast<size_t>(dim) && a[j] != b[j]) return false;
    }
    return true;
  };
  std::vector<int64_t> out;
  Shape first;
  for (size_t i = 0; i < parts_.size(); ++i) {
    Shape slice = shape;
    slice[dim] = lengths_[i];
    const Shape image = parts_[i]->forward_shape(slice);
    if (batch) {
      TD_CHECK(agree(image, i == 0 ? image : first) && image.size() == slice.size() && image[dim] == slice[dim],
               "CatTransform: part ", i, " (", parts_[i]->name(), ") maps a slice of shape ", shape_str(slice), " to ",
               shape_str(image), "; along dim ", dim_, ", a batch dim of the parts, their images must keep each ",
               "slice's length and agree in every other dim", i == 0 ? "" : " with part 0's " + shape_str(first));
    } else {
      TD_CHECK(agree(image, slice), "CatTransform: part ", i, " (", parts_[i]->name(), ") maps a slice of shape ",
               shape_str(slice), " to ", shape_str(image), "; a part may change only the length along dim ", dim_,
               ", which lies in the parts' event");
    }
    if (i == 0) first = image;
    out.push_back(image[dim]);
  }
  return out;
}

Shape CatTransform::forward_shape(const Shape& shape) const {
  const int64_t dim = dim_in(static_cast<int64_t>(shape.size()), "input");
  const int64_t total = std::accumulate(lengths_.begin(), lengths_.end(), int64_t{0});
  TD_CHECK(shape[dim] == total, "CatTransform: the input of shape ", shape_str(shape), " has ", shape[dim],
           " along dim ", dim_, ", the lengths ", shape_str(lengths_), " add up to ", total);
  const std::vector<int64_t> out_lengths = codomain_lengths(shape, dim);
  Shape slice = shape;
  slice[dim] = lengths_[0];
  Shape out = parts_[0]->forward_shape(slice);
  out[dim] = std::accumulate(out_lengths.begin(), out_lengths.end(), int64_t{0});
  return out;
}

Shape CatTransform::inverse_shape(const Shape& shape) const {
  const auto rank = static_cast<int64_t>(shape.size());
  const int64_t dim = dim_in(rank, "value");
  // Along a batch dim each part keeps its slices' length, and part 0 tells the other dims; inside
  // the event only dim's length changes.
  Shape x_shape = shape;
  if (dim_is_batch(dim, rank)) {
    x_shape[dim] = lengths_[0];
    x_shape = parts_[0]->inverse_shape(x_shape);
  }
  x_shape[dim] = std::accumulate(lengths_.begin(), lengths_.end(), int64_t{0});
  const Shape image = forward_shape(x_shape);
  TD_CHECK(image == shape, "CatTransform: a value of shape ", shape_str(shape), " is not an image of its parts, which ",
           "map an input of shape ", shape_str(x_shape), " to ", shape_str(image));
  return x_shape;
}


Tensor CatTransform::join(std::vector<Tensor> pieces, int64_t dim, int64_t rank, int64_t event_dim, bool add) const {
  // Where dim is left of the event, it is a dim of every piece: counted from the right, so that
  // the event's dims, reduced, do not shift it.
  const int64_t at = dim - rank + event_dim;
  if (at < 0) return cat(pieces, at);
  Tensor out = pieces[0];
  for (size_t i = 1; i < pieces.size(); ++i) out = add ? out + pieces[i] : out & pieces[i];
  return out;
}

Tensor CatTransform::forward(const Tensor& x) const {
  const int64_t dim = dim_in(x.dim(), "input");
  forward_shape(x.sizes());  // checks x's length along dim
  return cat(each_slice(x, dim, lengths_, [&](size_t i, const Tensor& slice) { return (*parts_[i])(slice); }), dim);
}

Tensor CatTransform::inverse(const Tensor& y) const {
  const Shape x_shape = inverse_shape(y.sizes());
  const int64_t dim = dim_in(y.dim(), "value");
  const std::vector<int64_t> y_lengths = codomain_lengths(x_shape, dim);
  return cat(each_slice(y, dim, y_lengths, [&](size_t i, const Tensor& slice) { return parts_[i]->inv(slice); }), dim);
}

Tensor CatTransform::log_abs_det_jacobian(const Tensor& x, const Tensor& y) const {
  const int64_t dim = dim_in(x.dim(), "input");
  const Shape y_shape = forward_shape(x.sizes());
  TD_CHECK(y.sizes() == y_shape, "CatTransform: log_abs_det_jacobian takes y of shape ", shape_str(y_shape),
           " for x of shape ", shape_str(x.sizes()), ", got ", shape_str(y.sizes()));
  const std::vector<Tensor> y_slices =
      each_slice(y, dim, codomain_lengths(x.sizes(), dim), [](size_t, const Tensor& slice) { return slice; });
  const int64_t event_dim = domain_event_dim();
  return join(each_slice(x, dim, lengths_,
                         [&](size_t i, const Tensor& slice) {
                           const Tensor term = parts_[i]->log_abs_det_jacobian(slice, y_slices[i]);
                           return sum_rightmost(term, event_dim - parts_[i]->domain_event_dim());
                         }),
              dim, x.dim(), event_dim, true);
}


Tensor CatTransform::in_domain(const Tensor& x) const {
  const int64_t dim = dim_in(x.dim(), "input");
  forward_shape(x.sizes());  // checks x's length along dim
  const int64_t event_dim = domain_event_dim();
  return join(each_slice(x, dim, lengths_,
                         [&](size_t i, const Tensor& slice) {
                           return all_rightmost(parts_[i]->in_domain(slice), event_dim - parts_[i]->domain_event_dim());
                         }),
              dim, x.dim(), event_dim, false);
}

Tensor CatTransform::in_codomain(const Tensor& y) const {
  const Shape x_shape = inverse_shape(y.sizes());
  const int64_t dim = dim_in(y.dim(), "value");
  const int64_t event_dim = codomain_event_dim();
  return join(each_slice(y, dim, codomain_lengths(x_shape, dim),
                         [&](size_t i, const Tensor& slice) {
                           return all_rightmost(parts_[i]->in_codomain(slice),
                                                event_dim - parts_[i]->codomain_event_dim());
                         }),
              dim, y.dim(), event_dim, false);
}

std::string CatTransform::arguments() const { return PartwiseTransform::arguments() + ", lengths=" + shape_str(lengths_); }

StackTransform::StackTransform(std::vector<std::shared_ptr<const Transform>> parts, int64_t dim, int cache_size)
    : PartwiseTransform(std::move(parts), dim, cache_size, "StackTransform") {}

int64_t StackTransform::dim_in(const Shape& shape, int64_t event_dim, const char* what) const {
  const auto rank = static_cast<int64_t>(shape.size());
  const int64_t batch_rank = rank - event_dim;
  // A negative dim counts from the right of x, the domain, and so names the same batch dim of y
  // when the parts change the number of event dims (vectors to matrices).
  const int64_t from_right = dim_ < 0 ? dim_ + domain_event_dim() : 0;
  const int64_t dim = dim_ < 0 ? batch_rank + from_right : dim_;
  const bool in_event = dim_ < 0 ? from_right >= 0 : dim_ >= batch_rank && dim_ < rank;
  TD_CHECK(!in_event, "StackTransform: dim ", dim_, " of the ", what, " of shape ", shape_str(shape), " lies in the parts' event (",
           "its ", event_dim, " rightmost dims); stack along a batch dim, and wrap the transform in ",
           "IndependentTransform to take it as one event");
  TD_CHECK(dim >= 0 && dim < batch_rank, "StackTransform: dim ", dim_, " is out of range for the ", what,
           " of shape ", shape_str(shape));
  TD_CHECK(shape[dim] == static_cast<int64_t>(parts_.size()), "StackTransform: the ", what, " of shape ",
           shape_str(shape), " has ", shape[dim], " slices along dim ", dim_, " for ", parts_.size(), " transforms");
  return dim;
}

Tensor StackTransform::stacked(const Tensor& t, int64_t event_dim, const char* what,
                               const std::function<Tensor(size_t, const Tensor&)>& apply) const {
  const int64_t dim = dim_in(t.sizes(), event_dim, what);
  std::vector<Tensor> pieces;
  for (size_t i = 0; i < parts_.size(); ++i) {
    pieces.push_back(apply(i, t.select(dim, static_cast<int64_t>(i))));
    TD_CHECK(pieces[i].sizes() == pieces[0].sizes(), "StackTransform: part ", i, " (", parts_[i]->name(),
             ") gives shape ", shape_str(pieces[i].sizes()), " where part 0 gives ", shape_str(pieces[0].sizes()));
  }
  // dim counted from the left stays in place: the event dims the pieces lost were to its right.
  return stack(pieces, dim);
}

Tensor StackTransform::forward(const Tensor& x) const {
  return stacked(x, domain_event_dim(), "input", [&](size_t i, const Tensor& slice) { return (*parts_[i])(slice); });
}

Tensor StackTransform::inverse(const Tensor& y) const {
  return stacked(y, codomain_event_dim(), "value", [&](size_t i, const Tensor& slice) { return parts_[i]->inv(slice); });
}

Tensor StackTransform::log_abs_det_jacobian(const Tensor& x, const Tensor& y) const {
  const int64_t event_dim = domain_event_dim();
  const int64_t dim = dim_in(x.sizes(), event_dim, "input");
  dim_in(y.sizes(), codomain_event_dim(), "value");  // checks y as well
  return stacked(x, event_dim, "input", [&](size_t i, const Tensor& slice) {
    const Tensor term = parts_[i]->log_abs_det_jacobian(slice, y.select(dim, static_cast<int64_t>(i)));
    return sum_rightmost(term, event_dim - parts_[i]->domain_event_dim());
  });
}


Tensor StackTransform::in_domain(const Tensor& x) const {
  const int64_t event_dim = domain_event_dim();
  return stacked(x, event_dim, "input", [&](size_t i, const Tensor& slice) {
    return all_rightmost(parts_[i]->in_domain(slice), event_dim - parts_[i]->domain_event_dim());
  });
}

Tensor StackTransform::in_codomain(const Tensor& y) const {
  const int64_t event_dim = codomain_event_dim();
  return stacked(y, event_dim, "value", [&](size_t i, const Tensor& slice) {
    return all_rightmost(parts_[i]->in_codomain(slice), event_dim - parts_[i]->codomain_event_dim());
  });
}

Shape StackTransform::stacked_shape(const Shape& shape, bool forward) const {
  const int64_t dim = dim_in(shape, forward ? domain_event_dim() : codomain_event_dim(), forward ? "input" : "value");
  Shape slice = shape;
  slice.erase(slice.begin() + dim);
  Shape out;
  for (size_t i = 0; i < parts_.size(); ++i) {
    const Shape image = forward ? parts_[i]->forward_shape(slice) : parts_[i]->inverse_shape(slice);
    TD_CHECK(i == 0 || image == out, "StackTransform: part ", i, " (", parts_[i]->name(), ") maps a slice of shape ",
             shape_str(slice), " to ", shape_str(image), " where part 0 maps it to ", shape_str(out));
    out = image;
  }
  out.insert(out.begin() + dim, static_cast<int64_t>(parts_.size()));
  return out;
}

Shape StackTransform::forward_shape(const Shape& shape) const { return stacked_shape(shape, true); }
Shape StackTransform::inverse_shape(const Shape& shape) const { return stacked_shape(shape, false); }

// ---- InverseTransform and ComposeTransform ----

InverseTransform::InverseTransform(std::shared_ptr<const Transform> of) : of_(std::move(of)) {
  TD_CHECK(of_ != nullptr, "InverseTransform: the transform to invert is null");
}

Tensor InverseTransform::log_abs_det_jacobian(const Tensor& x, const Tensor& y) const {
  return -of_->log_abs_det_jacobian(y, x);
}

bool InverseTransform::equals(const Transform& other) const {
  const auto* o = dynamic_cast<const InverseTransform*>(&other);
  return o && of_->equals(*o->of_);
}

ComposeTransform::ComposeTransform(std::vector<std::shared_ptr<const Transform>> parts, int cache_size)
    : Transform(cache_size), parts_(std::move(parts)) {
  for (size_t i = 0; i < parts_.size(); ++i) TD_CHECK(parts_[i] != nullptr, "ComposeTransform: part ", i, " is null");
}

Tensor ComposeTransform::forward(const Tensor& x) const {
  Tensor y = x;
  for (const auto& t : parts_) y = (*t)(y);
  return y;
}

Tensor ComposeTransform::inverse(const Tensor& y) const {
  Tensor x = y;
  for (auto it = parts_.rbegin(); it != parts_.rend(); ++it) x = (*it)->inv(x);
  return x;
}

// Each part's term summed over the dims the whole takes as one event at that point.
Tensor ComposeTransform::log_abs_det_jacobian(const Tensor& x, const Tensor& y) const {
  if (parts_.empty()) return zeros_like(x);
  Tensor total, at = x;
  int64_t event_dim = domain_event_dim();
  for (size_t i = 0; i < parts_.size(); ++i) {
    const Transform& part = *parts_[i];
    const Tensor next = i + 1 == parts_.size() ? y : part(at);
    const Tensor term = sum_rightmost(part.log_abs_det_jacobian(at, next), event_dim - part.domain_event_dim());
    total = total.defined() ? total + term : term;
    at = next;
    event_dim += part.codomain_event_dim() - part.domain_event_dim();
  }
  return total;
}

int64_t ComposeTransform::domain_event_dim() const {
  if (parts_.empty()) return 0;
  int64_t event_dim = parts_.back()->codomain_event_dim();
  for (auto it = parts_.rbegin(); it != parts_.rend(); ++it) {
    const Transform& part = **it;
    event_dim = std::max(event_dim + part.domain_event_dim() - part.codomain_event_dim(), part.domain_event_dim());
  }
  return event_dim;
}

int64_t ComposeTransform::codomain_event_dim() const {
  if (parts_.empty()) return 0;
  int64_t event_dim = parts_.front()->domain_event_dim();
  for (const auto& part : parts_) {
    event_dim = std::max(event_dim + part->codomain_event_dim() - part->domain_event_dim(), part->codomain_event_dim());
  }
  return event_dim;
}

std::optional<Param> ComposeTransform::sign() const {
  Param product = 1.0;
  for (const auto& t : parts_) {
    const std::optional<Param> s = t->sign();
    if (!s) return std::nullopt;
    if (!product.is_tensor() && !s->is_tensor()) {
      product = product.number() * s->number();
    } else {
      const Tensor a = product.is_tensor() ? product.tensor() : full({}, product.number(), s->tensor().options());
      product = s->is_tensor() ? Param(a * s->tensor()) : Param(a * s->number());
    }
  }
  return product;
}

Tensor ComposeTransform::in_domain(const Tensor& x) const {
  return parts_.empty() ? x == x : parts_.front()->in_domain(x);
}
std::string ComposeTransform::domain() const { return parts_.empty() ? "Real()" : parts_.front()->domain(); }
Tensor ComposeTransform::in_codomain(const Tensor& y) const {
  return parts_.empty() ? y == y : parts_.back()->in_codomain(y);
}
std::string ComposeTransform::codomain() const { return parts_.empty() ? "Real()" : parts_.back()->codomain(); }

Shape ComposeTransform::forward_shape(const Shape& shape) const {
  Shape s = shape;
  for (const auto& t : parts_) s = t->forward_shape(s);
  return s;
}

Shape ComposeTransform::inverse_shape(const Shape& shape) const {
  Shape s = shape;
  for (auto it = parts_.rbegin(); it != parts_.rend(); ++it) s = (*it)->inverse_shape(s);
  return s;
}

bool ComposeTransform::equals(const Transform& other) const {
  const auto* o = dynamic_cast<const ComposeTransform*>(&other);
  if (!o || o->parts_.size() != parts_.size()) return false;
  for (size_t i = 0; i < parts_.size(); ++i) {
    if (!parts_[i]->equals(*o->parts_[i])) return false;
  }
  return true;
}

// ---- TransformedDistribution ----

TransformedDistribution::Prepared TransformedDistribution::prepare(
    std::shared_ptr<const Distribution> base, const std::vector<std::shared_ptr<const Transform>>& transforms) {
  TD_CHECK(base != nullptr, "TransformedDistribution: the base distribution is null");
  for (size_t i = 0; i < transforms.size(); ++i) {
    TD_CHECK(transforms[i] != nullptr, "TransformedDistribution: transform ", i, " is null");
  }
  const ComposeTransform all(transforms);
  const Shape base_shape = joined(base->batch_shape(), base->event_shape());
  const auto base_event = static_cast<int64_t>(base->event_shape().size());
  const int64_t domain_event = all.domain_event_dim();
  TD_CHECK(static_cast<int64_t>(base_shape.size()) >= domain_event, "TransformedDistribution: the transforms take ",
           "events of ", domain_event, " dims, but the base ", base->name(), " has shape ", shape_str(base_shape));
  const Shape shape = all.forward_shape(base_shape);
  // A transform's parameters may widen the batch: the base is expanded to it, as PyTorch's.
  const Shape base_wanted = all.inverse_shape(shape);
  if (base_wanted != base_shape) base = base->expand(Shape(base_wanted.begin(), base_wanted.end() - base_event));
  if (domain_event > base_event) base = std::make_shared<Independent>(base, domain_event - base_event);
  const int64_t event_dim =
      std::max(all.codomain_event_dim(), base_event + all.codomain_event_dim() - domain_event);
  const auto cut = static_cast<int64_t>(shape.size()) - event_dim;
  return {std::move(base), Shape(shape.begin(), shape.begin() + cut), Shape(shape.begin() + cut, shape.end())};
}

TransformedDistribution::TransformedDistribution(std::shared_ptr<const Distribution> base,
                                                 std::vector<std::shared_ptr<const Transform>> transforms,
                                                 std::optional<bool> validate_args)
    : TransformedDistribution(prepare(std::move(base), transforms), transforms, validate_args) {}

// `transforms` by reference: a by-value parameter could be moved from before prepare() reads it
// (the order in which arguments are evaluated is unspecified).
TransformedDistribution::TransformedDistribution(Prepared prepared,
                                                 const std::vector<std::shared_ptr<const Transform>>& transforms,
                                                 std::optional<bool> validate_args)
    : Distribution(prepared.batch, prepared.event, validate_args),
      base_(std::move(prepared.base)),
      transforms_(transforms) {}

std::shared_ptr<Distribution> TransformedDistribution::expand(const Shape& batch_shape) const {
  const Shape shape = ComposeTransform(transforms_).inverse_shape(joined(batch_shape, event_shape()));
  const auto base_event = static_cast<int64_t>(base_->event_shape().size());
  TD_CHECK(static_cast<int64_t>(shape.size()) >= base_event, name(), ": cannot expand to batch_shape ",
           shape_str(batch_shape));
  return std::make_shared<TransformedDistribution>(base_->expand(Shape(shape.begin(), shape.end() - base_event)),
                                                   transforms_, validates());
}

Tensor TransformedDistribution::sample(IntList sample_shape) const {
  NoGradGuard no_grad;
  Tensor x = base_->sample(sample_shape);
  for (const auto& t : transforms_) x = (*t)(x);
  return x;
}

Tensor TransformedDistribution::rsample(IntList sample_shape) const {
  Tensor x = base_->rsample(sample_shape);
  for (const auto& t : transforms_) x = (*t)(x);
  return x;
}

Tensor TransformedDistribution::log_prob(const Tensor& value) const {
  const std::string support = transforms_.empty() ? "the base's support" : transforms_.back()->codomain();
  check_value(value, [&] { return transforms_.empty() ? value == value : transforms_.back()->in_codomain(value); },
              support);
  // Each log |dy/dx| and the base's log density summed over the dims of one event of this
  // distribution, as they stand at that point of the chain.
  auto event_dim = static_cast<int64_t>(event_shape().size());
  Tensor correction;  // the sum of every log |dy/dx|
  Tensor y = value;
  for (auto it = transforms_.rbegin(); it != transforms_.rend(); ++it) {
    const Transform& t = **it;
    const Tensor x = t.inv(y);
    event_dim += t.domain_event_dim() - t.codomain_event_dim();
    const Tensor term = sum_rightmost(t.log_abs_det_jacobian(x, y), event_dim - t.domain_event_dim());
    correction = correction.defined() ? correction + term : term;
    y = x;
  }
  const Tensor base =
      sum_rightmost(base_->log_prob(y), event_dim - static_cast<int64_t>(base_->event_shape().size()));
  return correction.defined() ? base - correction : base;
}

Param TransformedDistribution::sign(const char* what) const {
  const std::optional<Param> sign = ComposeTransform(transforms_).sign();
  TD_CHECK(sign.has_value(), name(), ": ", what, " needs each transform's sign, and one has none");
  return *sign;
}

Tensor TransformedDistribution::monotonize(const Tensor& p, const Param& sign) {
  if (!sign.is_tensor() && sign.number() == 1) return p;
  const Tensor s = sign.is_tensor() ? sign.tensor() : full({}, sign.number(), p.options());
  return s * (p - 0.5) + 0.5;
}

Tensor TransformedDistribution::cdf(const Tensor& value) const {
  const Param s = sign("cdf");
  Tensor x = value;
  for (auto it = transforms_.rbegin(); it != transforms_.rend(); ++it) x = (*it)->inv(x);
  return monotonize(base_->cdf(x), s);
}

Tensor TransformedDistribution::icdf(const Tensor& value) const {
  Tensor x = base_->icdf(monotonize(value, sign("icdf")));
  for (const auto& t : transforms_) x = (*t)(x);
  return x;
}

// ---- LogisticNormal ----

namespace {

// Normal(loc, scale), of batch shape [1] where both are numbers (the simplex of 2 dims). The
// parameters are checked here, so that errors name LogisticNormal.
std::shared_ptr<const Distribution> logistic_normal_base(const Param& loc, const Param& scale,
                                                         std::optional<bool> validate_args) {
  constexpr const char* dist = "LogisticNormal";
  const std::vector<Tensor> params = internal::broadcast_all({loc, scale}, dist, {"loc", "scale"});
  const bool validate = validate_args.value_or(Distribution::default_validate_args());
  internal::check_parameter(validate, dist, "loc", params[0], [&] { return internal::is_real(params[0]); }, "Real()");
  internal::check_parameter(validate, dist, "scale", params[1], [&] { return params[1] > 0; },
                            "GreaterThan(lower_bound=0.0)");
  auto normal = std::make_shared<Normal>(params[0], params[1], validate_args);
  if (normal->batch_shape().empty()) return normal->expand({1});
  return normal;
}

}  // namespace

LogisticNormal::LogisticNormal(Param loc, Param scale, std::optional<bool> validate_args)
    : TransformedDistribution(logistic_normal_base(loc, scale, validate_args),
                              {std::make_shared<StickBreakingTransform>()}, validate_args) {}

const Normal& LogisticNormal::normal() const {
  return static_cast<const Normal&>(static_cast<const Independent&>(base_dist()).base());
}

std::shared_ptr<Distribution> LogisticNormal::expand(const Shape& batch_shape) const {
  Shape shape = batch_shape;
  shape.push_back(event_shape()[0] - 1);
  return std::make_shared<LogisticNormal>(loc().expand(shape), scale().expand(shape), validates());
}

}  // namespace tandem::distributions
