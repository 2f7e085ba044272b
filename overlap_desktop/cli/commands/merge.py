"""``overlap merge SRC... --index DEST``: combine indexes built on several machines."""

from __future__ import annotations

import argparse
from pathlib import Path

from overlap_desktop.api import ExitCode
from overlap_desktop.cli.framework import CliContext, Command

__all__ = ["COMMAND"]


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("sources", metavar="SRC", nargs="+", type=Path,
                   help="index folders to copy from (read only; e.g. copied from other machines)")
    p.add_argument("--json", dest="as_json", action="store_true", help="print the summary as JSON")


def _run(args: argparse.Namespace, ctx: CliContext) -> int:
    from overlap_desktop import api

    config = ctx.config
    with ctx.progress("Merging") as progress:
        summary = api.merge_indexes(args.sources, config.index_path, config=config, progress=progress)
    if args.as_json:
        ctx.print_json({
            "destination": str(summary.destination),
            "destination_identity": summary.destination_identity,
            "sources": summary.sources,
            "merged": summary.merged,
            "hours_merged": round(summary.hours_merged, 4),
            "duplicates": [{"source_path": a, "kept_path": b} for a, b in summary.duplicates],
            "renamed": [{"original_path": a, "stored_path": b} for a, b in summary.renamed],
            "skipped": [{"path": a, "reason": b} for a, b in summary.skipped],
        })
        return int(ExitCode.OK)
    safe = api.safe_text
    hours = api.format_duration(summary.hours_merged * 3600)
    ctx.print(f"Merged {summary.merged} file{'s' if summary.merged != 1 else ''} ({hours} of footage) "
              f"into {safe(summary.destination)}.")
    for s in summary.sources:
        ctx.print(f"  {safe(s['path'])}: {s['merged']} merged, {s['duplicates']} identical already present, "
                  f"{s['skipped']} not fingerprinted there")
    for a, b in summary.renamed:
        ctx.print(f"  path already used by other footage: {safe(a)} stored as {safe(b)}")
    if summary.skipped and ctx.verbose:
        for a, b in summary.skipped:
            ctx.print(f"  skipped {safe(a)}: {safe(b)}")
    return int(ExitCode.OK)


COMMAND = Command(
    name="merge",
    help="combine indexes built on several machines into this one (--index DEST)",
    add_arguments=_add_arguments,
    run=_run,
    order=25,
    description="Copy the fingerprints of other indexes (for example built on several machines) into the "
                "index named by --index, without touching the footage. All indexes must use the same "
                "fingerprint hash and normalisation; otherwise nothing is merged (exit status 4). Identical "
                "files (same SHA-256 and size) are stored once; every merged file records which index and "
                "original path it came from (see `overlap files`).",
)
