"""Start-up, the home page, menus, drag and drop, recent files and window state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QApplication, QMessageBox

from overlap_desktop import __version__
from overlap_desktop.gui.app import main
from overlap_desktop.gui.main_window import MainWindow


def _visible_windows() -> set[int]:
    app = QApplication.instance()
    return {id(w) for w in QApplication.topLevelWidgets() if w.isVisible()} if app else set()


def test_version_prints_without_a_window(capsys: Any) -> None:
    # Only windows *shown* by --version count: widgets left over by earlier tests may be
    # deleted meanwhile (their ids vanish), whatever order the tests run in.
    before = _visible_windows()
    assert main(["--version"]) == 0
    assert f"overlap-desktop {__version__}" in capsys.readouterr().out
    assert _visible_windows() - before == set()


def test_self_test_shows_the_window_and_exits_0(qapp: Any, capsys: Any, tmp_path: Path) -> None:
    assert main(["--self-test", "--index", str(tmp_path / "idx")]) == 0
    assert "self-test: ok" in capsys.readouterr().out


def test_bad_arguments_exit_2(capsys: Any) -> None:
    assert main(["--no-such-flag"]) == 2


def test_home_offers_four_choices_in_plain_words(window: MainWindow) -> None:
    home = window.home
    assert set(home.buttons) == {"screen", "export", "verify", "library"}
    titles = [b.accessibleName() for b in home.buttons.values()]
    assert titles == ["Screen an offer", "Prepare a manifest for a buyer", "Verify a delivery", "My library"]
    for b in home.buttons.values():
        assert b.accessibleDescription()  # explained, not just labelled
    # The demo button is either usable or disabled with a reason; never a dead end without one.
    assert home.demo_button.toolTip()


def test_choices_and_shortcuts_switch_pages(qtbot: Any, window: MainWindow) -> None:
    qtbot.mouseClick(window.home.buttons["library"], Qt.MouseButton.LeftButton)
    assert window.current_page_key() == "library"
    window.act_home.trigger()
    assert window.current_page_key() == "home"
    assert window.act_screen.shortcut().toString() == "Ctrl+2"
    window.act_screen.trigger()
    assert window.current_page_key() == "screen"


def test_status_bar_names_the_index_location(window: MainWindow, state: Any) -> None:
    assert str(state.index_path) in window.index_label.text()


def _drop(window: MainWindow, paths: list[Path]) -> None:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    ev = QDropEvent(QPointF(QPoint(50, 50)), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                    Qt.KeyboardModifier.NoModifier)
    window.dropEvent(ev)


def test_dropping_a_bad_manifest_gives_a_clear_message(qtbot: Any, window: MainWindow,
                                                       tmp_path: Path) -> None:
    bad = tmp_path / "broken-offer.ovlm"
    bad.write_bytes(b"this is not a manifest at all" * 10)
    screen = window.screen
    with qtbot.waitSignal(screen.failed, timeout=120_000) as blocker:
        _drop(window, [bad])
    message = blocker.args[0]
    assert "broken-offer.ovlm" in message
    assert "Traceback" not in message
    assert window.current_page_key() == "screen"
    boxes = [w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible()]
    assert boxes and boxes[-1].detailedText()  # the detail is one click away, not in the message
    for b in boxes:
        b.close()


def test_dropping_a_folder_asks_before_adding(qtbot: Any, window: MainWindow, tmp_path: Path,
                                              monkeypatch: Any) -> None:
    folder = tmp_path / "footage"
    folder.mkdir()
    box = window.handle_dropped([folder])
    assert isinstance(box, QMessageBox)
    added: list[list[str]] = []
    monkeypatch.setattr(window.library, "add_folders", lambda f: added.append(f))
    box.done(QMessageBox.StandardButton.No)
    assert added == []
    box = window.handle_dropped([folder])
    box.done(QMessageBox.StandardButton.Yes)
    assert added == [[str(folder)]]
    assert window.current_page_key() == "library"


def test_dropping_something_else_explains_what_is_accepted(window: MainWindow, tmp_path: Path) -> None:
    f = tmp_path / "clip.mp4"
    f.write_bytes(b"x")
    box = window.handle_dropped([f])
    assert box is not None and "manifest" in box.text()
    box.close()


def test_recent_manifests_menu(window: MainWindow, state: Any, tmp_path: Path) -> None:
    assert not window.recent_menu.isEnabled()
    p = tmp_path / "a.ovlm"
    p.write_bytes(b"")
    state.add_recent(p)
    assert window.recent_menu.isEnabled()
    names = [a.text() for a in window.recent_menu.actions()]
    assert "a.ovlm" in names


def test_window_geometry_is_restored(qtbot: Any, state: Any) -> None:
    w = MainWindow(state)
    qtbot.addWidget(w)
    w.show()
    w.resize(777, 555)
    w.close()
    w2 = MainWindow(state)
    qtbot.addWidget(w2)
    assert (w2.width(), w2.height()) == (777, 555)


def test_menu_actions_open_the_wizards_and_settings(qtbot: Any, window: MainWindow) -> None:
    window.act_verify.trigger()
    wiz = window._dialogs[-1]
    assert wiz.windowTitle() == "Verify a delivery" and wiz.manifest_page.edit.text() == ""
    wiz.close()
    window.act_export.trigger()
    assert window._dialogs[-1].windowTitle() == "Prepare a manifest for a buyer"
    window._dialogs[-1].close()
    window.act_settings.trigger()
    assert window._dialogs[-1].windowTitle() == "Settings"
    window._dialogs[-1].close()


def test_a_manifest_argument_opens_screen_an_offer(qtbot: Any, tmp_path: Path, offer_manifest: Path) -> None:
    """File association: ``overlap-desktop offer.ovlm`` starts on "Screen an offer" with it."""
    from overlap_desktop.gui.app import launch

    w = launch([str(offer_manifest), "--index", str(tmp_path / "idx")])
    assert isinstance(w, MainWindow)
    qtbot.addWidget(w)
    assert w.isVisible() and w.current_page_key() == "screen"
    assert w.screen.manifest_path == offer_manifest
    qtbot.waitUntil(lambda: w.screen.summary is not None, timeout=120_000)


def test_without_the_x11_libraries_the_app_says_so_in_one_line(monkeypatch: Any, capsys: Any) -> None:
    """A Linux machine whose dynamic linker cannot find libxcb-cursor0, libxcb-icccm4 and
    libxcb-keysyms1: one line naming them and the apt command, exit 1, no Qt abort."""
    import ctypes
    import sys
    from pathlib import Path

    import pytest

    from overlap_desktop.gui import app
    from overlap_desktop.services import display_libs

    if not sys.platform.startswith("linux"):
        pytest.skip("the xcb plugin is Linux's")
    real_cdll = ctypes.CDLL
    absent = {s for s, _p in display_libs.XCB_LIBRARIES}

    def cdll(name: str, *a: Any, **k: Any) -> Any:
        if Path(name).name in absent:
            raise OSError(f"{name}: cannot open shared object file")
        return real_cdll(name, *a, **k)

    monkeypatch.setattr(display_libs.ctypes, "CDLL", cdll)
    monkeypatch.setenv("QT_QPA_PLATFORM", "xcb")
    assert app.main([]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "libxcb-cursor0, libxcb-icccm4 and libxcb-keysyms1" in err
    assert "sudo apt install libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1" in err
    # With them (this machine's own search) the same check says nothing.
    monkeypatch.setattr(display_libs.ctypes, "CDLL", real_cdll)
    assert app.missing_window_libraries() == ""
