#include "nn/data/shapes.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>

namespace tandem::data {

const std::array<std::string, ShapesDataset::kNumClasses>& ShapesDataset::class_names() {
  static const std::array<std::string, kNumClasses> names = {
      "horizontal bar", "vertical bar",   "diagonal \\", "diagonal /", "square outline",
      "filled square",  "circle outline", "filled disc", "plus",       "x"};
  return names;
}

namespace {

// SplitMix64's finaliser: a bijective mix, so distinct keys give distinct streams.
constexpr uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A counter-based stream per (seed, purpose, index): each image draws from its own, so images
// can be made in any order on any number of threads. Its own arithmetic rather than
// std::*_distribution, whose results the standard leaves to each library.
class Rng {
 public:
  Rng(uint64_t seed, uint64_t purpose, uint64_t index) : state_(mix(mix(mix(seed) + purpose) + index)) {}
  uint64_t next() { return mix(state_ += 0x9e3779b97f4a7c15ull); }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  uint64_t below(uint64_t bound) { return next() % bound; }  // bias < bound / 2^64: negligible here
  // Two noise values of about unit variance from one draw: each the Irwin-Hall sum of four byte
  // uniforms, standardised. Close enough to a normal for pixel noise, and far cheaper than
  // Box-Muller's log and cos per pixel.
  std::array<float, 2> noise2() {
    uint64_t r = next();
    auto one = [](uint32_t w) {
      float sum = static_cast<float>((w & 0xff) + ((w >> 8) & 0xff) + ((w >> 16) & 0xff) + (w >> 24));
      return (sum * (1.0f / 256.0f) + (2.0f / 256.0f) - 2.0f) * 1.7320508f;
    };
    return {one(static_cast<uint32_t>(r)), one(static_cast<uint32_t>(r >> 32))};
  }

 private:
  uint64_t state_;
};

enum Purpose : uint64_t { kLabels = 1, kImages = 2 };

enum Shape : int64_t {
  kHorizontalBar,
  kVerticalBar,
  kDiagonalDown,
  kDiagonalUp,
  kSquareOutline,
  kFilledSquare,
  kCircleOutline,
  kFilledDisc,
  kPlus,
  kCross,
};

// Distance from (u, v) to the segment from (-half, 0) to (half, 0).
inline float segment(float u, float v, float half) {
  float a = std::max(std::abs(u) - half, 0.0f);
  return std::sqrt(a * a + v * v);
}

constexpr int64_t kPixels = ShapesDataset::kRows * ShapesDataset::kCols;

// Writes into `out` how much of each pixel the shape covers, in [0, 1], given its distance
// function in the shape's own frame (centre (cx, cy), turned by angle). Strokes and edges are
// anti-aliased over about a pixel, so sizes and thicknesses vary continuously. A template, so
// that each shape's loop is compiled (and vectorised) on its own.
template <typename Coverage>
void rasterize(float cx, float cy, float angle, float* out, Coverage coverage) {
  float c = std::cos(angle), s = std::sin(angle);
  for (int64_t y = 0; y < ShapesDataset::kRows; ++y) {
    float dy = static_cast<float>(y) + 0.5f - cy;
    for (int64_t x = 0; x < ShapesDataset::kCols; ++x) {
      float dx = static_cast<float>(x) + 0.5f - cx;
      out[y * ShapesDataset::kCols + x] = coverage(c * dx + s * dy, c * dy - s * dx);
    }
  }
}

void draw(int64_t shape, Rng& rng, float* out) {
  // Lines have a half-length, squares a half-side, circles a radius: all called extent.
  bool line = shape <= kDiagonalUp || shape >= kPlus;
  float extent = static_cast<float>(line ? rng.uniform(5, 11) : rng.uniform(4.5, 10));
  float thickness = static_cast<float>(rng.uniform(1.2, 3.5));
  float angle = static_cast<float>(rng.uniform(-0.3, 0.3));  // radians, about 17 degrees
  // Keep the shape (nearly) inside the frame: a tilted square reaches out to extent * 1.4.
  float reach = std::min(extent * (line ? 1.0f : 1.3f) + thickness / 2, 13.0f);
  float cx = static_cast<float>(rng.uniform(reach, 28 - reach)),
        cy = static_cast<float>(rng.uniform(reach, 28 - reach));
  float background = static_cast<float>(rng.uniform(0.0, 0.2));
  float foreground = static_cast<float>(rng.uniform(0.6, 1.0));
  float sigma = static_cast<float>(rng.uniform(0.05, 0.25));

  auto stroke = [thickness](float d) { return std::clamp(thickness / 2 + 0.5f - d, 0.0f, 1.0f); };
  auto fill = [](float signed_distance) { return std::clamp(0.5f - signed_distance, 0.0f, 1.0f); };
  constexpr float r2 = std::numbers::sqrt2_v<float> / 2;  // for axes turned 45 degrees (y points down)
  float e = extent;
  switch (shape) {
    case kHorizontalBar:
      rasterize(cx, cy, angle, out, [&](float u, float v) { return stroke(segment(u, v, e)); });
      break;
    case kVerticalBar:
      rasterize(cx, cy, angle, out, [&](float u, float v) { return stroke(segment(v, u, e)); });
      break;
    case kDiagonalDown:
      rasterize(cx, cy, angle, out, [&](float u, float v) { return stroke(segment((u + v) * r2, (v - u) * r2, e)); });
      break;
    case kDiagonalUp:
      rasterize(cx, cy, angle, out, [&](float u, float v) { return stroke(segment((v - u) * r2, (u + v) * r2, e)); });
      break;
    case kSquareOutline:
      rasterize(cx, cy, angle, out,
                [&](float u, float v) { return stroke(std::abs(std::max(std::abs(u), std::abs(v)) - e)); });
      break;
    case kFilledSquare:
      rasterize(cx, cy, angle, out, [&](float u, float v) { return fill(std::max(std::abs(u), std::abs(v)) - e); });
      break;
    case kCircleOutline:
      rasterize(cx, cy, angle, out, [&](float u, float v) { return stroke(std::abs(std::sqrt(u * u + v * v) - e)); });
      break;
    case kFilledDisc:
      rasterize(cx, cy, angle, out, [&](float u, float v) { return fill(std::sqrt(u * u + v * v) - e); });
      break;
    case kPlus:
      rasterize(cx, cy, angle, out,
                [&](float u, float v) { return stroke(std::min(segment(u, v, e), segment(v, u, e))); });
      break;
    default:
      rasterize(cx, cy, angle, out, [&](float u, float v) {
        float p = (u + v) * r2, q = (v - u) * r2;
        return stroke(std::min(segment(p, q, e), segment(q, p, e)));
      });
      break;
  }
  for (int64_t i = 0; i < kPixels; i += 2) {
    std::array<float, 2> noise = rng.noise2();
    for (int64_t j = 0; j < 2; ++j) {
      float value = background + (foreground - background) * out[i + j] + sigma * noise[j];
      out[i + j] = std::clamp(value, 0.0f, 1.0f);
    }
  }
}

Example generate(int64_t size, uint64_t seed) {
  TD_CHECK(size >= 0, "ShapesDataset: size must be 0 or more, got ", size);
  Tensor images = empty({size, 1, ShapesDataset::kRows, ShapesDataset::kCols}, kFloat32);
  Tensor labels = empty({size}, kInt64);
  float* pixels = images.data_ptr<float>();
  int64_t* targets = labels.data_ptr<int64_t>();
  constexpr int64_t kBlock = ShapesDataset::kNumClasses;
  // Labels block by block: each block of ten is a Fisher-Yates shuffle of 0..9.
  for (int64_t block = 0; block * kBlock < size; ++block) {
    std::array<int64_t, kBlock> order;
    for (int64_t i = 0; i < kBlock; ++i) order[i] = i;
    Rng rng(seed, kLabels, static_cast<uint64_t>(block));
    for (int64_t i = kBlock - 1; i > 0; --i) std::swap(order[i], order[rng.below(static_cast<uint64_t>(i + 1))]);
    for (int64_t i = 0; i < kBlock && block * kBlock + i < size; ++i) targets[block * kBlock + i] = order[i];
  }
  parallel_for(0, size, 256, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      Rng rng(seed, kImages, static_cast<uint64_t>(i));
      draw(targets[i], rng, pixels + i * kPixels);
    }
  });
  return {images, labels};
}

}  // namespace

ShapesDataset::ShapesDataset(int64_t size, uint64_t seed) : ShapesDataset(generate(size, seed), seed) {}

ShapesDataset::ShapesDataset(Example example, uint64_t seed)
    : TensorDataset(example.data, example.target), seed_(seed) {}

ShapesSplit shapes_train_test(int64_t train_size, int64_t test_size, uint64_t seed) {
  // Two seeds from one: mix is a bijection, so mix(2s) and mix(2s + 1) never coincide.
  return {std::make_shared<ShapesDataset>(train_size, mix(2 * seed)),
          std::make_shared<ShapesDataset>(test_size, mix(2 * seed + 1))};
}

}  // namespace tandem::data
