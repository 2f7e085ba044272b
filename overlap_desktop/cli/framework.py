"""Command registry and shared CLI plumbing.

Each subcommand is one module in :mod:`overlap_desktop.cli.commands` exposing a
module-level ``COMMAND = Command(...)``; modules are discovered, so adding a command
touches no shared file. Commands call :mod:`overlap_desktop.api` only.
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TextIO

from overlap_desktop.config import Config, load_config
from overlap_desktop.core.types import Progress

__all__ = ["CliContext", "Command", "discover_commands"]


@dataclass(frozen=True)
class Command:
    """One ``overlap`` subcommand.

    Attributes:
        name: The subcommand word.
        help: One line for ``overlap --help``.
        add_arguments: Adds the command's own flags to its parser.
        run: Does the work; returns an exit code (:class:`~overlap_desktop.errors.ExitCode`).
        order: Position in ``--help`` (lower first).
        description: Longer text for ``overlap NAME --help``.
    """

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, CliContext], int]
    order: int = 100
    description: str | None = None


def discover_commands() -> list[Command]:
    """Import every module of :mod:`overlap_desktop.cli.commands` and collect its COMMAND."""
    from overlap_desktop.cli import commands as pkg

    found: list[Command] = []
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{pkg.__name__}.{info.name}")
        cmd = getattr(module, "COMMAND", None)
        if isinstance(cmd, Command):
            found.append(cmd)
    found.sort(key=lambda c: (c.order, c.name))
    return found


@dataclass
class CliContext:
    """What a command needs besides its arguments.

    Attributes:
        overrides: Config values given by flags (``{"index.path": ...}``).
        out: Where results go (stdout).
        err: Where progress and messages go (stderr).
        quiet: No progress bars.
        verbose: Show technical detail of errors.
    """

    overrides: dict[str, Any] = field(default_factory=dict)
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    quiet: bool = False
    verbose: bool = False
    _config: Config | None = None

    @property
    def config(self) -> Config:
        if self._config is None:
            self._config = load_config(self.overrides)
        return self._config

    def print(self, *parts: object) -> None:
        print(*parts, file=self.out)

    def note(self, *parts: object) -> None:
        print(*parts, file=self.err)

    def print_json(self, data: Any) -> None:
        json.dump(data, self.out, indent=2, ensure_ascii=False, sort_keys=False)
        self.out.write("\n")

    @contextmanager
    def progress(self, description: str) -> Iterator[Callable[[Progress], None]]:
        """A progress callback that draws a bar with ETA on stderr (nothing when quiet
        or when stderr is not a terminal, except a final line)."""
        if self.quiet:
            yield lambda p: None
            return
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress as RichProgress,
                                   TextColumn, TimeElapsedColumn, TimeRemainingColumn)

        console = Console(file=self.err, stderr=True)
        if not console.is_terminal:
            # Pipelines and CI logs: a line per item instead of a redrawn bar.
            last = [0.0]

            def plain(p: Progress) -> None:
                now = time.monotonic()
                if p.message and p.current:
                    print(f"{description}: {p.current}: {p.message}", file=self.err)
                elif now - last[0] > 5.0:
                    last[0] = now
                    total = f"/{p.total:g}" if p.total is not None else ""
                    print(f"{description}: {p.done:g}{total} {p.unit}", file=self.err)

            yield plain
            return
        bar = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                           TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                           TextColumn("{task.fields[current]}"), console=console, transient=False)
        with bar:
            task = bar.add_task(description, total=None, current="")

            def update(p: Progress) -> None:
                cur = p.current or ""
                if len(cur) > 50:
                    cur = "…" + cur[-49:]
                if p.current_done is not None:
                    cur = f"{cur} {p.current_done:4.0%}"
                bar.update(task, completed=p.done, total=p.total, current=cur)
                if p.message and p.current:
                    bar.console.print(f"{p.current}: {p.message}")

            yield update
