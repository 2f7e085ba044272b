"""The verify wizard audits by default: "check the footage is what was quoted", with progress,
Stop and Continue; quote against delivery per file, a changed verdict standing out; the delivery
added to My library. Driven with the mouse and the keyboard (offscreen).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QPoint, Qt

from overlap_desktop import api
from overlap_desktop.gui import verify_wizard as vw
from overlap_desktop.gui.state import AppState
from tests.audit_world import build_world


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_world(tmp_path_factory.mktemp("audit-gui"))


def _walk_to_result(qtbot: Any, wiz: vw.VerifyWizard, manifest: Path, folder: Path, *, add: bool = False) -> None:
    qtbot.keyClicks(wiz.manifest_page.edit, str(manifest))
    qtbot.waitUntil(lambda: wiz.manifest_page.info is not None, timeout=30_000)
    qtbot.mouseClick(wiz.button(wiz.WizardButton.NextButton), Qt.MouseButton.LeftButton)
    assert wiz.currentId() == vw.PAGE_FOLDER
    assert wiz.audit_options.audit.isChecked() and not wiz.audit_options.add.isChecked()  # audits by default
    qtbot.keyClicks(wiz.folder_page.edit, str(folder))
    if add:
        box = wiz.audit_options.add  # its indicator sits at the left of a row as wide as the page
        qtbot.mouseClick(box, Qt.MouseButton.LeftButton, pos=QPoint(8, box.height() // 2))
        assert wiz.audit_options.add.isChecked()
    qtbot.mouseClick(wiz.button(wiz.WizardButton.NextButton), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: wiz.currentId() == vw.PAGE_RESULT, timeout=120_000)


def _rows(wiz: vw.VerifyWizard) -> dict[str, list[str]]:
    t = wiz.audit_panel.table
    return {t.item(r, 0).text(): [t.item(r, c).text() for c in range(t.columnCount())] for r in range(t.rowCount())}


def test_the_wizard_finds_the_forged_quote_and_marks_the_changed_verdict(
        qtbot: Any, world: dict[str, Path], tmp_path: Path) -> None:
    lab = shutil.copytree(world["lab"], tmp_path / "lab")
    wiz = vw.VerifyWizard(AppState({"index.path": str(lab)}))
    qtbot.addWidget(wiz)
    wiz.show()
    _walk_to_result(qtbot, wiz, world["forged"], world["delivery"])
    # The bytes are as quoted ...
    assert wiz.result_page.verdict.text().startswith("Every quoted file is present and exact")
    # ... the footage is not.
    panel = wiz.audit_panel
    assert panel.isVisible() and panel.headline.text() == "The footage is not what was quoted"
    assert "the quoted fingerprints of take-07.mp4 are not those of its bytes" in panel.details.text()
    rows = _rows(wiz)
    assert rows["take-07.mp4"][1:5] == ["exact", "not reproduced", "12 s new", "12 s owned (changed)"]
    assert "clip0.mp4" in rows["take-07.mp4"][5]
    assert panel.table.item(0, 4).font().bold() or panel.table.item(1, 4).font().bold()
    assert rows["fresh.mp4"][2] == "reproduced" and "(changed)" not in rows["fresh.mp4"][4]
    # The receipt, from the result page.
    out = panel.save_receipt(tmp_path / "receipt.json")
    assert out is not None and json.loads(out.read_text())["ok"] is False
    assert (tmp_path / "receipt.html").is_file()
    # Offered afterwards: the delivery added to My library.
    assert panel.add_button.isVisible()
    qtbot.mouseClick(panel.add_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.add_note.text().startswith("Added to My library"), timeout=120_000)
    names = {Path(f.path).name for f in api.library_files(lab)}
    assert {"take-07.mp4", "fresh.mp4"} <= names


def test_the_honest_quote_audits_clean_and_is_added_in_the_same_pass(
        qtbot: Any, world: dict[str, Path], tmp_path: Path) -> None:
    lab = shutil.copytree(world["lab"], tmp_path / "lab")
    wiz = vw.VerifyWizard(AppState({"index.path": str(lab)}))
    qtbot.addWidget(wiz)
    wiz.show()
    _walk_to_result(qtbot, wiz, world["honest"], world["delivery"], add=True)
    panel = wiz.audit_panel
    assert panel.headline.text() == "The footage is what was quoted"
    assert {r[2] for r in _rows(wiz).values()} == {"reproduced"}
    assert not panel.add_button.isVisible() and "2 delivered files were added" in panel.add_note.text()
    assert {"take-07.mp4", "fresh.mp4"} <= {Path(f.path).name for f in api.library_files(lab)}


def test_stop_and_continue_finish_the_audit(qtbot: Any, world: dict[str, Path], tmp_path: Path) -> None:
    from tests.resume_clips import write_long_clip

    delivery = tmp_path / "delivery"
    write_long_clip(delivery / "long.mp4")
    api.index_paths([delivery], index=tmp_path / "vendor", config=api.load_config(
        {"index.path": str(tmp_path / "vendor")}, environ={}))
    api.export_manifest(tmp_path / "vendor", tmp_path / "q.ovlm", sign=False,
                        config=api.load_config({"index.path": str(tmp_path / "vendor")}, environ={}))
    wiz = vw.VerifyWizard(AppState({"index.path": str(tmp_path / "lab")}))
    qtbot.addWidget(wiz)
    wiz.show()
    qtbot.keyClicks(wiz.manifest_page.edit, str(tmp_path / "q.ovlm"))
    qtbot.waitUntil(lambda: wiz.manifest_page.info is not None, timeout=30_000)
    qtbot.mouseClick(wiz.button(wiz.WizardButton.NextButton), Qt.MouseButton.LeftButton)
    qtbot.keyClicks(wiz.folder_page.edit, str(delivery))
    qtbot.mouseClick(wiz.button(wiz.WizardButton.NextButton), Qt.MouseButton.LeftButton)
    page = wiz.hash_page
    assert wiz.currentId() == vw.PAGE_HASH and page.cancel_button.isVisible()
    qtbot.mouseClick(page.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: page.job is not None and not page.job.running, timeout=120_000)
    if wiz.currentId() == vw.PAGE_HASH:  # stopped before the end (the usual case): carry on
        assert page.continue_button.isVisible() and "Continue" in page.status.text()
        qtbot.mouseClick(page.continue_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: wiz.currentId() == vw.PAGE_RESULT, timeout=120_000)
    assert wiz.audit_panel.headline.text() == "The footage is what was quoted"
