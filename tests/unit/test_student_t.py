"""The hand-written Student's t tail (kept so the bundle needs no scipy.special) agrees with scipy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

from overlap_desktop.core.match.student_t import log10_t_sf


@pytest.mark.parametrize("dof", [1, 2, 3, 4, 5, 7, 10, 19, 30, 59, 120, 500, 2000])
def test_agrees_with_scipy_from_the_body_to_the_far_tail(dof: int) -> None:
    for t in np.concatenate([np.linspace(-8, 8, 65), np.linspace(8, 80, 37), [150.0, 1e3, 1e5]]):
        reference = math.log10(max(float(special.stdtr(dof, -t)), 1e-300))
        assert log10_t_sf(float(t), dof) == pytest.approx(reference, rel=1e-9, abs=1e-9), (dof, t)


def test_heavier_tail_than_the_normal_for_few_states() -> None:
    # The reason it is used: 5 alike states at z = 10 are far likelier than the normal tail says.
    normal = math.log10(0.5 * math.erfc(10 / math.sqrt(2)))
    assert log10_t_sf(10.0, 4) > normal + 19  # -3.55 against -23.1
    assert log10_t_sf(10.0, 4) == pytest.approx(math.log10(float(special.stdtr(4, -10.0))), rel=1e-9)


def test_refuses_no_degrees_of_freedom() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        log10_t_sf(1.0, 0)
