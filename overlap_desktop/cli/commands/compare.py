"""``overlap compare MANIFEST``: how much of an offer does the lab already own?

Also holds the output helpers shared by the other report-producing commands
(``self-dedupe``, ``compare-offers``, ``audit``): report files, the printed summary
and the ``--fail-over`` gate.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from overlap_desktop.api import ExitCode, UsageError
from overlap_desktop.cli.framework import CliContext, Command
from overlap_desktop.cli.guards import Output, add_force_argument, check_outputs

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.api import Config, Report

__all__ = ["COMMAND", "add_floor_argument", "add_gate_argument", "add_output_arguments",
           "add_require_signed_argument", "check_gate",
           "guard_outputs", "percent_arg", "print_report", "write_outputs"]

#: Files listed one per line before the rest are summarised (all with -v).
_MAX_LINES = 40
#: Episode matches (and evaluation examples) printed per file / report without -v.
_MAX_EPISODE_LINES = 5


def percent_arg(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= v <= 100.0:
        raise argparse.ArgumentTypeError(f"{text} is not a percentage between 0 and 100")
    return v


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not v >= 0.0:
        raise argparse.ArgumentTypeError("the floor must not be negative")
    return v


def add_output_arguments(p: argparse.ArgumentParser) -> None:
    """``-o/--json``, ``--html`` and ``--csv`` report files."""
    g = p.add_argument_group("report files")
    g.add_argument("-o", "--output", "--json", dest="output", metavar="REPORT.json", type=Path, default=None,
                   help="write the report as JSON (docs/report-schema.md)")
    g.add_argument("--html", metavar="REPORT.html", type=Path, default=None,
                   help="write a self-contained HTML report for people (no scripts, no external files)")
    g.add_argument("--csv", metavar="REPORT.csv", type=Path, default=None,
                   help="write one row per matched segment (below-floor rows marked)")
    g.add_argument("--hide-paths", action="store_true",
                   help="leave your folder names out of the report files (your files are named without "
                        "their folders), for reports you forward to a seller")
    add_force_argument(g)


def guard_outputs(args: argparse.Namespace, ctx: CliContext, *, inputs: Sequence[Path] = (),
                  folders: Sequence[Path] = ()) -> None:
    """Refuse report paths that would overwrite an input, land in the index folder or
    replace a file overlap did not write (before any work is done)."""
    outs = [Output(path, flag, kind) for path, flag, kind in
            ((args.output, "--json", "json"), (args.html, "--html", "html"), (args.csv, "--csv", "csv"))
            if path is not None]
    if outs:
        check_outputs(outs, inputs=inputs, folders=folders, index_path=ctx.config.index_path, force=args.force)


def add_floor_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--floor", metavar="SECONDS", type=_seconds, default=None,
                   help="evidence floor: shorter matches are listed as evidence but not counted, unless "
                        "their evidence is overwhelming and they fall short by less than a quarter "
                        "(default: match.floor_seconds, 10 s)")


def add_gate_argument(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--fail-over", metavar="PCT", type=percent_arg, default=None,
                   help=f"exit with status 3 when {what} is at or above PCT percent (for scripts and "
                        "procurement pipelines)")


def write_outputs(report: Report, args: argparse.Namespace, ctx: CliContext) -> None:
    """Write the report files asked for on the command line and say where they went."""
    from overlap_desktop import api

    folder_settings = ctx.config.from_folder_file_dicts()
    if folder_settings:
        # Recorded with the report so a reader of the file sees it too, not only the terminal.
        report.settings["from_current_folder_overlap_toml"] = folder_settings
    if getattr(args, "hide_paths", False):
        # The files only: the terminal summary keeps full paths (it stays on this computer).
        report = api.hide_folder_names(report)
    written: list[tuple[str, Path]] = []
    if args.output is not None:
        written.append(("JSON", api.write_report_json(report, args.output)))
    if args.html is not None:
        written.append(("HTML", api.write_report_html(report, args.html)))
    if args.csv is not None:
        written.append(("CSV", api.write_report_csv(report, args.csv)))
    for kind, path in written:
        ctx.note(f"{kind} report written to {path}")


def print_report(report: Report, ctx: CliContext, *, verbose: bool = False) -> None:
    """Print the headline, the qualifying sentences and one line per file with matches.

    Names from manifests are neutralised (:func:`safe_text`) so a hostile name cannot
    rewrite the terminal.
    """
    from overlap_desktop import api

    ctx.print(api.headline(report))
    for line in api.report_signature_lines(report):
        ctx.print(f"  {line}")
        if line.startswith("WARNING") or ": WARNING" in line:
            ctx.note(f"overlap: {line}")
    new_sentence = api.new_footage_sentence(report)
    if new_sentence:
        ctx.print(new_sentence)
    for line in api.headline_details(report):
        ctx.print(f"  {line}")
    files = sorted(report.files, key=lambda f: (-f.matched_percent, -len(f.below_floor), f.query_file))
    shown = [f for f in files if f.segments or f.below_floor or f.weak or f.repeats]
    quiet_files = [f for f in files if not (f.segments or f.below_floor or f.weak or f.repeats)]
    if verbose:
        shown, quiet_files = files, []
    if not shown:
        _print_text_overlap(report, ctx, verbose=verbose)
        return
    ctx.print()
    for i, f in enumerate(shown):
        if i == _MAX_LINES and not verbose:
            ctx.print(f"  ... and {len(shown) - _MAX_LINES} more files with matches (all of them with -v, "
                      "or in the report files)")
            break
        words = api.describe_flags(f)
        if not f.segments and f.below_floor:
            n = len(f.below_floor)
            words.append(f"{n} match{'es' if n != 1 else ''} below the evidence floor")
        if f.weak:
            n = len(f.weak)
            words.append(f"{n} weak match{'es' if n != 1 else ''} (not counted)")
        amounts = f"{api.format_duration(f.matched_seconds)} of {api.format_duration(f.duration_s)}"
        name = api.safe_text(f.query_file, max_len=120)
        line = f"  {api.format_percent(f.matched_percent):>5}  {name}  ({amounts})"
        if words:
            line += "  " + "; ".join(words)
        ctx.print(line)
        labels = [e.get("label") for e in f.episodes if isinstance(e, dict) and not e.get("below_floor")]
        for label in labels[:_MAX_EPISODE_LINES] if not verbose else labels:
            ctx.print(f"         {api.safe_text(label, max_len=200)}")
        if len(labels) > _MAX_EPISODE_LINES and not verbose:
            ctx.print(f"         ... and {len(labels) - _MAX_EPISODE_LINES} more episode matches (-v)")
        # A camera the lab does not own stands out; -v lists every camera of every episode.
        for text in api.stream_lines(f) if verbose else api.new_camera_lines(f):
            ctx.print(f"         {text}")
    _print_text_overlap(report, ctx, verbose=verbose)
    if quiet_files:
        ctx.print(f"  {len(quiet_files)} other file{'s' if len(quiet_files) != 1 else ''}: no match")


def _print_text_overlap(report: Report, ctx: CliContext, *, verbose: bool) -> None:
    """The matched evaluation examples (the lab's own text) under the headline details."""
    from overlap_desktop import api

    block = report.text_overlap or {}
    examples = [ex for ex in block.get("matched_examples", []) if isinstance(ex, dict)]
    if block.get("status") != "checked" or not examples:
        return
    ctx.print()
    ctx.print("  Evaluation examples sharing an n-gram with the vendor's annotations:")
    shown = examples if verbose else examples[:_MAX_EPISODE_LINES]
    for ex in shown:
        grams = [g.get("ngram", "") for g in ex.get("ngrams", []) if isinstance(g, dict)]
        where = api.safe_text(f"{ex.get('source', '')} {ex.get('locator', '')}", max_len=120)
        ctx.print(f"    {where}: {api.safe_text(grams[0] if grams else '', max_len=160)!s}")
    if len(examples) > len(shown):
        ctx.print(f"    ... and {len(examples) - len(shown)} more (-v, or the report files)")


def check_gate(report: Report, threshold: float | None, ctx: CliContext, what: str = "overlap") -> int:
    """Exit status for ``--fail-over``: 3 when the overlap is at or above the threshold."""
    if threshold is None:
        return int(ExitCode.OK)
    pct = report.overlap_percent
    if pct >= threshold:
        ctx.note(f"{what} {pct:.1f}% is at or above --fail-over {threshold:g}%: exit status 3")
        return int(ExitCode.CHECK_FAILED)
    return int(ExitCode.OK)


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("manifest", metavar="MANIFEST", type=Path, help="the offer's .ovlm manifest")
    p.add_argument("--eval", nargs="+", metavar="FILE", type=Path, default=None, dest="eval_files",
                   help="your evaluation set (text, JSONL/JSON, LeRobot folder, MCAP): checked against the "
                        "annotation n-gram hashes the manifest carries (no vendor text is needed)")
    p.add_argument("--eval-field", action="append", dest="eval_fields", metavar="NAME",
                   help="JSON field holding the evaluation text (repeatable; default: every string field)")
    p.add_argument("--cluster", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="search the index's shards on a Dask cluster (tcp://HOST:8786; alone: "
                        "index.cluster); "
                        "its workers must see the index folder at the same path")
    add_output_arguments(p)
    add_floor_argument(p)
    add_gate_argument(p, "the share of offered hours you already own")
    add_require_signed_argument(p)


def add_require_signed_argument(p: argparse.ArgumentParser) -> None:
    """``--require-signed``: refuse (exit 4) unsigned offers and offers with a changed vendor key."""
    p.add_argument("--require-signed", action="store_true", default=None,
                   help="exit with status 4 when an offer is unsigned or signed with a key other than the one "
                        "recorded for its vendor (default: config compare.require_signed)")


def _run(args: argparse.Namespace, ctx: CliContext) -> int:
    from overlap_desktop import api

    if not args.manifest.is_file():
        raise UsageError("no such manifest file", path=args.manifest)
    guard_outputs(args, ctx, inputs=[args.manifest, *(args.eval_files or [])])
    config = ctx.config
    cluster = None if args.cluster is None else (args.cluster or str(config["index.cluster"]))
    if cluster == "":
        raise UsageError("--cluster without an address needs the index.cluster setting (tcp://HOST:8786)")
    with ctx.progress("Comparing") as progress:
        report = api.compare(args.manifest, config.index_path, config=config, floor_seconds=args.floor,
                             eval_files=args.eval_files, eval_fields=args.eval_fields, progress=progress,
                             cluster=cluster, require_signed=args.require_signed)
    write_outputs(report, args, ctx)
    print_report(report, ctx, verbose=ctx.verbose)
    _note_incomplete_library(config, ctx)
    return check_gate(report, args.fail_over, ctx)


def _note_incomplete_library(config: Config, ctx: CliContext) -> None:
    """Say so when indexing is running or was stopped: the answer then misses footage."""
    from overlap_desktop import api

    try:
        note = api.library_completeness(config.index_path, config=config).note
    except api.OverlapError:  # the comparison itself read the library; nothing more to add
        return
    if note:
        ctx.note(note)


COMMAND = Command(
    name="compare",
    help="compare an offer's manifest with your index: how much do you already own?",
    add_arguments=_add_arguments,
    run=_run,
    order=40,
    description="Compare a vendor's .ovlm manifest with the footage in your index and report which offered "
                "hours match footage you already own: per file, per matched segment, with speed changes, "
                "mirroring, crops and splices in plain words. Exit status 3 with --fail-over when the "
                "overlap is at or above the threshold, 4 when the manifest is refused.",
)
