"""Every button that opens a dialog, clicked with the mouse as a user does.

A widget test that calls a button's handler directly cannot see what Qt hands the handler when
the button is clicked: ``clicked`` carries ``checked`` (a bool), and a slot with an optional first
parameter receives it. "Create a signing key…" got ``False`` as the company's name and opened
nothing. Here each button gets a real mouse click; file dialogs are recorded instead of shown
(they are native, modal windows a test cannot answer).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QDialog, QFileDialog, QPushButton, QWidget

from overlap_desktop.gui import export_wizard as ew
from overlap_desktop.gui.signing import SigningKeyDialog
from tests.gui.wizard_steps import fingerprinted_wizard

LEFT = Qt.MouseButton.LeftButton


@pytest.fixture()
def file_dialogs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the title of every file dialog asked for (answered as "cancelled")."""
    asked: list[str] = []

    def recorder(kind: str) -> Any:
        def ask(_parent: QWidget | None, title: str = "", *_a: Any, **_k: Any) -> Any:
            asked.append(title)
            return "" if kind == "dir" else ("", "")
        return staticmethod(ask)

    monkeypatch.setattr(QFileDialog, "getExistingDirectory", recorder("dir"))
    monkeypatch.setattr(QFileDialog, "getOpenFileName", recorder("file"))
    monkeypatch.setattr(QFileDialog, "getSaveFileName", recorder("file"))
    return asked


def _button(parent: QWidget, text: str) -> QPushButton:
    found = [b for b in parent.findChildren(QPushButton) if b.text() == text and b.isVisible()]
    assert len(found) == 1, f"{text!r}: {len(found)} visible buttons"
    return found[0]


def test_create_a_signing_key_in_the_vendor_wizard_by_mouse_and_keyboard(
        qtbot: Any, state: Any, footage: dict[str, Path]) -> None:
    from overlap_desktop import api

    wiz = fingerprinted_wizard(qtbot, state, footage["offer"])
    wiz.next()
    qtbot.waitUntil(wiz.dedupe.isComplete, timeout=120_000)
    wiz.next()
    assert wiz.currentId() == ew.PAGE_OPTIONS
    block = wiz.options_page.signing
    qtbot.waitUntil(lambda: block.loaded, timeout=10_000)
    assert block.create_button.isVisible()
    qtbot.mouseClick(block.create_button, LEFT)
    qtbot.waitUntil(lambda: isinstance(block.dialog, SigningKeyDialog) and block.dialog.isVisible(), timeout=5_000)
    dialog = block.dialog
    assert dialog is not None and dialog.name.text() == ""  # not "False"
    qtbot.keyClicks(dialog.name, "Acme Robotics")
    qtbot.mouseClick(dialog.protect, LEFT)
    qtbot.keyClicks(dialog.pass1, "correct horse")
    qtbot.keyClicks(dialog.pass2, "correct horse")
    assert dialog.create_button.isEnabled()
    with qtbot.waitSignal(dialog.created, timeout=10_000) as got:
        qtbot.mouseClick(dialog.create_button, LEFT)
    assert got.args[0].name == "Acme Robotics"
    qtbot.waitUntil(lambda: block.info is not None and block.sign.isVisible(), timeout=10_000)
    assert block.sign.isChecked() and not block.create_button.isVisible()
    assert api.signing_key_info()[0].fingerprint == got.args[0].fingerprint


def test_file_dialog_buttons_of_the_vendor_wizard_open_their_dialogs(
        qtbot: Any, state: Any, footage: dict[str, Path], file_dialogs: list[str]) -> None:
    wiz = ew.ExportWizard(state)
    qtbot.addWidget(wiz)
    wiz.show()
    qtbot.mouseClick(wiz.folders_page.add_button, LEFT)
    assert file_dialogs == ["Choose a folder of footage"]
    wiz2 = fingerprinted_wizard(qtbot, state, footage["offer"])
    wiz2.next()
    qtbot.waitUntil(wiz2.dedupe.isComplete, timeout=120_000)
    wiz2.next()
    qtbot.mouseClick(_button(wiz2.options_page, "Browse…"), LEFT)
    assert file_dialogs[-1] == "Save the manifest"


def test_manage_earlier_offers_opens_its_dialog(qtbot: Any, state: Any) -> None:
    from overlap_desktop import api
    from overlap_desktop.gui.workspaces_dialog import WorkspacesDialog

    folder = api.vendor_workspaces_root() / "Earlier"
    folder.mkdir(parents=True)
    api.note_vendor_workspace(folder, label="Earlier", finished=True)
    wiz = ew.ExportWizard(state)
    qtbot.addWidget(wiz)
    wiz.show()
    page = wiz.folders_page
    page.refresh_earlier()
    qtbot.waitUntil(page.manage.isVisible, timeout=5_000)
    qtbot.mouseClick(page.manage, LEFT)
    qtbot.waitUntil(lambda: any(isinstance(w, WorkspacesDialog) and w.isVisible()
                                for w in QApplication.topLevelWidgets()), timeout=5_000)


def test_file_dialog_buttons_of_the_main_window_open_their_dialogs(
        qtbot: Any, window: Any, file_dialogs: list[str]) -> None:
    window.go("library")
    qtbot.mouseClick(window.library.add_button, LEFT)
    assert file_dialogs == ["Add a folder of footage to your library"]
    window.go("screen")
    qtbot.waitUntil(window.screen.open_button.isVisible, timeout=5_000)
    qtbot.mouseClick(window.screen.open_button, LEFT)
    assert file_dialogs[-1] == "Open a manifest"


def test_settings_and_verify_browse_buttons_open_their_dialogs(
        qtbot: Any, state: Any, file_dialogs: list[str]) -> None:
    from overlap_desktop.gui import verify_wizard as vw
    from overlap_desktop.gui.settings_dialog import SettingsDialog

    settings = SettingsDialog(state)
    qtbot.addWidget(settings)
    settings.show()
    qtbot.mouseClick(_button(settings, "Browse…"), LEFT)
    assert file_dialogs == ["Folder for the library's fingerprints"]
    wiz = vw.VerifyWizard(state)
    qtbot.addWidget(wiz)
    wiz.show()
    qtbot.mouseClick(_button(wiz.manifest_page, "Browse…"), LEFT)
    assert len(file_dialogs) == 2 and file_dialogs[-1] == wiz.manifest_page.title()


def test_results_export_buttons_open_the_save_dialog(qtbot: Any, report: Any,
                                                     file_dialogs: list[str]) -> None:
    from overlap_desktop.gui.results import ResultsView

    view = ResultsView()
    qtbot.addWidget(view)
    view.show()
    view.set_report(report)
    buttons = [b for b in view.findChildren(QPushButton) if b.text().startswith("Save") and b.isVisible()]
    assert buttons
    for b in buttons:
        qtbot.mouseClick(b, LEFT)
    assert file_dialogs == ["Save the report"] * len(buttons)
    assert not [d for d in view.findChildren(QDialog) if d.isVisible()]  # no error box: nothing failed


def test_open_report_opens_the_html_even_after_a_csv_was_saved(qtbot: Any, report: Any, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               _no_external_open: list[str]) -> None:
    from overlap_desktop.gui.results import ResultsView

    answers = iter([str(tmp_path / "offer-report.html"), str(tmp_path / "offer-report.csv")])
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *_a, **_k: (next(answers), "")))
    view = ResultsView()
    qtbot.addWidget(view)
    view.show()
    view.set_report(report)
    qtbot.mouseClick(_button(view, "Save report (HTML)…"), LEFT)
    qtbot.mouseClick(_button(view, "Save CSV…"), LEFT)
    assert (tmp_path / "offer-report.csv").is_file() and (tmp_path / "offer-report.html").is_file()
    qtbot.mouseClick(view.open_button, LEFT)
    assert _no_external_open == [str(tmp_path / "offer-report.html")]
