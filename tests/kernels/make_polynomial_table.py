"""Prints the rows of tests/kernels/polynomial_test.cc: torch.special's orthogonal polynomials at 40
digits (mpmath), each beside the largest |P_k(x)| for k <= n, the scale of the recurrence's rounding."""
import mpmath as mp

mp.mp.dps = 40


def chebyshev_v(n, x):  # V_n = U_n - U_{n-1}
    return mp.chebyu(n, x) - (mp.chebyu(n - 1, x) if n > 0 else 0)


def chebyshev_w(n, x):  # W_n = U_n + U_{n-1}
    return mp.chebyu(n, x) + (mp.chebyu(n - 1, x) if n > 0 else 0)


KINDS = {
    "t": lambda n, x: mp.chebyt(n, x),
    "u": lambda n, x: mp.chebyu(n, x),
    "v": chebyshev_v,
    "w": chebyshev_w,
    "h": lambda n, x: mp.hermite(n, x),
    "he": lambda n, x: mp.hermite(n, x / mp.sqrt(2)) / mp.mpf(2) ** (mp.mpf(n) / 2),
    "l": lambda n, x: mp.laguerre(n, 0, x),
    "p": lambda n, x: mp.legendre(n, x),
}
XS = [-1.5, -0.75, 0.3125, 0.96875, 2.5]  # (x + 1) / 2 exact: the shifted kinds take the same rows
NS = [2, 5, 17, 64, 100]

for name, f in KINDS.items():
    print(f"// {name}")
    for x in XS:
        for n in NS:
            X = mp.mpf(x)
            value = f(n, X)
            scale = max(abs(f(k, X)) for k in range(n + 1))
            print(f"    {{{x!r}, {n}, {float(value)!r}, {float(scale)!r}}},")
