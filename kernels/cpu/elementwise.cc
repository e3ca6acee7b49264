// CPU element-wise kernels: each op's functor from kernels/functors.h run by the loop of loops.h,
// instantiated for the dtypes the op allows. Memory-bound: the contiguous runs vectorize.
#include <cstring>

#include "core/convert.h"
#include "core/dispatch.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/loops.h"
#include "kernels/functors.h"

namespace tandem::kernels::cpu {

namespace {

// out = f(in), computed in fn::math_t (float for the 16-bit floats, double for the special
// functions) and rounded once.
template <typename T, typename F>
void unary_as(const LoopShape<2>& s, F f) {
  using M = fn::math_t<F, T>;
  elementwise<T, T>(s, [f](T x) { return convert<T>(f(static_cast<M>(x))); });
}

template <typename F>
void floating_unary(const LoopShape<2>& s, DType t, F f) {
  dispatch_floating(t, "unary", [&]<typename T>() { unary_as<T>(s, f); });
}

template <typename F>
void numeric_unary(const LoopShape<2>& s, DType t, F f) {
  dispatch_numeric(t, "unary", [&]<typename T>() { unary_as<T>(s, f); });
}

template <typename T, typename F>
void binary_as(const LoopShape<3>& s, F f) {
  using M = fn::math_t<F, T>;
  elementwise<T, T, T>(s, [f](T a, T b) { return convert<T>(f(static_cast<M>(a), static_cast<M>(b))); });
}

template <typename F>
void binary_all(const LoopShape<3>& s, DType t, F f) {
  dispatch_all(t, "binary", [&]<typename T>() { binary_as<T>(s, f); });
}

template <typename F>
void binary_numeric(const LoopShape<3>& s, DType t, F f) {
  dispatch_numeric(t, "binary", [&]<typename T>() { binary_as<T>(s, f); });
}

template <typename F>
void binary_floating(const LoopShape<3>& s, DType t, F f) {
  dispatch_floating(t, "binary", [&]<typename T>() { binary_as<T>(s, f); });
}

template <typename F>
void binary_integral(const LoopShape<3>& s, DType t, F f) {
  dispatch_types<int64_t, int32_t, uint8_t, bool>(t, "binary", [&]<typename T>() { binary_as<T>(s, f); });
}

template <typename F>
void compare(const LoopShape<3>& s, DType t, F f) {
  dispatch_all(t, "compare", [&]<typename T>() {
    using M = opmath_t<T>;
    elementwise<bool, T, T>(s, [f](T a, T b) { return f(static_cast<M>(a), static_cast<M>(b)); });
  });
}

// a + alpha * b (Sub passes -alpha).
void add_scaled(const LoopShape<3>& s, DType t, Scalar alpha) {
  dispatch_all(t, "add", [&]<typename T>() {
    using M = opmath_t<T>;
    binary_as<T>(s, fn::AddScaled<M>{alpha.to<M>()});
  });
}

}  // namespace

void unary(UnaryOp op, const Tensor& out, const Tensor& in) {
  auto s = loop_shape<2>({&out, &in});
  DType t = out.dtype();
  switch (op) {
    case UnaryOp::Neg: return numeric_unary(s, t, fn::Neg{});
    case UnaryOp::Abs: return numeric_unary(s, t, fn::Abs{});
    case UnaryOp::Relu: return numeric_unary(s, t, fn::Relu{});
    case UnaryOp::Sign: return dispatch_all(t, "sign", [&]<typename T>() { unary_as<T>(s, fn::Sign{}); });
    case UnaryOp::Exp: return floating_unary(s, t, fn::Exp{});
    case UnaryOp::Log: return floating_unary(s, t, fn::Log{});
    case UnaryOp::Log1p: return floating_unary(s, t, fn::Log1p{});
    case UnaryOp::Expm1: return floating_unary(s, t, fn::Expm1{});
    case UnaryOp::Sqrt: return floating_unary(s, t, fn::Sqrt{});
    case UnaryOp::Rsqrt: return floating_unary(s, t, fn::Rsqrt{});
    case UnaryOp::Sin: return floating_unary(s, t, fn::Sin{});
    case UnaryOp::Cos: return floating_unary(s, t, fn::Cos{});
    case UnaryOp::Tanh: return floating_unary(s, t, fn::Tanh{});
    case UnaryOp::Sigmoid: return floating_unary(s, t, fn::Sigmoid{});
    case UnaryOp::GeluErf: return floating_unary(s, t, fn::GeluErf{});
    case UnaryOp::GeluTanh: return floating_unary(s, t, fn::GeluTanh{});
    case UnaryOp::Silu: return floating_unary(s, t, fn::Silu{});
    case UnaryOp::Reciprocal: return floating_unary(s, t, fn::Reciprocal{});
    case UnaryOp::Erf: return floating_unary(s, t, fn::Erf{});
    case UnaryOp::Floor: return numeric_unary(s, t, fn::Floor{});
    case UnaryOp::Ceil: return numeric_unary(s, t, fn::Ceil{});
    case UnaryOp::Round: return numeric_unary(s, t, fn::Round{});
    case UnaryOp::Trunc: return numeric_unary(s, t, fn::Trunc{});
    case UnaryOp::Frac: return floating_unary(s, t, fn::Frac{});
    case UnaryOp::Tan: return floating_unary(s, t, fn::Tan{});
    case UnaryOp::Asin: return floating_unary(s, t, fn::Asin{});
    case UnaryOp::Acos: return floating_unary(s, t, fn::Acos{});
    case UnaryOp::Atan: return floating_unary(s, t, fn::Atan{});
    case UnaryOp::Sinh: return floating_unary(s, t, fn::Sinh{});
    case UnaryOp::Cosh: return floating_unary(s, t, fn::Cosh{});
    case UnaryOp::Asinh: return floating_unary(s, t, fn::Asinh{});
    case UnaryOp::Acosh: return floating_unary(s, t, fn::Acosh{});
    case UnaryOp::Atanh: return floating_unary(s, t, fn::Atanh{});
    case UnaryOp::Log2: return floating_unary(s, t, fn::Log2{});
    case UnaryOp::Log10: return floating_unary(s, t, fn::Log10{});
    case UnaryOp::Exp2: return floating_unary(s, t, fn::Exp2{});
    case UnaryOp::Erfc: return floating_unary(s, t, fn::Erfc{});
    case UnaryOp::Erfinv: return floating_unary(s, t, fn::Erfinv{});
    case UnaryOp::Lgamma: return floating_unary(s, t, fn::Lgamma{});
    case UnaryOp::Digamma: return floating_unary(s, t, fn::Digamma{});
    case UnaryOp::Erfcx: return floating_unary(s, t, fn::Erfcx{});
    case UnaryOp::I0: return floating_unary(s, t, fn::I0{});
    case UnaryOp::I0e: return floating_unary(s, t, fn::I0e{});
    case UnaryOp::I1: return floating_unary(s, t, fn::I1{});
    case UnaryOp::I1e: return floating_unary(s, t, fn::I1e{});
    case UnaryOp::Ndtri: return floating_unary(s, t, fn::Ndtri{});
    case UnaryOp::BesselJ0: return floating_unary(s, t, fn::BesselJ0{});
    case UnaryOp::BesselJ1: return floating_unary(s, t, fn::BesselJ1{});
    case UnaryOp::BesselY0: return floating_unary(s, t, fn::BesselY0{});
    case UnaryOp::BesselY1: return floating_unary(s, t, fn::BesselY1{});
    case UnaryOp::ModifiedBesselI0: return floating_unary(s, t, fn::ModifiedBesselI0{});
    case UnaryOp::ModifiedBesselI1: return floating_unary(s, t, fn::ModifiedBesselI1{});
    case UnaryOp::ModifiedBesselK0: return floating_unary(s, t, fn::ModifiedBesselK0{});
    case UnaryOp::ModifiedBesselK1: return floating_unary(s, t, fn::ModifiedBesselK1{});
    case UnaryOp::ScaledModifiedBesselK0: return floating_unary(s, t, fn::ScaledModifiedBesselK0{});
    case UnaryOp::ScaledModifiedBesselK1: return floating_unary(s, t, fn::ScaledModifiedBesselK1{});
    case UnaryOp::SphericalBesselJ0: return floating_unary(s, t, fn::SphericalBesselJ0{});
    case UnaryOp::AiryAi: return floating_unary(s, t, fn::AiryAi{});
    case UnaryOp::BitwiseNot:
      return dispatch_types<int64_t, int32_t, uint8_t, bool>(t, "bitwise_not",
                                                             [&]<typename T>() { unary_as<T>(s, fn::BitwiseNot{}); });
  }
}

void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b, Scalar alpha) {
  auto s = loop_shape<3>({&out, &a, &b});
  DType t = a.dtype();
  bool unit_alpha = alpha.to_double() == 1.0;
  switch (op) {
    case BinaryOp::Add:
      if (unit_alpha) return binary_all(s, t, fn::Add{});
      return add_scaled(s, t, alpha);
    case BinaryOp::Sub:
      if (unit_alpha) return binary_numeric(s, t, fn::Sub{});
      return add_scaled(s, t, alpha.is_floating() ? Scalar(-alpha.to_double()) : Scalar(-alpha.to_int()));
    case BinaryOp::Mul: return binary_all(s, t, fn::Mul{});
    case BinaryOp::Div:
      return dispatch_floating(t, "div", [&]<typename T>() { binary_as<T>(s, fn::Div{}); });
    case BinaryOp::Pow: return binary_numeric(s, t, fn::Pow{});
    case BinaryOp::Maximum: return binary_all(s, t, fn::Maximum{});
    case BinaryOp::Minimum: return binary_all(s, t, fn::Minimum{});
    case BinaryOp::DivTrunc: return binary_numeric(s, t, fn::DivTrunc{});
    case BinaryOp::DivFloor: return binary_numeric(s, t, fn::DivFloor{});
    case BinaryOp::Remainder: return binary_numeric(s, t, fn::Remainder{});
    case BinaryOp::Fmod: return binary_numeric(s, t, fn::Fmod{});
    case BinaryOp::Atan2: return binary_floating(s, t, fn::Atan2{});
    case BinaryOp::Hypot: return binary_floating(s, t, fn::Hypot{});
    case BinaryOp::Copysign: return binary_floating(s, t, fn::Copysign{});
    case BinaryOp::LogAddExp: return binary_floating(s, t, fn::LogAddExp{});
    case BinaryOp::Zeta: return binary_floating(s, t, fn::Zeta{});
    case BinaryOp::Nextafter: return binary_floating(s, t, fn::Nextafter{});
    case BinaryOp::Igamma: return binary_floating(s, t, fn::Igamma{});
    case BinaryOp::Igammac: return binary_floating(s, t, fn::Igammac{});
    case BinaryOp::StandardGammaGrad: return binary_floating(s, t, fn::StandardGammaGrad{});
    case BinaryOp::ChebyshevT:
      return binary_floating(s, t, fn::OrthogonalPolynomial<fn::special::Polynomial::ChebyshevT>{});
    case BinaryOp::ChebyshevU:
      return binary_floating(s, t, fn::OrthogonalPolynomial<fn::special::Polynomial::ChebyshevU>{});
    case BinaryOp::ChebyshevV:
      return binary_floating(s, t, fn::OrthogonalPolynomial<fn::special::Polynomial::ChebyshevV>{});
    case BinaryOp::ChebyshevW:
      return binary_floating(s, t, fn::OrthogonalPolynomial<fn::special::Polynomial::ChebyshevW>{});
    case BinaryOp::ShiftedChebyshevT:
      return binary_floating(s, t, fn::OrthogonalPolynomial<fn::special::Polynomial::ChebyshevT, true>{});
    case BinaryOp::ShiftedChebyshevU:
      return binary_floating(s, t, fn::OrthogonalPolynomial<fn::special::Polynomial::ChebyshevU, true>{});
    case BinaryOp::ShiftedChebyshevV:
      return binary_floating(s, t, fn::OrthogonalPolynomial<fn::special::Polynomial::ChebyshevV, true>{});
    case BinaryOp::ShiftedChebyshevW:
      return binary_floating(s, t, fn::OrthogonalPolynomial<fn::special::Polynomial::ChebyshevW, true>{});
    case BinaryOp::HermiteH:
      return binary_floating(s, t, fn::OrthogonalPolynomial<fn::special::Polynomial::HermiteH>{});
    case BinaryOp::HermiteHe:
      return binary_floating(s, t, fn::OrthogonalPolynomial<fn::special::Polynomial::HermiteHe>{});
    case BinaryOp::LaguerreL:
      return binary_floating(s, t, fn::OrthogonalPolynomial<fn::special::Polynomial::LaguerreL>{});
    case BinaryOp::LegendreP:
      return binary_floating(s, t, fn::OrthogonalPolynomial<fn::special::Polynomial::LegendreP>{});
    case BinaryOp::Gcd: return binary_integral(s, t, fn::Gcd{});
    case BinaryOp::ShiftLeft: return binary_integral(s, t, fn::ShiftLeft{});
    case BinaryOp::ShiftRight: return binary_integral(s, t, fn::ShiftRight{});
    case BinaryOp::Lcm: return binary_integral(s, t, fn::Lcm{});
    case BinaryOp::Fmax: return binary_all(s, t, fn::Fmax{});
    case BinaryOp::Fmin: return binary_all(s, t, fn::Fmin{});
    case BinaryOp::BitwiseAnd: return binary_integral(s, t, fn::BitwiseAnd{});
    case BinaryOp::BitwiseOr: return binary_integral(s, t, fn::BitwiseOr{});
    case BinaryOp::BitwiseXor: return binary_integral(s, t, fn::BitwiseXor{});
    case BinaryOp::Eq: return compare(s, t, fn::Eq{});
    case BinaryOp::Ne: return compare(s, t, fn::Ne{});
    case BinaryOp::Lt: return compare(s, t, fn::Lt{});
    case BinaryOp::Le: return compare(s, t, fn::Le{});
    case BinaryOp::Gt: return compare(s, t, fn::Gt{});
    case BinaryOp::Ge: return compare(s, t, fn::Ge{});
  }
}

void binary_float_scalar(BinaryOp op, const Tensor& out, const Tensor& in, Scalar value) {
  auto s = loop_shape<2>({&out, &in});
  const float v = value.to<float>();
  dispatch_types<Half, BFloat16>(out.dtype(), op_name(op), [&]<typename T>() {
    switch (op) {
      case BinaryOp::Mul: return unary_as<T>(s, fn::WithScalar<float, fn::Mul>{v});
      case BinaryOp::Div: return unary_as<T>(s, fn::WithScalar<float, fn::Div>{v});
      default: TD_CHECK(false, op_name(op), ": no float-scalar kernel (only mul and div have one)");
    }
  });
}

void clamp(const Tensor& out, const Tensor& in, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  auto s = loop_shape<2>({&out, &in});
  dispatch_numeric(out.dtype(), "clamp", [&]<typename T>() {
    using M = opmath_t<T>;
    fn::Clamp<M> f{lo ? lo->to<M>() : M(0), hi ? hi->to<M>() : M(0), lo.has_value(), hi.has_value()};
    unary_as<T>(s, f);
  });
}

void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  auto s = loop_shape<4>({&out, &cond, &a, &b});
  dispatch_all(out.dtype(), "where", [&]<typename T>() {
    // The condition is read as bytes: GCC vectorises no loop that loads a bool.
    elementwise<T, uint8_t, T, T>(s, [](uint8_t c, T x, T y) { return c != 0 ? x : y; });
  });
}

void addcmul(const Tensor& out, const Tensor& self, const Tensor& a, const Tensor& b, double value) {
  auto s = loop_shape<4>({&out, &self, &a, &b});
  dispatch_floating(out.dtype(), "addcmul_", [&]<typename T>() {
    using M = opmath_t<T>;
    elementwise<T, T, T, T>(s, fn::AddCMul<T, M>{static_cast<M>(value)});
  });
}

void keep_scale(const Tensor& out, const Tensor& x, const Tensor& mask, double scale) {
  auto s = loop_shape<3>({&out, &x, &mask});
  dispatch_floating(out.dtype(), "dropout_backward", [&]<typename T>() {
    using M = opmath_t<T>;
    elementwise<T, T, uint8_t>(s, fn::KeepScale<T, M>{static_cast<M>(scale)});
  });
}

void masked_fill(const Tensor& self, const Tensor& mask, Scalar value) {
  auto s = loop_shape<2>({&self, &mask});
  dispatch_all(self.dtype(), "masked_fill", [&]<typename T>() {
    T v = value.to<T>();
    for_each_run(s, kElementwiseGrain, [&](char** p, const int64_t* st, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        if (at<const bool>(p[1], i, st[1])) at<T>(p[0], i, st[0]) = v;
      }
    });
  });
}

void copy(const Tensor& dst, const Tensor& src) {
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() && dst.sizes() == src.sizes()) {
    char* d = static_cast<char*>(dst.data_ptr());
    const char* from = static_cast<const char*>(src.data_ptr());
    const int64_t bytes = static_cast<int64_t>(dst.nbytes());
    parallel_for(0, bytes, kElementwiseGrain * 16, [&](int64_t b, int64_t e) { std::memcpy(d + b, from + b, e - b); });
    return;
  }
  auto s = loop_shape<2>({&dst, &src});
  dispatch_all(dst.dtype(), "copy", [&]<typename To>() {
    dispatch_all(src.dtype(), "copy", [&]<typename From>() {
      elementwise<To, From>(s, [](From x) { return convert<To>(x); });
    });
  });
}

// Each block of the output is filled from the first input and the rest are added while it is
// still in cache.
void add_n(const Tensor& out, const std::vector<Tensor>& inputs) {
  constexpr int64_t kBlock = 4096;
  const int64_t n = out.numel();
  dispatch_numeric(out.dtype(), "add_n", [&]<typename T>() {
    using Acc = opmath_t<T>;
    std::vector<const T*> src;
    for (const Tensor& t : inputs) src.push_back(static_cast<const T*>(t.data_ptr()));
    T* dst = static_cast<T*>(out.data_ptr());
    parallel_for(0, (n + kBlock - 1) / kBlock, 16, [&](int64_t first, int64_t last) {
      Acc acc[kBlock];
      for (int64_t b = first; b < last; ++b) {
        const int64_t begin = b * kBlock, len = std::min(kBlock, n - begin);
        for (int64_t i = 0; i < len; ++i) acc[i] = static_cast<Acc>(src[0][begin + i]);
        for (size_t k = 1; k < src.size(); ++k) {
          const T* s = src[k] + begin;
          for (int64_t i = 0; i < len; ++i) acc[i] = fn::sum(acc[i], static_cast<Acc>(s[i]));
        }
        for (int64_t i = 0; i < len; ++i) dst[begin + i] = static_cast<T>(acc[i]);
      }
    });
  });
}

void fill(const Tensor& dst, Scalar value) {
  auto s = loop_shape<1>({&dst});
  dispatch_all(dst.dtype(), "fill", [&]<typename T>() {
    T v = value.to<T>();
    for_each_run(s, kElementwiseGrain, [&](char** p, const int64_t* st, int64_t n) {
      if (st[0] == sizeof(T)) {
        T* out = reinterpret_cast<T*>(p[0]);
        for (int64_t i = 0; i < n; ++i) out[i] = v;
      } else {
        for (int64_t i = 0; i < n; ++i) at<T>(p[0], i, st[0]) = v;
      }
    });
  });
}

}  // namespace tandem::kernels::cpu
