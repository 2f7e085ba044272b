"""``overlap self-dedupe``: duplicates inside your own index (a vendor's check before quoting)."""

from __future__ import annotations

import argparse

from overlap_desktop.cli.commands.compare import (
    add_floor_argument,
    add_gate_argument,
    add_output_arguments,
    check_gate,
    guard_outputs,
    print_report,
    write_outputs,
)
from overlap_desktop.cli.framework import CliContext, Command

__all__ = ["COMMAND"]


def _add_arguments(p: argparse.ArgumentParser) -> None:
    add_output_arguments(p)
    add_floor_argument(p)
    add_gate_argument(p, "the share of indexed hours that duplicate other indexed footage")


def _run(args: argparse.Namespace, ctx: CliContext) -> int:
    from overlap_desktop import api

    guard_outputs(args, ctx)
    config = ctx.config
    with ctx.progress("Looking for duplicates") as progress:
        report = api.self_dedupe(config.index_path, config=config, floor_seconds=args.floor,
                                 progress=progress)
    write_outputs(report, args, ctx)
    print_report(report, ctx, verbose=ctx.verbose)
    return check_gate(report, args.fail_over, ctx, what="duplicated share")


COMMAND = Command(
    name="self-dedupe",
    help="find footage that appears more than once in your own index (before quoting an offer)",
    add_arguments=_add_arguments,
    run=_run,
    order=45,
    description="Compare every file in the index with every other file (never with itself) and report "
                "footage that appears more than once: re-encoded copies, trims, slowed or mirrored "
                "duplicates. A vendor runs this before quoting so the offer holds no internal duplicates. "
                "Exit status 3 with --fail-over when the duplicated share is at or above the threshold.",
)
