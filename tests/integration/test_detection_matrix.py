"""Every row of detection_matrix.toml, executed: part "a" of the rows (part "b" is in
test_detection_matrix_b.py, so the two halves run on two workers at once).

Footage, indexes and comparisons are made by the session fixtures of tests/fixtures_matrix.py. A
"designed to detect" row must find the right owned file, the segment spans within 1 s, the speed
within 3% where speed changed, and the variant; a "not detected" row must report no segment at or
above the evidence floor.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.fixtures_matrix import PARTS, RECIPES, ROWS, check_row

# The slowest module of the suite: scheduled before the others (tests/conftest.py).
pytestmark = pytest.mark.schedule_first


def test_every_row_has_a_recipe() -> None:
    assert set(RECIPES) == set(ROWS)


def test_every_row_is_in_exactly_one_part() -> None:
    rows = [rid for part in PARTS.values() for rid in part]
    assert sorted(rows) == sorted(ROWS), "a row is missing from the parts or tested twice"


@pytest.mark.slow
@pytest.mark.parametrize("rid", PARTS["a"])
def test_row(rid: str, matrix_part_a: dict[str, Any]) -> None:
    check_row(rid, matrix_part_a[rid])
