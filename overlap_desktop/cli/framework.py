"""Command registry and shared CLI plumbing.

Each subcommand is one module in :mod:`overlap_desktop.cli.commands` exposing a
module-level ``COMMAND = Command(...)``; modules are discovered, so adding a command
touches no shared file. Commands call :mod:`overlap_desktop.api` only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TextIO

from overlap_desktop.api import Config, Progress, load_config

__all__ = ["CliContext", "Command", "format_value", "safe_terminal"]


def format_value(value: Any) -> str:
    """How a setting is written in ``overlap.toml`` terms (lists comma-separated)."""
    if value is None:
        return "(preset)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(format_value(v) for v in value) if value else '""'
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


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


def safe_terminal(value: object, *, max_len: int | None = None) -> str:
    """Text from a file name, a manifest or a recording, made safe to print on a terminal.

    Local file names are as untrusted as a manifest's: a name holding ESC, BEL or a
    newline could rewrite the terminal or forge output lines, so control, bidi and
    invisible characters are shown as ``[U+XXXX]`` (:func:`overlap_desktop.api.safe_text`).
    """
    from overlap_desktop import api

    return api.safe_text(value, max_len=max_len)


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
            self._warn_folder_settings(self._config)
        return self._config

    def _warn_folder_settings(self, config: Config) -> None:
        """Say on stderr which result-changing settings come from ``./overlap.toml``.

        The folder a command runs in (a vendor's delivery, say) is not the user's
        own configuration: its settings apply, but never silently.
        """
        rows = config.from_folder_file()
        if not rows:
            return
        where = rows[0].source.split(" (", 1)[-1].rstrip(")")
        self.note(f"overlap: note: {len(rows)} setting{'s' if len(rows) != 1 else ''} that can change results "
                  f"come{'s' if len(rows) == 1 else ''} from {safe_terminal(where)} in the current folder, "
                  "not from your own configuration:")
        for r in rows:
            self.note(f"  {r.key} = {safe_terminal(format_value(r.value))}")
        self.note("  (run `overlap config` to see every setting and its source)")

    _closed: set[int] = field(default_factory=set)

    def print(self, *parts: object) -> None:
        self.write(self.out, " ".join(str(p) for p in parts) + "\n")

    def note(self, *parts: object) -> None:
        self.write(self.err, " ".join(str(p) for p in parts) + "\n")

    def print_json(self, data: Any) -> None:
        self.write(self.out, json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False) + "\n")

    def write(self, stream: TextIO, text: str) -> None:
        """Write to ``stream``; once its reader has gone (``overlap files | head``), drop
        further output silently so the command still finishes its work and returns its
        real exit status (a ``--fail-over`` gate must not turn into a crash or a 0)."""
        if id(stream) in self._closed:
            return
        try:
            stream.write(text)
        except BrokenPipeError:
            self.pipe_closed(stream)

    def flush(self) -> None:
        """Flush both streams (at the end of a command), tolerating a closed pipe."""
        for stream in (self.out, self.err):
            if id(stream) in self._closed:
                continue
            try:
                stream.flush()
            except BrokenPipeError:
                self.pipe_closed(stream)
            except (OSError, ValueError):  # closed by the caller: nothing more to say
                pass

    def pipe_closed(self, stream: TextIO) -> None:
        """Remember that ``stream``'s reader has gone and point its descriptor at the null
        device, so the interpreter's final flush does not fail either."""
        self._closed.add(id(stream))
        try:
            fd = stream.fileno()
        except (OSError, ValueError, AttributeError):
            return
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)

    @contextmanager
    def progress(self, description: str) -> Iterator[Callable[[Progress], None]]:
        """A progress callback that draws a bar with ETA on stderr (nothing when quiet
        or when stderr is not a terminal, except a final line)."""
        if self.quiet:
            yield lambda p: None
            return
        from rich.console import Console
        from rich.markup import escape as markup_escape
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
        from rich.progress import Progress as RichProgress

        console = Console(file=self.err, stderr=True)
        if not console.is_terminal:
            # Pipelines and CI logs: a line per item instead of a redrawn bar.
            # A count at the first item, then every 5 s, and always the last one ("Exporting: 1 file"
            # was the only line of an 80-file export that took less than 5 s).
            last = [0.0]

            def plain(p: Progress) -> None:
                now = time.monotonic()
                final = p.total is not None and p.done >= p.total > 0
                if p.message and p.current:
                    self.note(f"{description}: {safe_terminal(p.current)}: {safe_terminal(p.message)}")
                elif p.done and (final or now - last[0] > 5.0):  # "0 files" before any work says nothing
                    last[0] = now
                    self.note(f"{description}: {_count(p.done, p.total, p.unit)}")

            yield plain
            return
        bar = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                           TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                           TextColumn("{task.fields[current]}"), console=console, transient=False)
        with bar:
            task = bar.add_task(description, total=None, current="")

            def update(p: Progress) -> None:
                cur = safe_terminal(p.current or "")
                if len(cur) > 50:
                    cur = "…" + cur[-49:]
                if p.current_done is not None:
                    cur = f"{cur} {p.current_done:4.0%}"
                # The column renders rich markup: a name like "[blink]x" must stay text.
                bar.update(task, completed=p.done, total=p.total, current=markup_escape(cur))
                if p.message and p.current:
                    bar.console.print(f"{safe_terminal(p.current)}: {safe_terminal(p.message)}", markup=False,
                                      highlight=False)

            yield update


def _count(done: float, total: float | None, unit: str) -> str:
    """``done/total unit`` for a log line: bytes in MB, counts as whole numbers."""
    if unit == "bytes":
        shown = f"{done / 1e6:.1f}" + (f"/{total / 1e6:.1f}" if total is not None else "")
        return f"{shown} MB"
    shown = f"{done:,.0f}" + (f"/{total:,.0f}" if total is not None else "")
    if done == 1 and total in (None, 1) and unit.endswith("s"):
        unit = unit[:-1]  # "1 file", not "1 files"
    return f"{shown} {unit}"
