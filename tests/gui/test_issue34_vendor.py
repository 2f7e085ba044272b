"""Issue 34, the vendor's story: an empty folder is said where it is added (nothing left behind),
a typed path to an existing manifest is replaced only after asking, offers named in other
scripts keep workspaces of their own and are listed by name, and the wizard's words agree
with Settings."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QPoint, QTimer
from PySide6.QtWidgets import QApplication, QMessageBox, QPushButton, QWizard

from overlap_desktop import api
from overlap_desktop.gui import export_wizard as ew
from overlap_desktop.gui.settings_dialog import SettingsDialog
from overlap_desktop.gui.workspaces_dialog import WorkspacesDialog
from tests.gui.wizard_steps import fingerprinted_wizard


def _answer(button_text: str, seen: list[str]) -> None:
    """Click ``button_text`` in the modal question as soon as it is open (a real QMessageBox)."""

    def click() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(20, click)
            return
        seen.append(box.text())
        button = next(b for b in box.findChildren(QPushButton) if b.text() == button_text)
        button.click()

    QTimer.singleShot(0, click)


def _workspaces() -> list[str]:
    root = api.vendor_workspaces_root()
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def test_vendor_story_empty_folder_then_an_existing_manifest(qtbot: Any, state: Any, footage: dict[str, Path],
                                                            tmp_path: Path) -> None:
    wiz = ew.ExportWizard(state)
    qtbot.addWidget(wiz)
    wiz.show()
    page = wiz.folders_page
    button_at = page.add_button.mapTo(page, QPoint(0, 0))

    # An empty folder: said on this page, at once; the wizard does not go on.
    empty = tmp_path / "Offre été 日本"
    empty.mkdir()
    (empty / "notes.txt").write_text("no footage here")
    with qtbot.waitSignal(page.footage_checked, timeout=60_000) as got:
        page.add_folder(empty)
    assert got.args == [str(empty.resolve()), False]
    assert page.empty_note.isVisible() and "No footage found in this folder" in page.empty_note.text()
    assert "no footage found in this folder" in page.list.item(0).text()
    assert page.folders() == [str(empty.resolve())]  # the note is not part of the path
    assert not page.isComplete() and not wiz.button(QWizard.WizardButton.NextButton).isEnabled()
    wiz.next()
    assert wiz.currentId() == ew.PAGE_FOLDERS
    assert _workspaces() == []  # nothing made, nothing left behind
    # The hint grew (a name, a note): the Add folder button stayed where it was.
    assert page.add_button.mapTo(page, QPoint(0, 0)) == button_at

    # The right folder instead.
    page.list.item(0).setSelected(True)
    page.remove_selected()
    assert not page.empty_note.isVisible()
    offer = tmp_path / "offer"
    shutil.copytree(footage["offer"], offer)
    with qtbot.waitSignal(page.footage_checked, timeout=60_000) as got:
        page.add_folder(offer)
    assert got.args[1] is True
    page.name.setText("Offre été 日本")
    assert page.isComplete()
    wiz.next()
    qtbot.waitUntil(wiz.fingerprint.isComplete, timeout=120_000)
    assert _workspaces() == ["Offre-été-日本"]
    wiz.next()
    qtbot.waitUntil(wiz.dedupe.isComplete, timeout=120_000)
    wiz.next()
    opts = wiz.options_page
    assert wiz.currentId() == ew.PAGE_OPTIONS

    # A typed path to a manifest already there: asked, and kept when the seller says so.
    existing = tmp_path / "quoted.ovlm"
    existing.write_bytes(b"the manifest whose seal was quoted")
    opts.out.setText(str(existing))
    seen: list[str] = []
    _answer("Choose another name", seen)
    wiz.next()
    assert seen and "quoted.ovlm already exists" in seen[0] and "seal" in seen[0]
    assert wiz.currentId() == ew.PAGE_OPTIONS
    assert existing.read_bytes() == b"the manifest whose seal was quoted"
    # Replace, when asked again and agreed.
    _answer("Replace", seen)
    with qtbot.waitSignal(wiz.save.done, timeout=60_000):
        wiz.next()
    assert len(seen) == 2 and wiz.currentId() == ew.PAGE_SAVE
    assert api.inspect_manifest(existing)["label"] == "Offre été 日本"
    # Saved: Finish, without Cancel or Back beside it.
    assert wiz.button(QWizard.WizardButton.FinishButton).isVisible()
    assert not wiz.button(QWizard.WizardButton.CancelButton).isVisible()
    assert not wiz.button(QWizard.WizardButton.BackButton).isVisible()

    # The manager lists the offer by its name, and says it is finished.
    dialog = WorkspacesDialog(wiz)
    qtbot.addWidget(dialog)
    assert dialog.table.item(0, 0).text() == "Offre été 日本"
    assert dialog.table.item(0, 1).text() == "manifest saved"


def test_a_browsed_path_is_not_asked_twice(qtbot: Any, state: Any, tmp_path: Path, monkeypatch: Any) -> None:
    """The save dialog already asked before replacing: the wizard does not ask again."""
    wiz = ew.ExportWizard(state)
    qtbot.addWidget(wiz)
    opts = wiz.options_page
    existing = tmp_path / "offer.ovlm"
    existing.write_bytes(b"x")
    monkeypatch.setattr(ew.QFileDialog, "getSaveFileName", staticmethod(lambda *_a: (str(existing), "")))
    asked: list[Path] = []
    monkeypatch.setattr(opts, "ask_replace", lambda p: asked.append(p) or False)
    opts._browse()
    assert opts.validatePage() and asked == []
    opts.out.setText(str(tmp_path / "other.ovlm"))
    (tmp_path / "other.ovlm").write_bytes(b"y")
    assert not opts.validatePage() and asked == [tmp_path / "other.ovlm"]


def test_an_empty_folder_that_reaches_fingerprinting_leaves_no_workspace(state: Any, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    workspace = api.vendor_workspace("Nothing here")
    summary = ew.fingerprint_offer([str(empty)], workspace, "Nothing here", state.config())
    assert summary.files_seen == 0 and not workspace.exists()


def test_offers_named_in_other_scripts_get_their_own_workspaces(qtbot: Any, state: Any) -> None:
    names = ["Offre été 日本", "Offre été 中国", "日本", "中国", "!!!", "???"]
    folders = [api.vendor_workspace(n) for n in names]
    assert len({f.name for f in folders}) == len(names)
    assert folders[0].name == "Offre-été-日本" and folders[2].name == "日本"
    assert api.vendor_workspace("Q3 kitchen teleop").name == "Q3-kitchen-teleop"  # as before
    # Their manifests' suggested file names differ too (both were "Offre-ete.ovlm"); invisible
    # characters a name may carry never reach a file name.
    assert api.file_name_for(names[0], ".ovlm") != api.file_name_for(names[1], ".ovlm")
    assert api.file_name_for(names[0], ".ovlm") == "Offre-été-日本.ovlm"
    assert api.file_name_for("gpj\u202eexe.mp4", ".ovlm") == "gpj-exe.mp4.ovlm"
    assert api.file_name_for("Q3 kitchen teleop", "-report.html") == "Q3-kitchen-teleop-report.html"
    # Listed by the names the seller typed, unfinished ones said so.
    api.note_vendor_workspace(folders[0], label=names[0], finished=True)
    api.note_vendor_workspace(folders[1], label=names[1], finished=False)
    dialog = WorkspacesDialog()
    qtbot.addWidget(dialog)
    rows = {dialog.table.item(r, 0).text(): dialog.table.item(r, 1).text() for r in range(dialog.table.rowCount())}
    assert rows == {"Offre été 日本": "manifest saved", "Offre été 中国": "unfinished: no manifest saved yet"}
    assert "(1 unfinished)" in dialog.status.text()


def test_duplicates_headline_says_why_rows_add_up_to_more(qtbot: Any, state: Any, footage: dict[str, Path],
                                                         tmp_path: Path) -> None:
    """Three copies of one clip: the third repeats both others, so its rows add up to twice the time
    they cover; the headline says so instead of disagreeing silently."""
    offer = tmp_path / "triple"
    offer.mkdir()
    for name in ("a.mp4", "b.mp4", "c.mp4"):
        shutil.copy(footage["offer"] / "offer-new.mp4", offer / name)
    wiz = fingerprinted_wizard(qtbot, state, offer)
    wiz.next()
    qtbot.waitUntil(wiz.dedupe.isComplete, timeout=120_000)
    report = wiz.dedupe.result
    listed = sum(s.query_end - s.query_start for f in report.files for s in f.segments)
    assert listed > report.matched_seconds + 0.5  # the rows do overlap
    text = wiz.dedupe.status.text()
    assert f"add up to {api.format_duration(listed)}" in text
    assert f"counted once, they are {api.format_duration(report.matched_seconds)}" in text


def test_fingerprints_per_second_read_the_same_in_settings_and_the_wizard(qtbot: Any, state: Any) -> None:
    settings = SettingsDialog(state)
    qtbot.addWidget(settings)
    wiz = ew.ExportWizard(state)
    qtbot.addWidget(wiz)
    opts = wiz.options_page
    opts.initializePage()
    assert settings.fps.decimals() == opts.fps.decimals() == 2
    taken = float(state.config()["index.fps"])
    assert settings.fps.textFromValue(settings.fps.value()) == f"{taken:.2f}"
    assert f"{taken:.2f} per second" in opts.fps_note.text()
    assert opts.fps.maximum() <= taken  # a manifest cannot keep more than was taken
    assert "manifest" in settings.fps.toolTip()


def test_a_folder_that_cannot_be_listed_says_so_not_no_footage(qtbot: Any, state: Any, tmp_path: Path,
                                                              monkeypatch: Any) -> None:
    """No permission (or a drive gone): the folder is named with the reason, never called empty."""
    import os

    locked = tmp_path / "locked"
    locked.mkdir()
    real_scandir = os.scandir

    def scandir(path: Any) -> Any:
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.raises(api.InputError, match="cannot list this folder: Permission denied") as err:
        api.folder_has_footage(locked)
    assert err.value.path == str(locked)
    wiz = ew.ExportWizard(state)
    qtbot.addWidget(wiz)
    wiz.show()
    page = wiz.folders_page
    with qtbot.waitSignal(page.footage_checked, timeout=60_000) as got:
        page.add_folder(locked)
    assert got.args[1] is False and not page.isComplete()
    assert "could not be read" in page.list.item(0).text()
    note = page.empty_note.text()
    assert "Permission denied" in note and "locked" in note and "No footage found" not in note


def test_a_failed_save_offers_back(qtbot: Any, state: Any, footage: dict[str, Path], tmp_path: Path) -> None:
    """The last page hides Back once saved; when saving fails, the way back is there and said."""
    wiz = fingerprinted_wizard(qtbot, state, footage["offer"])
    wiz.next()
    qtbot.waitUntil(wiz.dedupe.isComplete, timeout=120_000)
    wiz.next()
    (tmp_path / "a-file").write_text("not a folder")
    wiz.options_page.out.setText(str(tmp_path / "a-file" / "offer.ovlm"))
    with qtbot.waitSignal(wiz.save.error, timeout=60_000):
        wiz.next()
    assert wiz.currentId() == ew.PAGE_SAVE and not wiz.save.isComplete()
    assert "Click Back" in wiz.save.status.text()
    assert wiz.button(QWizard.WizardButton.BackButton).isVisible()
    assert wiz.button(QWizard.WizardButton.CancelButton).isVisible()  # not saved: Cancel stays


def test_a_workspace_holding_only_its_note_can_be_removed(tmp_path: Path) -> None:
    from overlap_desktop.services import workspaces as ws

    root = tmp_path / "workspaces"
    folder = root / "stopped-early"
    ws.note_vendor_workspace(folder, label="Stopped early", finished=False)
    assert [w.title for w in ws.list_vendor_workspaces(root)] == ["Stopped early"]
    ws.remove_vendor_workspace(folder, root=root)
    assert ws.list_vendor_workspaces(root) == []


def test_the_offer_name_follows_the_folders_until_typed(qtbot: Any, state: Any, tmp_path: Path) -> None:
    """Seen under Xvfb: the name taken from a folder removed again stayed on the offer."""
    for name in ("Wrong folder", "Q3 kitchen", "More"):
        (tmp_path / name).mkdir()
    wiz = ew.ExportWizard(state)
    qtbot.addWidget(wiz)
    page = wiz.folders_page
    page.add_folder(tmp_path / "Wrong folder")
    assert page.offer_name() == "Wrong folder"
    page.list.item(0).setSelected(True)
    page.remove_selected()
    assert page.offer_name() == ""
    page.add_folder(tmp_path / "Q3 kitchen")
    assert page.offer_name() == "Q3 kitchen"
    page.name.setText("Kitchen offer")
    page.list.item(0).setSelected(True)
    page.remove_selected()
    page.add_folder(tmp_path / "More")
    assert page.offer_name() == "Kitchen offer"  # typed: never replaced
    qtbot.waitUntil(lambda: all(not j.running for j in page.check_jobs), timeout=60_000)


def test_the_folder_page_names_the_robot_dataset_formats_it_reads(qtbot: Any, state: Any, tmp_path: Path) -> None:
    """Seen in the regenerated screenshot: a seller of ALOHA/robomimic HDF5, RLDS or zarr episodes was
    told only of videos, bags, MCAP, LeRobot and image folders, on the page and in its empty-folder note."""
    wiz = ew.ExportWizard(state)
    qtbot.addWidget(wiz)
    page = wiz.folders_page
    empty = tmp_path / "nothing here"
    empty.mkdir()
    with qtbot.waitSignal(page.footage_checked, timeout=60_000):
        page.add_folder(empty)
    for words in (page.subTitle(), page.empty_note.text()):
        assert all(name in words for name in ("HDF5", "RLDS", "zarr", "LeRobot", "ROS bags", "MCAP")), words
