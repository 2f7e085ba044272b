"""PySide6 desktop shell over :mod:`overlap_desktop.api` (the only package that imports Qt)."""

from __future__ import annotations

__all__: list[str] = []
