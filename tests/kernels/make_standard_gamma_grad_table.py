"""Prints the rows of tests/kernels/standard_gamma_test.cc: dx/da of a Gamma(a, 1) draw x at a fixed
quantile, -(dP(a, x) / da) / (x^(a-1) e^-x / Gamma(a)), at 80 digits.

P comes from its series where x < a + 1 and 1 - Q from the continued fraction elsewhere
(make_incomplete_gamma_table.py's: each converges for every a, x > 0), differentiated in a by
mpmath's numerical differentiation at 80 digits, so the 17 printed digits are exact; mpmath's own
gammainc confirms the rows it can reach (a up to 1000).

    cd tests/kernels && python3 make_standard_gamma_grad_table.py   # any Python with mpmath
"""
import mpmath as mp

from make_incomplete_gamma_table import lower, upper

mp.mp.dps = 80

POINTS = [
    (1e-3, 1e-200), (1e-3, 0.5), (0.01, 1e-30), (0.3, 0.01), (0.3, 2.0), (0.9, 0.5), (1.0, 1.0),
    (1.0, 0.01), (1.0, 30.0), (2.5, 0.1), (2.5, 2.5), (2.5, 3.6), (7.0, 20.0), (30.0, 25.0),
    (30.0, 30.7), (30.0, 60.0), (150.0, 750.0), (1000.0, 1000.5), (1000.0, 2000.0), (1e4, 9800.0),
    (1e4, 10500.0), (1e5, 100300.0), (1e6, 998000.0), (2e7, 20003000.0), (2e7, 19991000.0),
    (1e8, 100005000.0), (1e7, 1.25e7), (1e7, 0.75e7), (1e12, 1.001e12), (1e12, 0.9995e12),
]


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
