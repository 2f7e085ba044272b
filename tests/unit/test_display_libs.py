"""Linux without the X11 libraries Qt's xcb plugin needs: the app says so in one line, doctor checks.

The plugin finds libxcb-cursor.so.0, libxcb-icccm.so.4 and libxcb-keysyms.so.1 through the
dynamic linker; the check asks the same linker (``dlopen``). Here a machine without them is a
library search that lacks them: a loader that only looks in a temporary folder, and ``dlopen``
itself refusing the three sonames.
"""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import pytest

from overlap_desktop.services import display_libs
from overlap_desktop.services.display_libs import (
    XCB_LIBRARIES,
    display_libraries_message,
    missing_display_libraries,
    qt_uses_xcb,
)

PACKAGES = [p for _s, p in XCB_LIBRARIES]
linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the xcb plugin is Linux's")


def _search_in(folder: Path):  # type: ignore[no-untyped-def]
    return lambda soname: ctypes.CDLL(str(folder / soname))


def test_a_search_without_them_finds_all_three_missing(tmp_path: Path) -> None:
    assert missing_display_libraries(_search_in(tmp_path)) == PACKAGES


@linux
def test_a_search_with_them_finds_none_and_one_missing_is_named(tmp_path: Path) -> None:
    import os

    if missing_display_libraries():
        pytest.skip("this machine lacks them itself")
    assert missing_display_libraries() == []  # this machine, with the linker's own search
    for soname, _p in XCB_LIBRARIES[:2]:
        # The real file under its soname (dlopen of a path resolves the link).
        found = next(Path(d) / soname for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/usr/lib64",
                                                "/usr/lib", "/lib") if (Path(d) / soname).exists())
        os.symlink(found, tmp_path / soname)
    assert missing_display_libraries(_search_in(tmp_path)) == ["libxcb-keysyms1"]


@linux
def test_dlopen_refusing_the_sonames_is_a_machine_without_them(monkeypatch: pytest.MonkeyPatch) -> None:
    real_cdll = ctypes.CDLL
    absent = {s for s, _p in XCB_LIBRARIES}

    def cdll(name: str, *a: object, **k: object) -> object:
        if Path(name).name in absent:
            raise OSError(f"{name}: cannot open shared object file: No such file or directory")
        return real_cdll(name, *a, **k)

    monkeypatch.setattr(display_libs.ctypes, "CDLL", cdll)
    assert missing_display_libraries() == PACKAGES


def test_the_message_is_one_line_naming_the_packages_and_the_command() -> None:
    line = display_libraries_message(PACKAGES)
    assert "\n" not in line
    assert "libxcb-cursor0, libxcb-icccm4 and libxcb-keysyms1" in line
    assert "sudo apt install libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1" in line
    one = display_libraries_message(["libxcb-cursor0"])
    assert "Qt needs libxcb-cursor0," in one and "Install it with: sudo apt install libxcb-cursor0 " in one


@pytest.mark.parametrize(("environ", "platform", "uses"), [
    ({"DISPLAY": ":0"}, "linux", True),
    ({"QT_QPA_PLATFORM": "xcb"}, "linux", True),
    ({"QT_QPA_PLATFORM": "offscreen"}, "linux", False),
    ({"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}, "linux", False),
    ({"XDG_SESSION_TYPE": "wayland"}, "linux", False),
    ({"QT_QPA_PLATFORM": "xcb", "WAYLAND_DISPLAY": "wayland-0"}, "linux", True),
    ({}, "win32", False),
    ({}, "darwin", False),
])
def test_the_check_applies_only_where_qt_uses_xcb(environ: dict[str, str], platform: str, uses: bool) -> None:
    assert qt_uses_xcb(environ, platform) is uses


@linux
def test_doctor_names_them_without_failing_the_command_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from overlap_desktop import api

    monkeypatch.setattr(display_libs, "missing_display_libraries",
                        lambda: missing_display_libraries(_search_in(tmp_path)))
    cfg = api.load_config({"index.path": str(tmp_path / "index")}, cwd=tmp_path, environ={},
                          user_file=tmp_path / "none.toml")
    report = api.doctor(cfg)
    check = report.get("window libraries (X11)")
    assert check is not None and not check.ok and not check.required
    assert check.value == "missing: " + ", ".join(PACKAGES) and "sudo apt install" in check.detail
