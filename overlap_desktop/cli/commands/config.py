"""``overlap config``: every effective setting with where it came from."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from overlap_desktop.api import ExitCode, UsageError
from overlap_desktop.cli.framework import CliContext, Command, format_value, safe_terminal

__all__ = ["COMMAND"]


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("key", nargs="?", default=None, help="show only this setting (e.g. index.fps)")
    p.add_argument("--json", action="store_true", help="print as JSON")


def _run(args: argparse.Namespace, ctx: CliContext) -> int:
    from overlap_desktop import api

    config = ctx.config
    rows = config.items_with_source()
    if args.key is not None:
        rows = [r for r in rows if r.key == args.key]
        if not rows:
            raise UsageError(f"unknown setting {args.key!r} (see `overlap config` for the list)")
    settings = api.SETTINGS
    folder = {r.key for r in config.from_folder_file()}
    if args.json:
        ctx.print_json([{"key": r.key, "value": _jsonable(r.value), "source": r.source,
                         "env": settings[r.key].env, "help": settings[r.key].help,
                         "changes_results": settings[r.key].verdict,
                         "from_current_folder": r.key in folder} for r in rows])
        return int(ExitCode.OK)
    # "!" marks a result-changing setting taken from the current folder's overlap.toml.
    table = [(r.key, safe_terminal(format_value(r.value)),
              ("! " if r.key in folder else "") + safe_terminal(r.source), settings[r.key].env) for r in rows]
    head = ("setting", "value", "source", "environment variable")
    widths = [max(len(head[i]), *(len(t[i]) for t in table)) for i in range(3)]
    ctx.print("  ".join(h.ljust(w) for h, w in zip(head, widths)) + "  " + head[3])
    for t in table:
        ctx.print("  ".join(c.ljust(w) for c, w in zip(t, widths)) + "  " + t[3])
    if folder and args.key is None:
        ctx.print(f"\n! {len(folder)} setting{'s' if len(folder) != 1 else ''} that can change results "
                  f"come{'s' if len(folder) == 1 else ''} from the overlap.toml of the current folder, "
                  "not from your own configuration.")
    if args.key is None:
        ctx.print("\nPrecedence: command-line flag > OVERLAP_* environment > ./overlap.toml > "
                  "user config > default.")
    return int(ExitCode.OK)


COMMAND = Command(
    name="config",
    help="show every effective setting and its source",
    description="Print every effective setting, its value and where it came from (command line, "
                "environment variable, ./overlap.toml, the user's overlap.toml, or the default).",
    add_arguments=_add_arguments,
    run=_run,
    order=80,
)
