"""``overlap audit MANIFEST --sample DIR``: does the manifest describe the sample you were shown?

Exit status: 0 when every judgeable sample file is covered by the manifest to at least
``--require`` percent (default 80) of its judgeable time; 3 when any sample file falls
short (the offer's manifest does not contain footage you were shown as a sample); 4 when
the manifest is refused or a sample file cannot be decoded; 2 when the sample folder does
not exist or holds no footage. Sample files that are wholly static or featureless cannot
be judged: they are listed and do not fail the audit.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from overlap_desktop.api import DEFAULT_REQUIRE, ExitCode, UsageError, uncovered_files
from overlap_desktop.cli.commands.compare import (
    add_floor_argument,
    add_output_arguments,
    guard_outputs,
    percent_arg,
    print_report,
    write_outputs,
)
from overlap_desktop.cli.framework import CliContext, Command

if TYPE_CHECKING:  # pragma: no cover
    pass

__all__ = ["COMMAND"]


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("manifest", metavar="MANIFEST", type=Path, help="the offer's .ovlm manifest")
    p.add_argument("--sample", metavar="DIR", type=Path, required=True,
                   help="folder (or file) with the sample footage the seller showed you")
    p.add_argument("--require", metavar="PCT", type=percent_arg, default=DEFAULT_REQUIRE,
                   help="share of each sample file's judgeable time the manifest must cover "
                        f"(default {DEFAULT_REQUIRE:g}); exit status 3 when a file falls short")
    add_output_arguments(p)
    add_floor_argument(p)


def _run(args: argparse.Namespace, ctx: CliContext) -> int:
    from overlap_desktop import api

    if not args.manifest.is_file():
        raise UsageError("no such manifest file", path=args.manifest)
    if not args.sample.exists():
        raise UsageError("no such sample folder or file", path=args.sample)
    if args.sample.is_dir():
        guard_outputs(args, ctx, inputs=[args.manifest], folders=[args.sample])
    else:
        guard_outputs(args, ctx, inputs=[args.manifest, args.sample])
    config = ctx.config
    with ctx.progress("Auditing the sample") as progress:
        report = api.audit_sample(args.manifest, args.sample, config=config, floor_seconds=args.floor,
                                  progress=progress)
    write_outputs(report, args, ctx)
    print_report(report, ctx, verbose=True)
    short, unjudged = uncovered_files(report, args.require)
    for f in unjudged:
        ctx.note(f"not judged (static or featureless): {api.safe_text(f.query_file, max_len=120)}")
    if not report.files:
        ctx.note("the sample holds no footage that could be read; nothing was audited")
        return int(ExitCode.CHECK_FAILED)
    floor = report.settings.get("floor_seconds")
    if isinstance(floor, (int, float)) and any(f.duration_s < floor for f in short):
        ctx.note(f"some sample files are shorter than the {floor:g} s evidence floor and cannot count as "
                 "covered; lower it with --floor if you accept thinner evidence")
    for f in short:
        covered = api.covered_percent(f) or 0.0
        ctx.note(f"covered {covered:.0f}% (< {args.require:g}%): {api.safe_text(f.query_file, max_len=120)}")
    if short:
        ctx.note(f"{len(short)} sample file{'s are' if len(short) != 1 else ' is'} covered less than "
                 f"{args.require:g}% by the manifest: the manifest does not describe all of the footage "
                 "you were shown (exit status 3)")
        return int(ExitCode.CHECK_FAILED)
    return int(ExitCode.OK)


COMMAND = Command(
    name="audit",
    help="check that an offer's manifest covers the sample footage you were shown",
    add_arguments=_add_arguments,
    run=_run,
    order=42,
    description="Fingerprint the sample footage a seller showed you and look for it in the offer's manifest. "
                "A seller who shows good footage and then quotes a manifest of something else is caught "
                "here. Exit status 0 when every judgeable sample file is covered to at least --require "
                "percent, 3 when one falls short, 4 when the manifest is refused.",
)
