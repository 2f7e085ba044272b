"""Every row of detection_matrix.toml, executed: part "b" of the rows (the rows with non-default
settings, the same-rig rows and a few costly encodes; see tests/fixtures_matrix.py and
test_detection_matrix.py, which runs part "a" on another worker meanwhile)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fixtures_matrix import PARTS, check_row

# Half of the slowest work of the suite: scheduled before the other modules (tests/conftest.py).
pytestmark = pytest.mark.schedule_first


@pytest.mark.slow
@pytest.mark.parametrize("rid", PARTS["b"])
def test_row(rid: str, matrix_part_b: dict[str, Any]) -> None:
    check_row(rid, matrix_part_b[rid])
