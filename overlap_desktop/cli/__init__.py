"""The ``overlap`` command: a thin shell over :mod:`overlap_desktop.api`."""

from __future__ import annotations

from overlap_desktop.cli.main import main

__all__ = ["main"]
