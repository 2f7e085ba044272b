"""``overlap index PATH...``: fingerprint files and folders into the local index.

Exit status: 0 when every file was indexed (or unchanged), 4 when any file was
refused (its reason is printed and recorded in the index), 130 when interrupted
(finished files are kept; run the same command again to resume).
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any

from overlap_desktop.api import Cancelled, ExitCode, UsageError
from overlap_desktop.cli.framework import CliContext, Command, safe_terminal

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.api import IndexSummary, Progress

__all__ = ["COMMAND", "print_summary"]

#: Failed files listed one per line before the rest are summarised (all with -v).
_MAX_FAILED = 30


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH", help="video files, recordings or folders (recursive)")
    p.add_argument("--preset", choices=("fast", "balanced", "thorough"), default=None,
                   help="variant preset: which crop rungs are hashed besides the upright frame "
                        "(default: index.preset)")
    p.add_argument("--crop-edges", metavar="SIDES", default=None,
                   help="comma-separated sides (top,bottom,left,right) that get one-sided edge crops")
    p.add_argument("--crop-ladder", metavar="LIST", default=None,
                   help='centred crop rungs as fractions kept, e.g. "0.94,0.88,0.82"; "" for none')
    p.add_argument("--aspect-crops", metavar="LIST", default=None, dest="aspect_crops",
                   help='widths kept by centred aspect crops at full height, e.g. "0.75,0.5625" (16:9 cropped '
                        'to 4:3 and to square); "" for none (default: index.aspect_crops)')
    p.add_argument("--fps", metavar="N", type=float, default=None,
                   help="samples per second of footage (default 4; lower weakens detection)")
    p.add_argument("--frame-rate", metavar="HZ", type=float, default=None, dest="frame_rate",
                   help="frame rate of robot datasets that store none (ALOHA HDF5, RLDS, zarr buffers; default: "
                        "index.frame_rate); a rate stored in the file always wins")
    p.add_argument("--forget-missing", action="store_true",
                   help="drop index entries under PATH whose file no longer exists (refused when PATH is an "
                        "empty folder, e.g. an unmounted disk, unless --force)")
    p.add_argument("--force", action="store_true",
                   help="with --forget-missing: forget entries even under an empty folder")
    p.add_argument("--workers", metavar="N", type=int, default=None,
                   help="files fingerprinted at once in worker processes (default: index.workers, "
                        "0 = one per core; 1 = no worker processes)")
    p.add_argument("--cluster", metavar="ADDRESS", default=None,
                   help="fingerprint on the workers of a running Dask cluster (tcp://HOST:8786; needs the "
                        "'cluster' extra); the workers must see the footage at the same paths")
    p.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    p.add_argument("--rebuild-shards", action="store_true",
                   help="rebuild the search shards from the index database (repairs damaged shards; "
                        "no footage is read)")


class _Display:
    """Progress bar with ETA (by bytes), a files counter, and one line per finished file."""

    def __init__(self, ctx: CliContext) -> None:
        self.ctx = ctx
        self.files_done = 0
        self.files_total: int | None = None
        self._bar: Any = None
        self._task: Any = None
        self._last_plain = 0.0

    def __enter__(self) -> _Display:
        if self.ctx.quiet:
            return self
        from rich.console import Console
        from rich.progress import BarColumn, TaskProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
        from rich.progress import Progress as RichProgress

        console = Console(file=self.ctx.err, stderr=True)
        if console.is_terminal:
            self._bar = RichProgress(
                TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), TextColumn("{task.fields[files]}"),
                TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                TextColumn("{task.fields[current]}"), console=console, transient=False)
            self._bar.__enter__()
            self._task = self._bar.add_task("Indexing", total=None, files="", current="")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)

    def line(self, text: str) -> None:
        if self._bar is not None:
            self._bar.console.print(text, markup=False, highlight=False)
        else:
            self.ctx.note(text)

    def __call__(self, p: Progress) -> None:
        if p.stage == "scan":
            self.files_total = int(p.total or 0)
            return
        if self.ctx.quiet:
            return
        if p.stage == "seal":
            self._seal(p)
            return
        if p.stage != "index":
            return
        if p.message and p.current:
            self.files_done += 1
            if p.message != "unchanged" or self.ctx.verbose:
                self.line(f"{safe_terminal(p.current)}: {safe_terminal(p.message)}")
        files = f"{self.files_done}/{self.files_total} files" if self.files_total is not None else (
            f"{self.files_done} files")
        if self._bar is not None:
            cur = safe_terminal(p.current or "")
            if len(cur) > 40:
                cur = "…" + cur[-39:]
            if p.current_done is not None and not p.message and cur:
                cur = f"{cur} {p.current_done:4.0%}"
            from rich.markup import escape

            self._bar.update(self._task, completed=p.done, total=p.total, files=files, current=escape(cur))
        else:
            now = time.monotonic()
            if p.total and now - self._last_plain > 10.0 and not p.message:
                self._last_plain = now
                self.ctx.note(f"Indexing: {100.0 * p.done / p.total:.0f}% ({files} done)")

    def _seal(self, p: Progress) -> None:
        """Building the search shards after the files (or alone, for ``--rebuild-shards``)."""
        if self._bar is not None:
            from rich.markup import escape

            self._bar.update(self._task, description="Search shards", completed=p.done, total=p.total, files="",
                             current=escape(safe_terminal(p.message or "")))
        elif p.message and p.message.startswith("building"):
            pct = f"{100.0 * p.done / p.total:.0f}%" if p.total else "?"
            self.ctx.note(f"Search shards: {p.message} ({pct} of the fingerprints read)")


def _hms(hours: float) -> str:
    sec = int(round(hours * 3600))
    return f"{sec // 3600}:{sec % 3600 // 60:02d}:{sec % 60:02d}"


def print_summary(summary: IndexSummary, ctx: CliContext) -> None:
    """The human summary of an indexing run (stdout)."""
    s = summary
    head = "Interrupted: kept" if s.cancelled else "Indexed"
    ctx.print(f"{head} {s.indexed} file(s), {s.skipped} unchanged, {len(s.failed)} failed "
              f"({s.files_seen} found) in {s.elapsed_s:.1f} s")
    ctx.print(f"  index:               {safe_terminal(s.index_path)}")
    if s.indexed or s.failed:
        ctx.print(f"  fingerprinted by:    {s.engine}")
    ctx.print(f"  hours indexed:       {s.hours_indexed:.3f} h ({_hms(s.hours_indexed)})")
    ctx.print(f"  hours indeterminate: {s.hours_indeterminate:.3f} h ({_hms(s.hours_indeterminate)}; "
              "featureless or static, excluded from matching)")
    if s.forgotten:
        ctx.print(f"  forgotten:           {s.forgotten} file(s) no longer on disk")
    if s.missing:
        ctx.print(f"  missing:             {len(s.missing)} indexed file(s) no longer on disk "
                  "(kept; --forget-missing drops them)")
    for w in s.warnings:
        ctx.print(f"  warning: {safe_terminal(w)}")
    if s.failed:
        ctx.print(f"  errors ({len(s.failed)}):")
        shown = s.failed if ctx.verbose else s.failed[:_MAX_FAILED]
        for path, reason in shown:
            ctx.print(f"    {safe_terminal(path)}: {safe_terminal(reason)}")
        if len(shown) < len(s.failed):
            ctx.print(f"    ... and {len(s.failed) - len(shown)} more (-v lists all; `overlap files --errors`)")
    if s.cancelled:
        ctx.print("  run the same command again to resume")


def _rebuild_shards(ctx: CliContext) -> int:
    from overlap_desktop import api

    path = ctx.config.index_path
    with api.open_index(path, create=False) as idx, _Display(ctx) as display:
        built = idx.rebuild_shards(progress=display)
    ctx.print(f"Rebuilt the search shards of {safe_terminal(path)}: {built} shard{'s' if built != 1 else ''}.")
    return int(ExitCode.OK)


def _run(args: argparse.Namespace, ctx: CliContext) -> int:
    from overlap_desktop import api

    if args.rebuild_shards:
        if args.paths:
            raise UsageError("--rebuild-shards reads no footage: give it no PATH (run indexing separately)")
        return _rebuild_shards(ctx)
    if not args.paths:
        raise UsageError("give at least one PATH to index (a file or folder)")
    if args.preset is not None:
        ctx.overrides["index.preset"] = args.preset
    if args.crop_edges is not None:
        ctx.overrides["index.crop_edges"] = args.crop_edges
    if args.crop_ladder is not None:
        ctx.overrides["index.crop_ladder"] = args.crop_ladder
    if args.aspect_crops is not None:
        ctx.overrides["index.aspect_crops"] = args.aspect_crops
    if args.fps is not None:
        ctx.overrides["index.fps"] = args.fps
    if args.frame_rate is not None:
        ctx.overrides["index.frame_rate"] = args.frame_rate
    if args.workers is not None:
        if args.workers < 0:
            ctx.note("overlap index: error: --workers must be 0 (one per core) or more")
            return int(ExitCode.USAGE)
        ctx.overrides["index.workers"] = args.workers
    if args.cluster is not None:
        ctx.overrides["index.cluster"] = args.cluster
    config = ctx.config
    if config["index.fps"] < 4 and not args.json:
        ctx.note(f"overlap index: warning: sampling at {config['index.fps']:g} fps (below 4) weakens "
                 "detection of trims, splices and speed changes")
    try:
        with _Display(ctx) as display:
            summary = api.index_paths(args.paths, config=config, forget_missing=args.forget_missing,
                                      force=args.force, progress=display)
    except Cancelled as exc:
        partial = getattr(exc, "summary", None)
        if partial is not None:
            if args.json:
                ctx.print_json(partial.to_dict())
            else:
                print_summary(partial, ctx)
        return int(ExitCode.INTERRUPTED)
    totals = _totals(summary.index_path)
    if args.json:
        ctx.print_json({**summary.to_dict(), "index_totals": totals})
    else:
        print_summary(summary, ctx)
        if totals:
            ctx.print(f"  index now holds:     {totals['files_ok']} file(s), {totals['hours']:.3f} h, "
                      f"{totals['bytes'] / 1e6:.1f} MB on disk")
            older = int(totals.get("shards_older_layout", 0))
            if older:
                took = api.format_estimate(float(totals.get("shards_rebuild_estimate_s", 0.0)))
                ctx.print(f"  note: {older} of {totals['shards']} search shards were written by an earlier "
                          "version (slower, and can miss short copies of fast-moving footage); "
                          f"`overlap index --rebuild-shards` rewrites them (no footage is read; {took} for "
                          "this library)")
    return int(ExitCode.INPUT_REFUSED if summary.failed else ExitCode.OK)


def _totals(index_path: str) -> dict[str, Any] | None:
    """The whole index's counts after the run (None if it cannot be read right now)."""
    from overlap_desktop import api
    from overlap_desktop.api import OverlapError

    try:
        with api.open_index(index_path, readonly=True) as idx:
            return idx.stats()
    except OverlapError:
        return None


COMMAND = Command(
    name="index",
    help="fingerprint video files and recordings into the local index (resumable)",
    description="Fingerprint every video file and recording under PATH into the local index. "
                "Re-running skips unchanged files, re-fingerprints changed ones, and resumes an "
                "interrupted run. Exit status: 0 all indexed, 4 some file was refused (reasons "
                "printed), 130 interrupted (finished files kept).",
    add_arguments=_add_arguments,
    run=_run,
    order=10,
)
