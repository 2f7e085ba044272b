"""The upper tail of Student's t distribution, in log10, accurate far into the tail.

Why not ``scipy.special.stdtr``: it is the only scipy function the product uses, and importing
``scipy.special`` brings OpenBLAS and gfortran along (~35 MB of the installed folder, whose
Windows budget is 200 MB). The tail is one regularized incomplete beta function,
``sf(t; v) = I_x(v/2, 1/2) / 2`` with ``x = v / (v + t^2)``, evaluated with the standard
continued fraction (modified Lentz), whose prefactor is taken in logs so that tails of 1e-200
keep their digits. tests/unit/test_student_t.py compares it with scipy over a grid of degrees
of freedom and ``t``.
"""

from __future__ import annotations

import math

__all__ = ["log10_t_sf"]

_TINY = 1e-300
_EPS = 1e-15
_MAX_TERMS = 500  # the fraction converges in well under 100 terms for the v and t used here


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (Numerical Recipes' betacf)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _MAX_TERMS + 1):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                   -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + aa / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _EPS:
            break
    return h


def _log_ibeta(a: float, b: float, x: float) -> float:
    """Natural log of the regularized incomplete beta ``I_x(a, b)`` for ``0 < x < 1``."""
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return log_front + math.log(_beta_fraction(a, b, x)) - math.log(a)
    # The fraction converges fast only on this side: use I_x(a, b) = 1 - I_{1-x}(b, a).
    rest = math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b
    return math.log(max(1.0 - rest, _TINY))


def log10_t_sf(t: float, dof: int) -> float:
    """log10 of P(T > t) for Student's t with ``dof`` degrees of freedom (``dof >= 1``)."""
    if dof < 1:
        raise ValueError(f"degrees of freedom must be at least 1, not {dof}")
    if t == 0.0:
        return math.log10(0.5)
    v = float(dof)
    x = v / (v + t * t)
    if x <= 0.0:  # t so large that t*t overflows the sum: the tail is below any float
        return math.log10(_TINY)
    tail = _log_ibeta(v / 2.0, 0.5, x) / math.log(10.0) + math.log10(0.5)  # P(T > |t|)
    if t > 0:
        return max(tail, math.log10(_TINY))
    return math.log10(1.0 - 10.0 ** tail)
