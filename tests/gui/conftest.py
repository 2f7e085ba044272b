"""Fixtures for the GUI tests: isolated QSettings, small generated footage, a real comparison.

Footage, indexes, the manifest and the report are made once per session through
the public API (the same calls the GUI makes) and shared read-only; tests that
write (indexing, settings) get their own temporary folders.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.footage import make_clip

SIZE = (160, 120)
FPS = 12.0


def isolated_config(index: Path, home: Path) -> Any:
    """Defaults only plus ``index.path``: never the developer's own settings."""
    from overlap_desktop import api

    return api.load_config({"index.path": str(index)}, cwd=home, environ={},
                           user_file=home / "no-user-config.toml")


@pytest.fixture(autouse=True)
def _qsettings(tmp_path: Path) -> None:
    """Point QSettings at an ini file in this test's temp folder (never the user's registry)."""
    from PySide6.QtCore import QCoreApplication, QSettings

    QCoreApplication.setOrganizationName("overlap-tests")
    QCoreApplication.setApplicationName("overlap-desktop-tests")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path / "qsettings"))


@pytest.fixture(autouse=True)
def _user_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user data folder (vendor workspaces) and Documents of this test, never the real ones."""
    home = tmp_path / "user"
    (home / "Documents").mkdir(parents=True)
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_DOCUMENTS_DIR", str(home / "Documents"))
    return home


@pytest.fixture(autouse=True)
def _no_external_open(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record instead of opening a browser / file manager."""
    opened: list[str] = []
    from overlap_desktop.gui import common

    monkeypatch.setattr(common, "open_local_file", lambda p: opened.append(str(p)) or True)
    for mod in ("export_wizard",):
        m = __import__(f"overlap_desktop.gui.{mod}", fromlist=["open_local_file"])
        monkeypatch.setattr(m, "open_local_file", lambda p: opened.append(str(p)) or True)
    return opened


@pytest.fixture(scope="session")
def footage(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Owned clips, an offer (a trimmed copy of an owned clip plus new footage)."""
    root = tmp_path_factory.mktemp("gui-footage")
    owned, offer = root / "owned", root / "offer"
    make_clip(owned / "owned-a.mp4", 11, duration=24.0, fps=FPS, size=SIZE)
    make_clip(owned / "owned-b.mp4", 12, duration=12.0, fps=FPS, size=SIZE)
    # The offer: 16 s of owned-a starting at 4 s, and 12 s the lab has never seen.
    make_clip(offer / "offer-copy.mp4", 11, duration=16.0, fps=FPS, size=SIZE, t0=4.0)
    make_clip(offer / "offer-new.mp4", 77, duration=12.0, fps=FPS, size=SIZE)
    return {"root": root, "owned": owned, "offer": offer}


@pytest.fixture(scope="session")
def lab_index(footage: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The lab's index of the owned clips (shared; tests must not write to it)."""
    from overlap_desktop import api

    home = tmp_path_factory.mktemp("lab")
    idx = home / "index"
    api.index_paths([footage["owned"]], index=idx, config=isolated_config(idx, home))
    return idx


@pytest.fixture(scope="session")
def offer_manifest(footage: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The vendor's manifest of the offer folder."""
    from overlap_desktop import api

    home = tmp_path_factory.mktemp("vendor")
    idx = home / "index"
    cfg = isolated_config(idx, home)
    api.index_paths([footage["offer"]], index=idx, config=cfg)
    out = home / "offer.ovlm"
    api.export_manifest(idx, out, label="Test offer")
    return out


@pytest.fixture(scope="session")
def report(lab_index: Path, offer_manifest: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A real comparison of the offer with the lab's index."""
    from overlap_desktop import api

    home = tmp_path_factory.mktemp("cmp")
    return api.compare(offer_manifest, lab_index, config=isolated_config(lab_index, home))


@pytest.fixture()
def state(tmp_path: Path) -> Any:
    """An AppState whose index is a fresh folder in this test's temp dir."""
    from overlap_desktop.gui.state import AppState

    return AppState({"index.path": str(tmp_path / "index")})


@pytest.fixture()
def lab_state(lab_index: Path) -> Any:
    """An AppState reading the shared lab index."""
    from overlap_desktop.gui.state import AppState

    return AppState({"index.path": str(lab_index)})


@pytest.fixture()
def window(qtbot: Any, state: Any) -> Any:
    from overlap_desktop.gui.main_window import MainWindow

    w = MainWindow(state)
    qtbot.addWidget(w)
    w.show()
    return w


def copy_tree(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst
