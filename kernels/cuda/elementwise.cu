// CUDA element-wise kernels: each op's functor from kernels/functors.h run by the generic kernel
// of launch.cuh, instantiated for the dtypes the op allows (the same as the CPU backend's).
// 16-bit floats are computed in float, as on the CPU.
#include "core/convert.h"
#include "core/dispatch.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/functors.h"

namespace tandem::kernels::cuda {

namespace {

using cpu::loop_shape;

// f applied in fn::math_t (float for the 16-bit floats, double for the special functions), the
// result rounded once to T.
template <typename T, typename F>
struct InOpMath {
  using M = fn::math_t<F, T>;
  F f;
  TD_INLINE T operator()(T x) const { return convert<T>(f(static_cast<M>(x))); }
  TD_INLINE T operator()(T a, T b) const { return convert<T>(f(static_cast<M>(a), static_cast<M>(b))); }
};

template <typename T, typename F>
struct CompareInOpMath {
  F f;
  TD_INLINE bool operator()(T a, T b) const { return f(static_cast<opmath_t<T>>(a), static_cast<opmath_t<T>>(b)); }
};

template <typename F>
void floating_unary(const cpu::LoopShape<2>& s, Device d, DType t, F f) {
  dispatch_floating(t, "unary", [&]<typename T>() { elementwise<T, T>("unary", s, d, InOpMath<T, F>{f}); });
}

template <typename F>
void numeric_unary(const cpu::LoopShape<2>& s, Device d, DType t, F f) {
  dispatch_numeric(t, "unary", [&]<typename T>() { elementwise<T, T>("unary", s, d, InOpMath<T, F>{f}); });
}

template <typename F>
void binary_all(const cpu::LoopShape<3>& s, Device d, DType t, F f) {
  dispatch_all(t, "binary", [&]<typename T>() { elementwise<T, T, T>("binary", s, d, InOpMath<T, F>{f}); });
}

template <typename F>
void binary_numeric(const cpu::LoopShape<3>& s, Device d, DType t, F f) {
  dispatch_numeric(t, "binary", [&]<typename T>() { elementwise<T, T, T>("binary", s, d, InOpMath<T, F>{f}); });
}

template <typename F>
void binary_floating(const cpu::LoopShape<3>& s, Device d, DType t, F f) {
  dispatch_floating(t, "binary", [&]<typename T>() { elementwise<T, T, T>("binary", s, d, InOpMath<T, F>{f}); });
}

template <typename F>
void binary_integral(const cpu::LoopShape<3>& s, Device d, DType t, F f) {
  dispatch_types<int64_t, int32_t, uint8_t, bool>(
      t, "binary", [&]<typename T>() { elementwise<T, T, T>("binary", s, d, InOpMath<T, F>{f}); });
}

template <typename F>
void compare(const cpu::LoopShape<3>& s, Device d, DType t, F f) {
  dispatch_all(t, "compare", [&]<typename T>() { elementwise<bool, T, T>("compare", s, d, CompareInOpMath<T, F>{f}); });
}

// a + alpha * b (Sub passes -alpha).
void add_scaled(const cpu::LoopShape<3>& s, Device d, DType t, Scalar alpha) {
  dispatch_all(t, "add", [&]<typename T>() {
    using M = opmath_t<T>;
    using F = fn::AddScaled<M>;
    elementwise<T, T, T>("add", s, d, InOpMath<T, F>{F{alpha.to<M>()}});
  });
}

template <typename T>
struct Select {  // where(c, x, y); the condition read as a byte
  TD_INLINE T operator()(uint8_t c, T x, T y) const { return c != 0 ? x : y; }
};

template <typename T>
struct FillWhere {  // masked_fill: the value where the mask is set, else the element as it was
  T value;
  TD_INLINE T operator()(T x, uint8_t mask) const { return mask != 0 ? value : x; }
};

template <typename T>
struct Constant {
  T value;
  TD_INLINE T operator()() const { return value; }
};

}  // namespace

void unary(UnaryOp op, const Tensor& out, const Tensor& in) {
  auto s = loop_shape<2>({&out, &in});
  const Device d = out.device();
  const DType t = out.dtype();
  switch (op) {
    case UnaryOp::Neg: return numeric_unary(s, d, t, fn::Neg{});
    case UnaryOp::Abs: return numeric_unary(s, d, t, fn::Abs{});
    case UnaryOp::Relu: return numeric_unary(s, d, t, fn::Relu{});
    case UnaryOp::Sign:
      return dispatch_all(t, "sign", [&]<typename T>() { elementwise<T, T>("sign", s, d, InOpMath<T, fn::Sign>{}); });
    case UnaryOp::Exp: return floating_unary(s, d, t, fn::Exp{});
    case UnaryOp::Log: return floating_unary(s, d, t, fn::Log{});
    case UnaryOp::Log1p: return floating_unary(s, d, t, fn::Log1p{});
    case UnaryOp::Expm1: return floating_unary(s, d, t, fn::Expm1{});
    case UnaryOp::Sqrt: return floating_unary(s, d, t, fn::Sqrt{});
    case UnaryOp::Rsqrt: return floating_unary(s, d, t, fn::Rsqrt{});
    case UnaryOp::Sin: return floating_unary(s, d, t, fn::Sin{});
    case UnaryOp::Cos: return floating_unary(s, d, t, fn::Cos{});
    case UnaryOp::Tanh: return floating_unary(s, d, t, fn::Tanh{});
    case UnaryOp::Sigmoid: return floating_unary(s, d, t, fn::Sigmoid{});
    case UnaryOp::GeluErf: return floating_unary(s, d, t, fn::GeluErf{});
    case UnaryOp::GeluTanh: return floating_unary(s, d, t, fn::GeluTanh{});
    case UnaryOp::Silu: return floating_unary(s, d, t, fn::Silu{});
    case UnaryOp::Reciprocal: return floating_unary(s, d, t, fn::Reciprocal{});
    case UnaryOp::Erf: return floating_unary(s, d, t, fn::Erf{});
    case UnaryOp::Floor: return numeric_unary(s, d, t, fn::Floor{});
    case UnaryOp::Ceil: return numeric_unary(s, d, t, fn::Ceil{});
    case UnaryOp::Round: return numeric_unary(s, d, t, fn::Round{});
    case UnaryOp::Trunc: return numeric_unary(s, d, t, fn::Trunc{});
    case UnaryOp::Frac: return floating_unary(s, d, t, fn::Frac{});
    case UnaryOp::Tan: return floating_unary(s, d, t, fn::Tan{});
    case UnaryOp::Asin: return floating_unary(s, d, t, fn::Asin{});
    case UnaryOp::Acos: return floating_unary(s, d, t, fn::Acos{});
    case UnaryOp::Atan: return floating_unary(s, d, t, fn::Atan{});
    case UnaryOp::Sinh: return floating_unary(s, d, t, fn::Sinh{});
    case UnaryOp::Cosh: return floating_unary(s, d, t, fn::Cosh{});
    case UnaryOp::Asinh: return floating_unary(s, d, t, fn::Asinh{});
    case UnaryOp::Acosh: return floating_unary(s, d, t, fn::Acosh{});
    case UnaryOp::Atanh: return floating_unary(s, d, t, fn::Atanh{});
    case UnaryOp::Log2: return floating_unary(s, d, t, fn::Log2{});
    case UnaryOp::Log10: return floating_unary(s, d, t, fn::Log10{});
    case UnaryOp::Exp2: return floating_unary(s, d, t, fn::Exp2{});
    case UnaryOp::Erfc: return floating_unary(s, d, t, fn::Erfc{});
    case UnaryOp::Erfinv: return floating_unary(s, d, t, fn::Erfinv{});
    case UnaryOp::Lgamma: return floating_unary(s, d, t, fn::Lgamma{});
    case UnaryOp::Digamma: return floating_unary(s, d, t, fn::Digamma{});
    case UnaryOp::Erfcx: return floating_unary(s, d, t, fn::Erfcx{});
    case UnaryOp::I0: return floating_unary(s, d, t, fn::I0{});
    case UnaryOp::I0e: return floating_unary(s, d, t, fn::I0e{});
    case UnaryOp::I1: return floating_unary(s, d, t, fn::I1{});
    case UnaryOp::I1e: return floating_unary(s, d, t, fn::I1e{});
    case UnaryOp::Ndtri: return floating_unary(s, d, t, fn::Ndtri{});
    case UnaryOp::BesselJ0: return floating_unary(s, d, t, fn::BesselJ0{});
    case UnaryOp::BesselJ1: return floating_unary(s, d, t, fn::BesselJ1{});
    case UnaryOp::BesselY0: return floating_unary(s, d, t, fn::BesselY0{});
    case UnaryOp::BesselY1: return floating_unary(s, d, t, fn::BesselY1{});
    case UnaryOp::ModifiedBesselI0: return floating_unary(s, d, t, fn::ModifiedBesselI0{});
    case UnaryOp::ModifiedBesselI1: return floating_unary(s, d, t, fn::ModifiedBesselI1{});
    case UnaryOp::ModifiedBesselK0: return floating_unary(s, d, t, fn::ModifiedBesselK0{});
    case UnaryOp::ModifiedBesselK1: return floating_unary(s, d, t, fn::ModifiedBesselK1{});
    case UnaryOp::ScaledModifiedBesselK0: return floating_unary(s, d, t, fn::ScaledModifiedBesselK0{});
    case UnaryOp::ScaledModifiedBesselK1: return floating_unary(s, d, t, fn::ScaledModifiedBesselK1{});
    case UnaryOp::SphericalBesselJ0: return floating_unary(s, d, t, fn::SphericalBesselJ0{});
    case UnaryOp::AiryAi: return floating_unary(s, d, t, fn::AiryAi{});
    case UnaryOp::BitwiseNot:
      return dispatch_types<int64_t, int32_t, uint8_t, bool>(t, "bitwise_not", [&]<typename T>() {
        elementwise<T, T>("bitwise_not", s, d, InOpMath<T, fn::BitwiseNot>{});
      });
  }
}

void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b, Scalar alpha) {
  auto s = loop_shape<3>({&out, &a, &b});
  const Device d = out.device();
  const DType t = a.dtype();
  const bool unit_alpha = alpha.to_double() == 1.0;
  switch (op) {
    case BinaryOp::Add:
      if (unit_alpha) return binary_all(s, d, t, fn::Add{});
      return add_scaled(s, d, t, alpha);
    case BinaryOp::Sub:
      if (unit_alpha) return binary_numeric(s, d, t, fn::Sub{});
      return add_scaled(s, d, t, alpha.is_floating() ? Scalar(-alpha.to_double()) : Scalar(-alpha.to_int()));
    case BinaryOp::Mul: return binary_all(s, d, t, fn::Mul{});
    case BinaryOp::Div:
      return dispatch_floating(t, "div", [&]<typename T>() {
        elementwise<T, T, T>("div", s, d, InOpMath<T, fn::Div>{fn::Div{}});
      });
    case BinaryOp::Pow: return binary_numeric(s, d, t, fn::Pow{});
    case BinaryOp::Maximum: return binary_all(s, d, t, fn::Maximum{});
    case BinaryOp::Minimum: return binary_all(s, d, t, fn::Minimum{});
    case BinaryOp::DivTrunc: return binary_numeric(s, d, t, fn::DivTrunc{});
    case BinaryOp::DivFloor: return binary_numeric(s, d, t, fn::DivFloor{});
    case BinaryOp::Remainder: return binary_numeric(s, d, t, fn::Remainder{});
    case BinaryOp::Fmod: return binary_numeric(s, d, t, fn::Fmod{});
    case BinaryOp::Atan2: return binary_floating(s, d, t, fn::Atan2{});
    case BinaryOp::Hypot: return binary_floating(s, d, t, fn::Hypot{});
    case BinaryOp::Copysign: return binary_floating(s, d, t, fn::Copysign{});
    case BinaryOp::LogAddExp: return binary_floating(s, d, t, fn::LogAddExp{});
    case BinaryOp::Zeta: return binary_floating(s, d, t, fn::Zeta{});
    case BinaryOp::Nextafter: return binary_floating(s, d, t, fn::Nextafter{});
    case BinaryOp::Igamma: return binary_floating(s, d, t, fn::Igamma{});
    case BinaryOp::Igammac: return binary_floating(s, d, t, fn::Igammac{});
    case BinaryOp::StandardGammaGrad: return binary_floating(s, d, t, fn::StandardGammaGrad{});
    case BinaryOp::ChebyshevT:
      return binary_floating(s, d, t, fn::OrthogonalPolynomial<fn::special::Polynomial::ChebyshevT>{});
    case BinaryOp::ChebyshevU:
      return binary_floating(s, d, t, fn::OrthogonalPolynomial<fn::special::Polynomial::ChebyshevU>{});
    case BinaryOp::ChebyshevV:
      return binary_floating(s, d, t, fn::OrthogonalPolynomial<fn::special::Polynomial::ChebyshevV>{});
    case BinaryOp::ChebyshevW:
      return binary_floating(s, d, t, fn::OrthogonalPolynomial<fn::special::Polynomial::ChebyshevW>{});
    case BinaryOp::ShiftedChebyshevT:
      return binary_floating(s, d, t, fn::OrthogonalPolynomial<fn::special::Polynomial::ChebyshevT, true>{});
    case BinaryOp::ShiftedChebyshevU:
      return binary_floating(s, d, t, fn::OrthogonalPolynomial<fn::special::Polynomial::ChebyshevU, true>{});
    case BinaryOp::ShiftedChebyshevV:
      return binary_floating(s, d, t, fn::OrthogonalPolynomial<fn::special::Polynomial::ChebyshevV, true>{});
    case BinaryOp::ShiftedChebyshevW:
      return binary_floating(s, d, t, fn::OrthogonalPolynomial<fn::special::Polynomial::ChebyshevW, true>{});
    case BinaryOp::HermiteH:
      return binary_floating(s, d, t, fn::OrthogonalPolynomial<fn::special::Polynomial::HermiteH>{});
    case BinaryOp::HermiteHe:
      return binary_floating(s, d, t, fn::OrthogonalPolynomial<fn::special::Polynomial::HermiteHe>{});
    case BinaryOp::LaguerreL:
      return binary_floating(s, d, t, fn::OrthogonalPolynomial<fn::special::Polynomial::LaguerreL>{});
    case BinaryOp::LegendreP:
      return binary_floating(s, d, t, fn::OrthogonalPolynomial<fn::special::Polynomial::LegendreP>{});
    case BinaryOp::Gcd: return binary_integral(s, d, t, fn::Gcd{});
    case BinaryOp::ShiftLeft: return binary_integral(s, d, t, fn::ShiftLeft{});
    case BinaryOp::ShiftRight: return binary_integral(s, d, t, fn::ShiftRight{});
    case BinaryOp::Lcm: return binary_integral(s, d, t, fn::Lcm{});
    case BinaryOp::Fmax: return binary_all(s, d, t, fn::Fmax{});
    case BinaryOp::Fmin: return binary_all(s, d, t, fn::Fmin{});
    case BinaryOp::BitwiseAnd: return binary_integral(s, d, t, fn::BitwiseAnd{});
    case BinaryOp::BitwiseOr: return binary_integral(s, d, t, fn::BitwiseOr{});
    case BinaryOp::BitwiseXor: return binary_integral(s, d, t, fn::BitwiseXor{});
    case BinaryOp::Eq: return compare(s, d, t, fn::Eq{});
    case BinaryOp::Ne: return compare(s, d, t, fn::Ne{});
    case BinaryOp::Lt: return compare(s, d, t, fn::Lt{});
    case BinaryOp::Le: return compare(s, d, t, fn::Le{});
    case BinaryOp::Gt: return compare(s, d, t, fn::Gt{});
    case BinaryOp::Ge: return compare(s, d, t, fn::Ge{});
  }
}

void binary_float_scalar(BinaryOp op, const Tensor& out, const Tensor& in, Scalar value) {
  auto s = loop_shape<2>({&out, &in});
  const float v = value.to<float>();
  const char* name = op_name(op);
  using MulBy = fn::WithScalar<float, fn::Mul>;
  using DivBy = fn::WithScalar<float, fn::Div>;
  dispatch_types<Half, BFloat16>(out.dtype(), name, [&]<typename T>() {
    switch (op) {
      case BinaryOp::Mul: return elementwise<T, T>(name, s, out.device(), InOpMath<T, MulBy>{MulBy{v}});
      case BinaryOp::Div: return elementwise<T, T>(name, s, out.device(), InOpMath<T, DivBy>{DivBy{v}});
      default: TD_CHECK(false, name, ": no float-scalar kernel (only mul and div have one)");
    }
  });
}

void clamp(const Tensor& out, const Tensor& in, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  auto s = loop_shape<2>({&out, &in});
  dispatch_numeric(out.dtype(), "clamp", [&]<typename T>() {
    using M = opmath_t<T>;
    using F = fn::Clamp<M>;
    F f{lo ? lo->to<M>() : M(0), hi ? hi->to<M>() : M(0), lo.has_value(), hi.has_value()};
    elementwise<T, T>("clamp", s, out.device(), InOpMath<T, F>{f});
  });
}

void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  auto s = loop_shape<4>({&out, &cond, &a, &b});
  dispatch_all(out.dtype(), "where", [&]<typename T>() {
    elementwise<T, uint8_t, T, T>("where", s, out.device(), Select<T>{});
  });
}

void addcmul(const Tensor& out, const Tensor& self, const Tensor& a, const Tensor& b, double value) {
  auto s = loop_shape<4>({&out, &self, &a, &b});
  dispatch_floating(out.dtype(), "addcmul_", [&]<typename T>() {
    using M = opmath_t<T>;
    elementwise<T, T, T, T>("addcmul_", s, out.device(), fn::AddCMul<T, M>{static_cast<M>(value)});
  });
}

void keep_scale(const Tensor& out, const Tensor& x, const Tensor& mask, double scale) {
  auto s = loop_shape<3>({&out, &x, &mask});
  dispatch_floating(out.dtype(), "dropout_backward", [&]<typename T>() {
    using M = opmath_t<T>;
    elementwise<T, T, uint8_t>("dropout_backward", s, out.device(), fn::KeepScale<T, M>{static_cast<M>(scale)});
  });
}

void masked_fill(const Tensor& self, const Tensor& mask, Scalar value) {
  auto s = loop_shape<3>({&self, &self, &mask});
  dispatch_all(self.dtype(), "masked_fill", [&]<typename T>() {
    elementwise<T, T, uint8_t>("masked_fill", s, self.device(), FillWhere<T>{value.to<T>()});
  });
}

void fill(const Tensor& dst, Scalar value) {
  auto s = loop_shape<1>({&dst});
  dispatch_all(dst.dtype(), "fill", [&]<typename T>() {
    elementwise<T>("fill", s, dst.device(), Constant<T>{value.to<T>()});
  });
}

}  // namespace tandem::kernels::cuda
