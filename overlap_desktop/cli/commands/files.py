"""``overlap files``: what the index holds (status, hours, errors)."""

from __future__ import annotations

import argparse
import os

from overlap_desktop.api import ExitCode
from overlap_desktop.cli.framework import CliContext, Command, safe_terminal

__all__ = ["COMMAND"]


def _hms(seconds: float | None) -> str:
    s = int(round(seconds or 0.0))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH", help="only files at or under these paths")
    p.add_argument("--status", choices=("ok", "error", "pending"), default=None,
                   help="only files with this status")
    p.add_argument("--errors", action="store_true", help="only files that failed (same as --status error)")
    p.add_argument("--json", action="store_true", help="print as JSON")


def _run(args: argparse.Namespace, ctx: CliContext) -> int:
    from overlap_desktop import api

    path = ctx.config.index_path
    if not api.library_status(path).has_index:  # (a file there, too: nothing indexed yet)
        if args.json:
            ctx.print_json({"index": str(path), "files": []})
        else:
            ctx.note(f"No index at {safe_terminal(path)} yet; run `overlap index PATH` first.")
        return int(ExitCode.OK)
    status = "error" if args.errors else args.status
    files = api.library_files(path, status=status, under=args.paths, config=ctx.config)
    if args.json:
        ctx.print_json({"index": str(path), "files": [f.to_dict() for f in files]})
        return int(ExitCode.OK)
    for f in files:
        hours = _hms(f.duration_s) if f.status == "ok" else ""
        streams = f"{len(f.streams)} stream{'s' if len(f.streams) != 1 else ''}" if f.status == "ok" else ""
        line = f"{f.status:<8}{hours:>10}  {streams:<10} {safe_terminal(f.path)}"
        if f.frame_rate is not None:
            line += f"  [{f.frame_rate:g} Hz, {safe_terminal(f.frame_rate_source or '')}]"
        if f.error:
            line += f"  -- {safe_terminal(f.error)}"
        ctx.print(line)
    ok = [f for f in files if f.status == "ok"]
    errors = sum(1 for f in files if f.status == "error")
    pending = sum(1 for f in files if f.status in ("pending", "running"))
    total_hours = sum(f.hours for f in ok)
    ind = sum(f.indeterminate_s for f in ok) / 3600.0
    ctx.print(f"{len(files)} file(s): {len(ok)} ok ({total_hours:.3f} h, {ind:.3f} h indeterminate), "
              f"{errors} error(s), {pending} pending  [index {safe_terminal(path)}{os.sep}]")
    return int(ExitCode.OK)


COMMAND = Command(
    name="files",
    help="list the files in the index with status, hours and errors",
    add_arguments=_add_arguments,
    run=_run,
    order=20,
)
