"""The vendor wizard's first page says what a folder without footage holds, and that a name already
used by an earlier offer reuses its workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog

from overlap_desktop import api
from overlap_desktop.gui import export_wizard as ew

LEFT = Qt.MouseButton.LeftButton


def _wizard(qtbot: Any, state: Any) -> ew.ExportWizard:
    wiz = ew.ExportWizard(state)
    qtbot.addWidget(wiz)
    wiz.show()
    return wiz


def test_no_footage_found_says_what_was_found(qtbot: Any, state: Any, tmp_path: Path, monkeypatch: Any) -> None:
    folder = tmp_path / "not footage"
    folder.mkdir()
    for name in ("notes.txt", "README.md", "frame.bmp", "dump.bin"):
        (folder / name).write_bytes(b"x" * 10)
    (folder / ".hidden.mp4").write_bytes(b"x")  # hidden: skipped by the walk, not counted
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *_a, **_k: str(folder)))
    wiz = _wizard(qtbot, state)
    page = wiz.folders_page
    with qtbot.waitSignal(page.footage_checked, timeout=60_000):
        qtbot.mouseClick(page.add_button, LEFT)
    note = page.empty_note.text()
    assert ("No footage found in this folder: not footage (4 files, none of them is video or a dataset overlap "
            "reads: .bin, .bmp, .md, .txt)") in note
    empty = tmp_path / "empty"
    empty.mkdir()
    assert api.folder_contents_words(empty) == "no files at all"
    (empty / "one.txt").write_text("x")
    assert api.folder_contents_words(empty) == "1 file, it is not video or a dataset overlap reads: .txt"


def test_an_earlier_offers_name_is_said_to_reuse_its_workspace(qtbot: Any, state: Any) -> None:
    wiz = _wizard(qtbot, state)
    earlier = wiz.workspace_for("Spring offer")
    earlier.mkdir(parents=True)
    api.note_vendor_workspace(earlier, label="Spring offer", finished=True)
    page = wiz.folders_page
    qtbot.keyClicks(page.name, "Spring offer")
    assert page.where.text().startswith("An earlier offer is named “Spring offer”: this one reuses its workspace")
    qtbot.keyClicks(page.name, " 2")  # the look-alike: a new name is a new workspace
    assert page.where.text().startswith("Fingerprints of this offer are kept in its own workspace")


def test_a_mistyped_delivery_folder_is_said_not_to_exist(qtbot: Any, state: Any, tmp_path: Path) -> None:
    from overlap_desktop.gui import verify_wizard as vw

    wiz = vw.VerifyWizard(state)
    qtbot.addWidget(wiz)
    wiz.show()
    page = wiz.folder_page
    delivered = tmp_path / "delivery"
    delivered.mkdir()
    qtbot.keyClicks(page.edit, str(tmp_path / "delivry"))
    assert page.note.text() == f"The folder {tmp_path / 'delivry'} does not exist. Check the path, or choose " \
                               "the folder with Browse…."
    assert not page.isComplete()
    page.edit.clear()
    qtbot.keyClicks(page.edit, str(delivered))  # the right folder: no message, Next can be used
    assert page.note.text() == "" and page.isComplete()
    (tmp_path / "a-file").write_text("x")
    page.edit.clear()
    qtbot.keyClicks(page.edit, str(tmp_path / "a-file"))
    assert "is a file, not a folder" in page.note.text()


def test_the_duplicate_check_is_reused_while_nothing_changed(qtbot: Any, state: Any, footage: dict[str, Path],
                                                             tmp_path: Path) -> None:
    import os
    import shutil

    from tests.gui.wizard_steps import fingerprinted_wizard

    offer = tmp_path / "twice"
    offer.mkdir()
    shutil.copy(footage["offer"] / "offer-new.mp4", offer / "take-1.mp4")
    shutil.copy(footage["offer"] / "offer-new.mp4", offer / "take-1-again.mp4")

    def dedupe_status() -> tuple[str, Any]:
        wiz = fingerprinted_wizard(qtbot, state, offer)
        wiz.next()
        qtbot.waitUntil(wiz.dedupe.isComplete, timeout=120_000)
        return wiz.dedupe.status.text(), wiz

    first, wiz = dedupe_status()
    assert "internal duplicate" in first and "unchanged since the last check" not in first
    table = wiz.dedupe.dupes
    head = table.horizontalHeader()
    assert table.rowCount() >= 1
    assert all(table.columnWidth(c) >= head.sectionSizeFromContents(c).width() for c in range(table.columnCount()))
    assert "(0 s of footage" not in wiz.fingerprint.status.text()
    again, wiz = dedupe_status()
    assert "already up to date." in wiz.fingerprint.status.text()  # nothing read: no "(0 s of footage)"
    assert again.startswith(first) and "unchanged since the last check: its answer is shown again" in again
    assert wiz.dedupe.result.files and wiz.dedupe.dupes.rowCount() == table.rowCount()
    # The look-alike: a file changed since, so the check runs again.
    os.utime(offer / "take-1.mp4", ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    changed, _wiz = dedupe_status()
    assert "unchanged since the last check" not in changed
