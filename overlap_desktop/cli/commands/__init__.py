"""One module per ``overlap`` subcommand, each exposing ``COMMAND`` (discovered)."""

from __future__ import annotations

import importlib
import pkgutil

from overlap_desktop.cli.framework import Command

__all__ = ["discover_commands"]


def discover_commands() -> list[Command]:
    """Import every module of this package and collect its COMMAND."""
    found: list[Command] = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        cmd = getattr(module, "COMMAND", None)
        if isinstance(cmd, Command):
            found.append(cmd)
    found.sort(key=lambda c: (c.order, c.name))
    return found
