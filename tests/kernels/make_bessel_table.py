"""Prints the rows of tests/kernels/bessel_test.cc: J0, J1, Y0, Y1, K0, K1 (and scaled), Ai at 40 digits
(mpmath), at the ends of each method's range in kernels/bessel.h, near zeros, and far out."""
import mpmath as mp

mp.mp.dps = 40

JY = [1e-300, 1e-20, 1e-6, 9.99e-6, 1e-5, 1.0001e-5, 0.1, 0.5, 0.8935769662791675, 1.0, 2.0,
      2.197141326031017, 2.404825557695773, 3.8317059702075125, 5.0, 7.5, 10.0, 15.0, 20.0, 24.999,
      25.0, 25.001, 30.0, 30.634606468431976, 50.0, 100.0, 1000.0, 1e5, 1e10, 1e15, 1e300]
K = [1e-300, 1e-10, 1e-5, 0.1, 0.5, 0.999, 1.0, 1.001, 2.0, 5.0, 10.0, 50.0, 100.0, 700.0, 705.0, 720.0,
     745.0, 1e4, 1e10, 1e300]
AI = [-1e4, -1000.0, -100.0, -30.0, -11.3, -11.2, -10.0, -5.0, -2.338107410459767, -1.0001, -1.0,
      -0.5, -1e-10, 0.0, 1e-10, 0.5, 1.0, 1.0001, 1.5, 2.0, 5.0, 10.0, 50.0, 100.0, 104.0, 105.0]


def s(v):
    return repr(float(v))  # rounded to double: subnormal or 0 where the value is below double's range


print("// x, J0, J1, Y0, Y1")
for x in JY:
    X = mp.mpf(x)
    print(f"    {{{x!r}, {s(mp.besselj(0, X))}, {s(mp.besselj(1, X))}, {s(mp.bessely(0, X))}, {s(mp.bessely(1, X))}}},")
print("// x, K0, K1, e^x K0, e^x K1")
for x in K:
    X = mp.mpf(x)
    k0, k1 = mp.besselk(0, X), mp.besselk(1, X)
    print(f"    {{{x!r}, {s(k0)}, {s(k1)}, {s(k0 * mp.exp(X))}, {s(k1 * mp.exp(X))}}},")
print("// x, Ai")
for x in AI:
    print(f"    {{{x!r}, {s(mp.airyai(mp.mpf(x)))}}},")
