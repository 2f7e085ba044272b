"""PyInstaller runtime hook: a stand-in for ``PySide6.QtOpenGL``, which the bundle leaves out.

pyqtgraph imports ``PySide6.QtOpenGL`` when it loads (for ``PColorMeshItem``'s OpenGL drawing
path) although the app never draws with OpenGL: its plots paint with QPainter. The bindings are
9 MB, about the size that signed quotes' cryptography library added to a Windows folder with a
200 MB budget. This finder is consulted after every real one, so an installed QtOpenGL still
wins; otherwise the import gets a module whose every attribute says plainly what is missing.
tests/integration/test_bundle.py imports the whole product and draws a plot with the excluded
modules blocked and this hook installed.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Sequence

_NAME = "PySide6.QtOpenGL"


class _MissingQtOpenGL(types.ModuleType):
    def __getattr__(self, attr: str) -> object:
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise AttributeError(f"{_NAME}.{attr}: Qt's OpenGL bindings are not part of this build "
                             "(the app draws its plots without OpenGL)")


class _StandIn(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        return importlib.machinery.ModuleSpec(fullname, self) if fullname == _NAME else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _MissingQtOpenGL(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        return None


sys.meta_path.append(_StandIn())
