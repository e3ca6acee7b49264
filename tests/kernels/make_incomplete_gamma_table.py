"""Prints the rows of tests/kernels/incomplete_gamma_test.cc: P(a, x) and Q(a, x) at 50 digits.

mpmath's own gammainc does not converge for a in the millions, so P comes from its series and Q
from its continued fraction, evaluated at 60 digits (each converges for every a, x > 0); for a < 1
and x < a + 1, Q is mpmath's gammainc."""
import mpmath as mp

mp.mp.dps = 60

POINTS = [
    (0.5, 0.2), (1.0, 1.0), (2.0, 3.0), (3.0, 4.0), (20.0, 25.0), (20.0, 15.0), (100.0, 100.0),
    (100.0, 500.0), (1e4, 9000.0), (0.01, 1.5), (0.049, 0.7), (0.05, 0.05), (0.999, 1.998), (9.99, 11.0),
    (10.0, 10.0), (0.3, 50.0), (50.0, 0.3), (1000.0, 990.0), (1e4, 1.02e4), (2.5, 700.0), (200.0, 20.0),
    (1e-5, 1e-5), (1e-300, 1.0), (1.0022753076319726e-12, 0.9441575901985617),
    (16.45157631906217, 2.4334600903080056e-12), (1e6, 1e6 + 10), (1e6, 1e6 - 3000),
    (302463.0625, 322070.7528540939), (18938782.343949243, 18911335.467490602), (7.5, 1e-40),
    (1e8, 1e8), (3e7, 2.99e7), (5e8, 5.0003e8), (1.27e-55, 0.7775), (1e-300, 0.5),
]


def tolerance():
    return mp.mpf(10) ** (5 - mp.mp.dps)  # five digits short of the working precision


def lower(a, x):
    """P(a, x) by its series."""
    term = total = mp.mpf(1)
    n = 1
    while term > total * tolerance():
        term *= x / (a + n)
        total += term
        n += 1
    return mp.exp(a * mp.log(x) - x - mp.loggamma(a + 1)) * total


def upper(a, x):
    """Q(a, x) by its continued fraction (Lentz's method)."""
    tiny = mp.mpf(10) ** (-10 * mp.mp.dps)
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
        # Not before 200 terms: near a = 1, a_1 = -(1 - a) is tiny and every later term moves the
        # fraction by that factor less than the tolerance, while its derivative in a (what
        # make_standard_gamma_grad_table.py takes) needs them.
        if n > 200 and abs(c * d - 1) < tolerance():
            return mp.exp(a * mp.log(x) - x - mp.loggamma(a)) * f


def main():
    for a, x in POINTS:
        am, xm = mp.mpf(a), mp.mpf(x)
        if x < a + 1:
            p = lower(am, xm)
            # For a < 1, Q is the small one (1 - P would keep none of its digits): mpmath's own.
            q = mp.gammainc(am, xm, mp.inf, regularized=True) if a < 1 else 1 - p
        else:
            q = upper(am, xm)
            p = 1 - q
        print(f"      {{{a!r}, {x!r}, {mp.nstr(p, 17)}, {mp.nstr(q, 17)}}},")


if __name__ == "__main__":
    main()
