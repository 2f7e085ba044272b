"""The vendor wizard's earlier offers: how much they keep, and removing them from the app."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QMessageBox

from overlap_desktop import api
from overlap_desktop.gui import export_wizard as ew
from overlap_desktop.gui.workspaces_dialog import WorkspacesDialog


def _offer_workspace(name: str, size: int) -> Path:
    folder = api.vendor_workspaces_root() / name
    folder.mkdir(parents=True)
    (folder / "index.sqlite3").write_bytes(b"x" * size)
    return folder


def test_no_earlier_offers_shows_nothing(qtbot: Any, state: Any) -> None:
    wiz = ew.ExportWizard(state)
    qtbot.addWidget(wiz)
    wiz.show()
    assert not wiz.folders_page.earlier.isVisible()
    assert not wiz.folders_page.manage.isVisible()


def test_earlier_offers_are_listed_and_removed_after_confirmation(qtbot: Any, state: Any,
                                                                  monkeypatch: Any) -> None:
    old = _offer_workspace("Q2-warehouse", 3 * 1024 * 1024)
    kept = _offer_workspace("Q3-kitchen-teleop", 1024)
    wiz = ew.ExportWizard(state)
    qtbot.addWidget(wiz)
    wiz.show()
    page = wiz.folders_page
    assert page.earlier.isVisible() and page.manage.isVisible()
    assert "2 offers prepared on this computer keep 3.0 MB of fingerprints" in page.earlier.text()

    page.name.setText("Q3 kitchen teleop")
    dialog = page.manage_workspaces()  # a child of the wizard, deleted when closed
    names = [dialog.table.item(r, 0).text() for r in range(dialog.table.rowCount())]
    assert sorted(names) == ["Q2-warehouse", "Q3-kitchen-teleop  (this offer)"]
    assert not dialog.remove_button.isEnabled()

    asked: list[str] = []
    row = names.index("Q2-warehouse")
    dialog.table.selectRow(row)
    assert dialog.remove_button.isEnabled()
    # Cancelling the confirmation removes nothing.
    monkeypatch.setattr(dialog, "confirm", lambda text: asked.append(text) or False)
    dialog.remove_button.click()
    assert old.is_dir() and "Q2-warehouse (3.0 MB)" in asked[-1] and "manifests" in asked[-1]

    monkeypatch.setattr(dialog, "confirm", lambda text: True)
    dialog.table.selectRow(row)
    dialog.remove_button.click()
    assert not old.exists() and kept.is_dir()
    assert dialog.table.rowCount() == 1
    assert dialog.status.text().startswith("Freed 3.0 MB.")
    dialog.reject()
    qtbot.waitUntil(lambda: "1 offer prepared on this computer keeps 1.0 KB" in page.earlier.text(),
                    timeout=120_000)


def test_a_workspace_in_use_is_not_removed_and_the_seller_is_told(qtbot: Any, monkeypatch: Any) -> None:
    from overlap_desktop.core.index.lock import WriterLock

    busy = _offer_workspace("busy-offer", 10)
    dialog = WorkspacesDialog()
    qtbot.addWidget(dialog)
    dialog.table.selectRow(0)
    monkeypatch.setattr(dialog, "confirm", lambda text: True)
    lock = WriterLock(busy / "index.lock")
    lock.acquire()
    try:
        dialog.remove_button.click()
        boxes = [w for w in dialog.findChildren(QMessageBox) if w.isVisible()]
        assert boxes and "writing to this index" in boxes[0].text()
        assert "Could not remove busy-offer" == boxes[0].windowTitle()
    finally:
        lock.release()
    assert (busy / "index.sqlite3").exists()
    assert dialog.table.rowCount() == 1
