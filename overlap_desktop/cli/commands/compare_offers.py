"""``overlap compare-offers A.ovlm B.ovlm``: are two sellers selling the same footage?"""

from __future__ import annotations

import argparse
from pathlib import Path

from overlap_desktop.api import UsageError
from overlap_desktop.cli.commands.compare import (
    add_floor_argument,
    add_gate_argument,
    add_output_arguments,
    add_require_signed_argument,
    check_gate,
    guard_outputs,
    print_report,
    write_outputs,
)
from overlap_desktop.cli.framework import CliContext, Command

__all__ = ["COMMAND"]


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("offer_a", metavar="A.ovlm", type=Path,
                   help="the first offer's manifest (the one measured)")
    p.add_argument("offer_b", metavar="B.ovlm", type=Path, help="the second offer's manifest")
    add_output_arguments(p)
    add_floor_argument(p)
    add_gate_argument(p, "the share of offer A's hours also found in offer B")
    add_require_signed_argument(p)


def _run(args: argparse.Namespace, ctx: CliContext) -> int:
    from overlap_desktop import api

    for m in (args.offer_a, args.offer_b):
        if not m.is_file():
            raise UsageError("no such manifest file", path=m)
    guard_outputs(args, ctx, inputs=[args.offer_a, args.offer_b])
    config = ctx.config
    with ctx.progress("Comparing offers") as progress:
        report = api.compare_offers(args.offer_a, args.offer_b, config=config, floor_seconds=args.floor,
                                    progress=progress, require_signed=args.require_signed)
    write_outputs(report, args, ctx)
    print_report(report, ctx, verbose=ctx.verbose)
    return check_gate(report, args.fail_over, ctx, what="shared share")


COMMAND = Command(
    name="compare-offers",
    help="compare two offers' manifests: are two sellers selling the same footage?",
    add_arguments=_add_arguments,
    run=_run,
    order=46,
    description="Measure how much of offer A's footage also appears in offer B, from their manifests alone "
                "(no index and no footage needed). Swap the arguments to measure B against A. Exit status 3 "
                "with --fail-over when the shared share is at or above the threshold, 4 when a manifest is "
                "refused.",
)
