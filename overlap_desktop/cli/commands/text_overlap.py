"""``overlap text-overlap``: n-gram contamination check between annotation sets."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from overlap_desktop import api
from overlap_desktop.api import ExitCode, InputError, Progress
from overlap_desktop.cli.framework import CliContext, Command

#: Training files listed by name in the summary (the JSON output has all of them).
SHOWN_SOURCES = 10


def _add(p: argparse.ArgumentParser) -> None:
    p.add_argument("--test", nargs="+", required=True, metavar="FILE",
                   help="test/evaluation examples: text (one per line), JSONL, JSON, Parquet, compressed "
                        "(.gz/.zst/.xz), a LeRobot folder, MCAP")
    p.add_argument("--train", nargs="+", required=True, metavar="PATH",
                   help="training text: files or folders (text, .jsonl/.json, Parquet, .gz/.zst/.xz/.bz2)")
    p.add_argument("--tokenizer", default="alnum-lower-v1",
                   help="tokenizer id: alnum-lower-v1 (default) or whitespace-v1")
    p.add_argument("--n", type=int, default=None, help="force the n-gram size (default: from the test set)")
    p.add_argument("--percentile", type=float, default=5.0,
                   help="percentile of test lengths for n, 0-100 (default 5; overlapy's rank rule)")
    p.add_argument("--min-n", type=int, default=8, help="smallest n (default 8)")
    p.add_argument("--max-n", type=int, default=13, help="largest n (default 13)")
    p.add_argument("--field", action="append", dest="fields", metavar="NAME",
                   help="JSON field(s) / Parquet column(s) holding the text (default: every string field)")
    p.add_argument("--workers", type=int, default=0, help="worker processes (0 = one per core)")
    p.add_argument("--cluster", metavar="ADDRESS",
                   help="scan on a Dask cluster (tcp://host:8786); workers must see the training paths")
    p.add_argument("--no-resume", action="store_true",
                   help="start over instead of resuming an interrupted scan with the same settings")
    p.add_argument("-o", "--output", metavar="FILE.json", help="write the full result as JSON")
    p.add_argument("--fail-on-match", action="store_true",
                   help="exit 3 when any test example shares an n-gram with the training text")


def _check_output(path: Path) -> None:
    """Fail before a long scan, not after it, when the result could not be written."""
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(f"cannot write the result: the folder {folder} does not exist; create it or choose "
                         f"another -o", path=path)
    if path.is_dir():
        raise InputError("cannot write the result: this is a folder; give a file name", path=path)
    if not os.access(folder, os.W_OK):
        raise InputError(f"cannot write the result: no permission to write in {folder}", path=path)


@contextmanager
def _byte_progress(ctx: CliContext, description: str) -> Iterator[Callable[[Progress], None]]:
    """A bar in bytes (done / total, speed, ETA); the shared bar counts items, not bytes."""
    if ctx.quiet:
        yield lambda p: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, TextColumn, TimeRemainingColumn, TransferSpeedColumn
    from rich.progress import Progress as RichProgress

    console = Console(file=ctx.err, stderr=True)
    if not console.is_terminal:
        with ctx.progress(description) as plain:
            yield plain
        return
    bar = RichProgress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                       TextColumn("ETA"), TimeRemainingColumn(), console=console)
    with bar:
        task = bar.add_task(description, total=None)
        yield lambda p: bar.update(task, completed=p.done, total=p.total)


def _run(args: argparse.Namespace, ctx: CliContext) -> int:
    out = Path(args.output) if args.output else None
    if out is not None:
        _check_output(out)
    # Next to the result when there is one (easy to find and delete), else in the user cache.
    checkpoint: Path | str = out.with_name(f".{out.name}.checkpoint") if out is not None else "auto"
    if args.no_resume and isinstance(checkpoint, Path):
        checkpoint.unlink(missing_ok=True)
    with _byte_progress(ctx, "Scanning training text") as progress:
        result = api.text_overlap([Path(p) for p in args.test], [Path(p) for p in args.train],
                                  tokenizer=args.tokenizer, n=args.n, percentile=args.percentile,
                                  min_n=args.min_n, max_n=args.max_n, fields=args.fields,
                                  workers=args.workers, cluster=args.cluster,
                                  checkpoint=None if args.no_resume and checkpoint == "auto" else checkpoint,
                                  progress=progress)
    if result.resumed_files:
        ctx.note(f"resumed: {result.resumed_files} of {result.files} training files were already scanned")
    ctx.print(f"n = {result.n} ({result.tokenizer}); {len(result.matched_examples)} of {result.examples} "
              f"test examples share an n-gram with the training text ({result.matched_percent:.1f}%).")
    if result.too_short:
        ctx.print(f"{result.too_short} test examples are shorter than n and could not be checked.")
    if result.skipped_files:
        ctx.print(f"{result.skipped_files} files in the training folders were skipped (not text, JSON or Parquet).")
    for path, why in result.skipped_sources:
        ctx.print(f"skipped {api.safe_text(path)}: {api.safe_text(why)}")
    if result.sources:
        ctx.print(f"Matches are in {len(result.sources)} of {result.files} training files:")
        ranked = sorted(result.sources, key=lambda s: (-s.examples, -s.occurrences, s.source))
        for s in ranked[:SHOWN_SOURCES]:
            ctx.print(f"  {api.safe_text(s.source)}: {s.examples} examples, {s.occurrences} occurrences")
        if len(ranked) > SHOWN_SOURCES:
            ctx.print(f"  … and {len(ranked) - SHOWN_SOURCES} more (all in -o)")
    shown: set[int] = set()
    for mt in result.matches:
        if mt.example in shown:
            continue
        shown.add(mt.example)
        ctx.print(f"  example {mt.example} (token {mt.position}): {api.safe_text(repr(mt.ngram))} "
                  f"in {api.safe_text(mt.train_source)} {mt.train_locator}")
    if out is not None:
        result.write_json(out)
        ctx.note(f"wrote {args.output}")
    if args.fail_on_match and result.matched_examples:
        return int(ExitCode.CHECK_FAILED)
    return int(ExitCode.OK)


COMMAND = Command("text-overlap", "check annotation text for n-gram overlap (contamination)", _add, _run,
                  order=90, description="Report every test example sharing an n-gram with the training "
                                        "text (GPT-3 appendix method as in overlapy: n = 5th percentile of "
                                        "test lengths, clamped to 8..13). Training folders, JSONL/JSON, "
                                        "Parquet and compressed text are streamed; --workers and --cluster "
                                        "spread the scan; an interrupted scan resumes.")
