"""``overlap doctor``: check the installation and the index location."""

from __future__ import annotations

import argparse

from overlap_desktop.api import ExitCode
from overlap_desktop.cli.framework import CliContext, Command

__all__ = ["COMMAND"]


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the checks as JSON")


def _run(args: argparse.Namespace, ctx: CliContext) -> int:
    from overlap_desktop import api

    report = api.doctor(ctx.config)
    if args.json:
        ctx.print_json(report.to_dict())
    else:
        width = max(len(c.name) for c in report.checks)
        for c in report.checks:
            mark = "ok  " if c.ok else ("FAIL" if c.required else "warn")
            detail = f"  ({c.detail})" if c.detail else ""
            ctx.print(f"[{mark}] {c.name.ljust(width)}  {c.value}{detail}")
        if report.ok:
            ctx.print("\nEverything needed is in place.")
        else:
            ctx.print("\nProblems:")
            for c in report.problems:
                ctx.print(f"  {c.name}: {c.detail or c.value}")
    if not report.ok:
        return int(ExitCode.CHECK_FAILED)
    return int(ExitCode.OK)


COMMAND = Command(
    name="doctor",
    help="check libraries, readers and the index location",
    description="Report versions of Python, PyAV/FFmpeg, pdqhash, APSW/SQLite, numpy and Qt, the "
                "readers that loaded, the index location, free disk and whether SQLite's "
                "write-ahead log works there. Exit status 3 when something needed is missing.",
    add_arguments=_add_arguments,
    run=_run,
    order=90,
)
