"""Prints the rows of tests/kernels/standard_gamma_test.cc: dx/da of a Gamma(a, 1) draw x at a fixed
quantile, -(dP(a, x) / da) / (x^(a-1) e^-x / Gamma(a)), at 60 digits.

P comes from its series where x < a + 1 and 1 - Q from the continued fraction elsewhere (as in
make_incomplete_gamma_table.py: each converges for every a, x > 0), differentiated in a by mpmath's
numerical differentiation at 80 digits, so the 17 printed digits are exact.

    python3 tests/kernels/make_standard_gamma_grad_table.py   # any Python with mpmath
"""
import mpmath as mp

mp.mp.dps = 80

POINTS = [
    (1e-3, 1e-200), (1e-3, 0.5), (0.01, 1e-30), (0.3, 0.01), (0.3, 2.0), (0.9, 0.5), (1.0, 1.0),
    (1.0, 0.01), (1.0, 30.0), (2.5, 0.1), (2.5, 2.5), (2.5, 3.6), (7.0, 20.0), (30.0, 25.0),
    (30.0, 30.7), (30.0, 60.0), (150.0, 750.0), (1000.0, 1000.5), (1000.0, 2000.0), (1e4, 9800.0),
    (1e4, 10500.0), (1e5, 100300.0), (1e6, 998000.0), (2e7, 20003000.0), (2e7, 19991000.0),
    (1e8, 100005000.0), (1e7, 1.25e7), (1e7, 0.75e7), (1e12, 1.001e12), (1e12, 0.9995e12),
]


def lower(a, x):
    term = total = mp.mpf(1)
    n = 1
    while term > total * mp.mpf(10) ** -75:
        term *= x / (a + n)
        total += term
        n += 1
    return mp.exp(a * mp.log(x) - x - mp.loggamma(a + 1)) * total


def upper(a, x):
    tiny = mp.mpf(10) ** -900
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b
    f = d
    n = 1
    while True:
        an = -n * (n - a)
        b += 2
        d = 1 / (an * d + b)
        c = b + an / c
        f *= c * d
        n += 1
        # Not before 200 terms: near a = 1, a_1 = -(1 - a) is about mp.diff's step, and every later
        # term moves the fraction by that factor less than the tolerance, while its derivative in a
        # needs them (mpmath's own gammainc confirms the rows it can reach, below).
        if n > 200 and abs(c * d - 1) < mp.mpf(10) ** -75:
            return mp.exp(a * mp.log(x) - x - mp.loggamma(a)) * f


for a, x in POINTS:
    am, xm = mp.mpf(a), mp.mpf(x)
    density = mp.exp((am - 1) * mp.log(xm) - xm - mp.loggamma(am))
    if x < a + 1:
        grad = -mp.diff(lambda s: lower(s, xm), am) / density
    else:
        grad = mp.diff(lambda s: upper(s, xm), am) / density
    if a <= 1000:  # mpmath's own gammainc agrees where it converges (the smaller tail of the two)
        if x < a + 1:
            check = -mp.diff(lambda s: mp.gammainc(s, 0, xm, regularized=True), am) / density
        else:
            check = mp.diff(lambda s: mp.gammainc(s, xm, mp.inf, regularized=True), am) / density
        assert abs(check - grad) <= abs(grad) * mp.mpf(10) ** -30, (a, x)
    print(f"      {{{a!r}, {x!r}, {mp.nstr(grad, 17)}}},")
