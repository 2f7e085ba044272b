"""The X11 libraries Qt's window system plugin needs on Linux, and how to say they are missing.

``pip install`` brings Qt, not the system libraries its xcb plugin (``libqxcb.so``) is linked
against. Three of them are missing on many fresh Debian and Ubuntu installs; without them Qt
prints a long plugin error and aborts before any window or message of ours can appear. The
dynamic linker finds the plugin's libraries by their sonames (``LD_LIBRARY_PATH``, the
``ldconfig`` cache, the default folders, and the plugin's own run path, PySide6's ``Qt/lib``),
so the check asks the same linker for the same sonames with ``dlopen`` and also looks in
PySide6's ``Qt/lib``. Qt-free: it runs before Qt is imported, and in ``overlap doctor``.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from importlib.util import find_spec
from pathlib import Path

__all__ = ["XCB_LIBRARIES", "display_libraries_message", "missing_display_libraries", "qt_uses_xcb"]

#: ``(soname, Debian/Ubuntu package)`` of each library Qt 6.5+'s xcb plugin needs that a plain
#: desktop install may lack (the rest of libxcb comes with any X11 desktop).
XCB_LIBRARIES: tuple[tuple[str, str], ...] = (
    ("libxcb-cursor.so.0", "libxcb-cursor0"),
    ("libxcb-icccm.so.4", "libxcb-icccm4"),
    ("libxcb-keysyms.so.1", "libxcb-keysyms1"),
)


def _qt_lib_dirs() -> list[Path]:
    """PySide6's own ``Qt/lib`` (the xcb plugin's run path; a frozen bundle's libraries sit there)."""
    spec = find_spec("PySide6")
    if spec is None or not spec.submodule_search_locations:
        return []
    return [Path(p) / "Qt" / "lib" for p in spec.submodule_search_locations]


def _dlopen(soname: str) -> object:
    """Load ``soname`` as the dynamic linker would for the plugin (raises ``OSError`` if absent)."""
    try:
        return ctypes.CDLL(soname)
    except OSError:
        for folder in _qt_lib_dirs():
            if (folder / soname).is_file():
                return ctypes.CDLL(str(folder / soname))
        raise


def qt_uses_xcb(environ: Mapping[str, str] | None = None, platform: str | None = None) -> bool:
    """Whether Qt will open its window through X11 (xcb) here: Linux, and neither another platform
    plugin chosen (``QT_QPA_PLATFORM``) nor a Wayland session (Qt then uses its Wayland plugin)."""
    environ = os.environ if environ is None else environ
    platform = sys.platform if platform is None else platform
    if not platform.startswith("linux"):
        return False
    chosen = environ.get("QT_QPA_PLATFORM", "").strip().lower()
    if chosen:
        return chosen.split(";")[0].startswith("xcb")
    return not (environ.get("WAYLAND_DISPLAY") or environ.get("XDG_SESSION_TYPE", "").lower() == "wayland")


def missing_display_libraries(load: Callable[[str], object] | None = None,
                              libraries: Sequence[tuple[str, str]] = XCB_LIBRARIES) -> list[str]:
    """The packages (Debian/Ubuntu names) of the libraries Qt's xcb plugin needs and cannot load.

    Args:
        load: Loads one library by soname, raising ``OSError`` when it cannot (default: ``dlopen``
            through ``ctypes``, then PySide6's ``Qt/lib``). Tests pass a loader whose search lacks them.
        libraries: ``(soname, package)`` pairs to check.

    Returns:
        Package names, in :data:`XCB_LIBRARIES` order; empty when all load (and off Linux).
    """
    if not sys.platform.startswith("linux") and load is None:
        return []
    load = _dlopen if load is None else load
    missing = []
    for soname, package in libraries:
        try:
            load(soname)
        except OSError:
            missing.append(package)
    return missing


def display_libraries_message(packages: Sequence[str]) -> str:
    """One line naming the missing packages and the command that installs them."""
    names = list(packages)
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return (f"overlap-desktop cannot open its window: Qt needs {listed}, missing on this computer. "
            f"Install {'it' if len(names) == 1 else 'them'} with: sudo apt install {' '.join(names)} "
            "(the overlap command line works without them).")
