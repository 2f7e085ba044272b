"""The offer screen's "Made" line for a manifest made by the command line without a date."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from overlap_desktop import api


def _made(qtbot: Any, window: Any, manifest: Path) -> str:
    with qtbot.waitSignal(window.screen.inspected, timeout=120_000):
        window.open_manifest(manifest)
    return str(window.screen.fields["made"].text())


def test_an_undated_manifest_says_its_date_was_not_recorded(qtbot: Any, window: Any, lab_index: Path,
                                                            tmp_path: Path) -> None:
    undated = tmp_path / "undated.ovlm"
    api.export_manifest(lab_index, undated, label="CLI offer")
    assert not api.inspect_manifest(undated, record_vendor=False).get("created")
    made = _made(qtbot, window, undated)
    assert made.startswith("date not recorded (exported without --stamp-time) with overlap-desktop")
    dated = tmp_path / "dated.ovlm"
    api.export_manifest(lab_index, dated, label="stamped", created=True)
    created = api.inspect_manifest(dated, record_vendor=False)["created"]
    made = _made(qtbot, window, dated)
    assert made.startswith(api.format_date(created)) and "not recorded" not in made
