// F::grid_sample and F::affine_grid, composed of tensor ops (gather, floor, where), so they run
// on every device and their gradients (to the input and to the grid) come from autograd.
#include <cmath>
#include <vector>

#include "autograd/autocast.h"
#include "autograd/ops.h"
#include "kernels/factory.h"
#include "nn/functional.h"

namespace tandem::nn::functional {

namespace {

// A grid coordinate in [-1, 1] as a position in pixels along a dim of `size` (PyTorch's
// grid_sampler_unnormalize).
Tensor unnormalize(const Tensor& coord, int64_t size, bool align_corners) {
  return align_corners ? (coord + 1) / 2 * static_cast<double>(size - 1)
                       : ((coord + 1) * static_cast<double>(size) - 1) / 2;
}

// Clipped to [0, size - 1]; the gradient passes only strictly inside, as PyTorch's.
Tensor clip(const Tensor& coord, int64_t size) {
  const Tensor inside = where(coord > 0, coord < static_cast<double>(size - 1), false);
  return where(inside, coord, coord.detach().clamp(0.0, static_cast<double>(size - 1)));
}

// `value` (of coord's shape), tied to coord with a zero gradient: PyTorch gives the grid zeros
// there, not no gradient at all.
Tensor tied_with_zero_gradient(const Tensor& value, const Tensor& coord) {
  return where(ones({}, TensorOptions(kBool).device(coord.device())), value, coord);
}

// Reflected into [twice_low / 2, twice_high / 2] as often as it takes; each reflection turns the
// gradient's sign.
Tensor reflect(const Tensor& coord, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return tied_with_zero_gradient(zeros_like(coord), coord);
  const double low = static_cast<double>(twice_low) / 2, span = static_cast<double>(twice_high - twice_low) / 2;
  const Tensor in = (coord - low).abs();
  const Tensor flips = (in.detach() / span).floor();
  const Tensor extra = in - flips * span;  // fmod(in, span): exact, flips * span being below in
  const Tensor even = (flips - (flips / 2).floor() * 2) == 0;
  return where(even, extra + low, (extra - span).neg() + low);
}

// PyTorch's compute_coordinates: the padding mode applied to a pixel position.
Tensor pad_coordinate(const Tensor& coord, int64_t size, GridSamplePadding padding, bool align_corners) {
  switch (padding) {
    case GridSamplePadding::zeros:
      return coord;
    case GridSamplePadding::border:
      return clip(coord, size);
    case GridSamplePadding::reflection:
      return clip(align_corners ? reflect(coord, 0, 2 * (size - 1)) : reflect(coord, -1, 2 * size - 1), size);
  }
  return coord;
}

// A position safe to turn into an index: infinities held at +-1e15 (as far outside as they were),
// NaN moved outside (the bicubic path zeroes what a NaN point reads).
Tensor indexable(const Tensor& coord) { return where(coord == coord, coord.clamp(-1e15, 1e15), -10.0); }

// Reads input [N, C, spatial...] at whole-number positions (one tensor [N, out...] per spatial
// dim, outermost first), zeros where any is outside.
class Reader {
 public:
  explicit Reader(const Tensor& input) : input_(input), flat_(input.flatten(2)) {}
  Tensor at(const std::vector<Tensor>& positions) const {
    const int64_t dims = static_cast<int64_t>(positions.size());
    Tensor linear, inside;
    for (int64_t k = 0; k < dims; ++k) {
      const int64_t size = input_.size(2 + k);
      const Tensor p = positions[static_cast<size_t>(k)];
      const Tensor ok = where(p >= 0, p <= static_cast<double>(size - 1), false);
      const Tensor index = p.clamp(0.0, static_cast<double>(size - 1)).to(kInt64);
      linear = k == 0 ? index : linear * size + index;
      inside = k == 0 ? ok : where(inside, ok, false);
    }
    const int64_t n = input_.size(0), c = input_.size(1);
    Shape out = linear.sizes();
    const Tensor gathered = flat_.gather(2, linear.reshape({n, 1, -1}).expand({n, c, linear.numel() / n}).contiguous());
    out.insert(out.begin() + 1, c);
    return where(inside.unsqueeze(1), gathered.view(out), 0);
  }

 private:
  Tensor input_, flat_;
};

// PyTorch's cubic convolution weights (A = -0.75) of the four neighbours at -1, 0, 1, 2 from a
// point t past the first of the middle two.
std::vector<Tensor> cubic_weights(const Tensor& t) {
  constexpr double A = -0.75;
  auto near = [](const Tensor& x) { return ((x * (A + 2) - (A + 3)) * x) * x + 1; };     // |x| <= 1
  auto far = [](const Tensor& x) { return ((x * A - 5 * A) * x + 8 * A) * x - 4 * A; };  // 1 < |x| < 2
  const Tensor rest = 1 - t;
  return {far(t + 1), near(t), near(rest), far(rest + 1)};
}

}  // namespace

Tensor grid_sample(const Tensor& input, const Tensor& grid, const GridSampleOptions& o) {
  // On autocast's GPU list of ops that run in their operands' widest dtype.
  if (const auto widest = amp::widest_on_cuda({&input, &grid});
      widest && (input.dtype() != *widest || grid.dtype() != *widest)) {
    amp::SuspendAutocast inside;
    return grid_sample(amp::to_widest(input, *widest), amp::to_widest(grid, *widest), o);
  }
  constexpr const char* op = "grid_sample";
  TD_CHECK(input.defined() && grid.defined(), op, ": input and grid must be defined");
  TD_CHECK(input.dim() == 4 || input.dim() == 5, op, ": expected a 4-D or 5-D input, got ", shape_str(input.sizes()));
  const int64_t dims = input.dim() - 2;
  TD_CHECK(grid.dim() == input.dim() && grid.size(0) == input.size(0) && grid.size(-1) == dims, op, ": the grid ",
           shape_str(grid.sizes()), " must be [N, ", dims == 2 ? "H', W', 2" : "D', H', W', 3", "] for the input ",
           shape_str(input.sizes()));
  TD_CHECK(is_floating(input.dtype()) && grid.dtype() == input.dtype() && grid.device() == input.device(), op,
           ": input (", input.dtype(), " on ", input.device(), ") and grid (", grid.dtype(), " on ", grid.device(),
           ") must be floating, of one dtype and device");
  for (int64_t k = 0; k < dims; ++k) {
    TD_CHECK(input.size(2 + k) > 0, op, ": the input ", shape_str(input.sizes()), " has an empty spatial dim");
  }
  TD_CHECK(o.mode_ != GridSampleMode::bicubic || dims == 2, op, ": bicubic sampling takes a 4-D input, got ",
           shape_str(input.sizes()));
  if (is_16bit_float(input.dtype())) {
    // Positions and weights in float32 (16 bits hold whole numbers only up to 256 or 2048), the
    // result rounded once.
    return grid_sample(input.to(kFloat32), grid.to(kFloat32), o).to(input.dtype());
  }
  Shape out_shape = grid.sizes();
  out_shape.pop_back();
  out_shape.insert(out_shape.begin() + 1, input.size(1));
  if (numel_of(out_shape) == 0) return zeros(out_shape, input.options());
  const Reader reader(input);
  // Positions along each spatial dim, outermost first (the grid lists x, the innermost, first).
  std::vector<Tensor> coords;
  for (int64_t k = 0; k < dims; ++k) {
    coords.push_back(unnormalize(grid.select(-1, dims - 1 - k), input.size(2 + k), o.align_corners_));
  }
  if (o.mode_ == GridSampleMode::bicubic) {
    // The 4 x 4 neighbours around each point, each position padded on its own, as PyTorch's.
    std::vector<Tensor> weights_y, weights_x;
    const Tensor lost = where(coords[0] != coords[0], true, coords[1] != coords[1]);  // a NaN point
    for (Tensor& c : coords) c = indexable(c);
    const Tensor y0 = coords[0].detach().floor(), x0 = coords[1].detach().floor();
    weights_y = cubic_weights(coords[0] - y0);
    weights_x = cubic_weights(coords[1] - x0);
    Tensor out;
    for (int j = 0; j < 4; ++j) {
      const Tensor y = pad_coordinate(y0 + (j - 1), input.size(2), o.padding_mode_, o.align_corners_).trunc();
      Tensor row;
      for (int i = 0; i < 4; ++i) {
        const Tensor x = pad_coordinate(x0 + (i - 1), input.size(3), o.padding_mode_, o.align_corners_).trunc();
        const Tensor term = reader.at({y, x}) * weights_x[i].unsqueeze(1);
        row = i == 0 ? term : row + term;
      }
      const Tensor term = row * weights_y[j].unsqueeze(1);
      out = j == 0 ? term : out + term;
    }
    return where(lost.unsqueeze(1), 0, out);
  }
  for (int64_t k = 0; k < dims; ++k) {
    coords[k] = indexable(pad_coordinate(coords[k], input.size(2 + k), o.padding_mode_, o.align_corners_));
  }
  if (o.mode_ == GridSampleMode::nearest) {
    std::vector<Tensor> nearest;
    for (const Tensor& c : coords) nearest.push_back(c.detach().round());
    // The values read, tied to the grid with a zero gradient (PyTorch gives the grid zeros, not none).
    return tied_with_zero_gradient(reader.at(nearest), coords[0].unsqueeze(1));
  }
  // Bilinear (trilinear): each of the 2^d corners around the point, x varying fastest, weighted
  // by the products (x first) of the distances to the opposite corner, as PyTorch sums them.
  std::vector<Tensor> lows;
  for (const Tensor& c : coords) lows.push_back(c.detach().floor());
  Tensor out;
  for (int64_t corner = 0; corner < (int64_t{1} << dims); ++corner) {
    std::vector<Tensor> at(static_cast<size_t>(dims));
    Tensor weight;
    for (int64_t k = dims - 1; k >= 0; --k) {
      const bool high = (corner >> (dims - 1 - k)) & 1;
      const Tensor& c = coords[static_cast<size_t>(k)];
      const Tensor& low = lows[static_cast<size_t>(k)];
      at[static_cast<size_t>(k)] = high ? low + 1 : low;
      const Tensor w = high ? c - low : (low + 1) - c;
      weight = k == dims - 1 ? w : weight * w;
    }
    const Tensor term = reader.at(at) * weight.unsqueeze(1);
    out = corner == 0 ? term : out + term;
  }
  return out;
}

namespace {

// PyTorch's linspace_from_neg_one: steps points from -1 to 1, pulled in to the pixels' centres
// without align_corners; one point is 0. The points are computed in double, as linspace's two
// halves, and rounded once (PyTorch's float32 linspace may differ by an ulp).
Tensor from_minus_one(int64_t steps, bool align_corners, const Tensor& like) {
  if (steps <= 1) return zeros({steps}, like.options());
  std::vector<double> points(static_cast<size_t>(steps));
  const double step = 2.0 / static_cast<double>(steps - 1);
  for (int64_t i = 0; i < steps; ++i) {
    points[static_cast<size_t>(i)] =
        i < steps / 2 ? -1 + step * static_cast<double>(i) : 1 - step * static_cast<double>(steps - i - 1);
  }
  Tensor range = tensor(points).to(like.device(), like.dtype());
  return align_corners ? range : range * static_cast<double>(steps - 1) / static_cast<double>(steps);
}

}  // namespace

Tensor affine_grid(const Tensor& theta, IntList size, bool align_corners) {
  constexpr const char* op = "affine_grid";
  TD_CHECK(size.size() == 4 || size.size() == 5, op, ": size must be [N, C, H, W] (2-D maps) or [N, C, D, H, W] ",
           "(3-D maps), got ", shape_str(size.vec()));
  const int64_t dims = static_cast<int64_t>(size.size()) - 2;
  TD_CHECK(theta.defined() && is_floating(theta.dtype()) && theta.dim() == 3 && theta.size(1) == dims &&
               theta.size(2) == dims + 1 && theta.size(0) == size[0],
           op, ": expected theta [", size[0], ", ", dims, ", ", dims + 1, "] (floating) for the size ",
           shape_str(size.vec()), ", got ", theta.defined() ? shape_str(theta.sizes()) : std::string("none"));
  for (int64_t v : size.vec()) TD_CHECK(v > 0, op, ": the size ", shape_str(size.vec()), " must be positive");
  // Each output pixel's (x, y[, z], 1), x along the innermost dim.
  std::vector<Tensor> parts;
  Shape spatial(size.begin() + 2, size.end());
  for (int64_t k = dims - 1; k >= 0; --k) {
    Shape along(static_cast<size_t>(dims), 1);
    along[static_cast<size_t>(k)] = spatial[static_cast<size_t>(k)];
    parts.push_back(from_minus_one(spatial[static_cast<size_t>(k)], align_corners, theta).view(along).expand(spatial));
  }
  parts.push_back(ones(spatial, theta.options()));
  const int64_t points = numel_of(spatial);
  const Tensor base = stack(parts, -1).reshape({1, points, dims + 1}).expand({size[0], points, dims + 1});
  Shape out = spatial;
  out.insert(out.begin(), size[0]);
  out.push_back(dims);
  return bmm(base, theta.transpose(1, 2)).view(out);
}

}  // namespace tandem::nn::functional
