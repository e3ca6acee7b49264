// Names for the element-wise ops, shared by the op entry points and each backend's kernels:
// a backend switches on the code to pick the functor from kernels/functors.h.
#pragma once

#include <cstdint>

namespace tandem::kernels {

enum class UnaryOp {
  Neg, Abs, Exp, Expm1, Log, Log1p, Sqrt, Rsqrt, Sin, Cos, Tanh, Sigmoid, Relu, GeluErf, GeluTanh, Silu, Sign, Reciprocal,
  Erf, Floor, Ceil, Round, Trunc, Frac, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Log2, Log10, Exp2, Erfc,
  Erfinv, BitwiseNot, Lgamma, Digamma, Erfcx, I0, I0e, I1, I1e, Ndtri, BesselJ0, BesselJ1, BesselY0, BesselY1,
  ModifiedBesselI0, ModifiedBesselI1, ModifiedBesselK0, ModifiedBesselK1, ScaledModifiedBesselK0,
  ScaledModifiedBesselK1, SphericalBesselJ0, AiryAi,
};

enum class BinaryOp {
  Add, Sub, Mul, Div, Pow, Maximum, Minimum, DivTrunc, DivFloor, Remainder, Fmod, Atan2, Hypot, Copysign, LogAddExp,
  Fmax, Fmin, BitwiseAnd, BitwiseOr, BitwiseXor, Zeta, Gcd, Lcm, Nextafter, Igamma, Igammac, ShiftLeft,
  ShiftRight, StandardGammaGrad,
  // torch.special's orthogonal polynomials of x (a) and degree n (b)
  ChebyshevT, ChebyshevU, ChebyshevV, ChebyshevW, ShiftedChebyshevT, ShiftedChebyshevU, ShiftedChebyshevV,
  ShiftedChebyshevW, HermiteH, HermiteHe, LaguerreL, LegendreP,
  Eq, Ne, Lt, Le, Gt, Ge,  // comparisons: the output is bool
};

constexpr bool is_comparison(BinaryOp op) { return op >= BinaryOp::Eq; }

// Scans along each row (cummax, cummin, logcumsumexp): the running value, and for the extremes the
// position it came from.
enum class RowScan { Max, Min, LogSumExp };

// The reductions of scatter_reduce with a kernel of their own (sum is scatter_add's; mean is composed).
enum class ScatterReduce { Prod, Max, Min };

// A 2-D window: kernel size, stride, padding and dilation (pooling, im2col and convolution).
struct Pool2d {
  int64_t kh, kw, sh, sw, ph, pw, dh = 1, dw = 1;
};

// Positions of a window of size k (dilated) along a padded input of size `in`: 0 when it does not
// fit (C++ division would truncate a short negative span to a position that is not there).
inline int64_t conv_out_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation) {
  const int64_t span = in + 2 * pad - dilation * (k - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

// An [N, C, H, W] image and the OH x OW positions of a window over it (im2col, col2im).
struct ConvGeometry {
  int64_t n, c, h, w, oh, ow;
};

inline ConvGeometry conv_geometry(const int64_t* nchw, const Pool2d& p) {
  return ConvGeometry{nchw[0], nchw[1], nchw[2], nchw[3], conv_out_size(nchw[2], p.kh, p.ph, p.sh, p.dh),
                      conv_out_size(nchw[3], p.kw, p.pw, p.sw, p.dw)};
}

const char* op_name(UnaryOp op);
const char* op_name(BinaryOp op);

}  // namespace tandem::kernels
