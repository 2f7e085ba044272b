"""Running the scan's tasks: in this process, in worker processes, or on a Dask cluster.

Every task is scanned the same way wherever it runs (:func:`scan_task`); what differs is only
who runs it. Results are merged in task order (source, then part), never in arrival order, so
``--workers 1``, ``--workers 8`` and a cluster give byte-identical results.

Resuming: when a source's tasks are all done, its result is appended to a checkpoint file (one
JSON line, fsynced) before the next source's result; a rerun with the same settings loads
those lines and skips the sources whose size and modification time are unchanged. A line cut
short by a crash is ignored (that source is rescanned).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from overlap_desktop.core.engines import engine_for, engine_named, run_each
from overlap_desktop.core.engines.base import Task as Call
from overlap_desktop.core.fsutil import os_write_error
from overlap_desktop.core.text import scan as _scan
from overlap_desktop.core.text.ngrams import TOKENIZERS
from overlap_desktop.core.text.sources import Block, Source, Task, read_task
from overlap_desktop.core.types import CancelCallback
from overlap_desktop.errors import InputError, OverlapError

__all__ = ["CHECKPOINT_SCHEMA", "Checkpoint", "ScanState", "SourceResult", "TaskResult", "run_tasks",
           "scan_call", "scan_task"]

CHECKPOINT_SCHEMA = "overlap.text-overlap-checkpoint/1"

#: One match inside a task: (example, test position, n-gram, line within the task or -1,
#: locator text, token position within the training document).
Hit = tuple[int, int, str, int, str, int]


@dataclass(slots=True)
class ScanState:
    """What every worker needs: the tokenizer, the test n-grams and the MCAP text reader."""

    tokenizer: str
    table: _scan.TestTable
    fields: list[str] | None
    max_occurrences: int
    #: Reads the strings of an MCAP file (a module-level function of the text stage, which this
    #: runner does not import); None: MCAP sources are not read.
    mcap_documents: Callable[[Path], Iterator[Any]] | None = None


@dataclass(slots=True)
class TaskResult:
    """What a task found.

    Attributes:
        source, part: Which task.
        size: Bytes on disk it covered.
        lines: Lines it held (to number the lines of the next part of the same file).
        hits: Matches, at most ``max_occurrences`` per test n-gram, in text order.
        counts: Example -> occurrences of its n-grams in this task (all of them, uncapped).
    """

    source: int
    part: int
    size: int
    lines: int = 0
    hits: list[Hit] = field(default_factory=list)
    counts: dict[int, int] = field(default_factory=dict)


def _bad_line(task: Task, first_line: int, exc: _scan.BadLine) -> InputError:
    line = first_line + exc.index + 1
    where = f"line {line}" if task.start == 0 else f"line {line} after byte {task.start}"
    return InputError(f"{where} is not UTF-8 text ({exc.reason})", path=task.path)


def scan_task(task: Task, state: ScanState, *, on_block: Callable[[int], None] | None = None,
              mcap_documents: Callable[[Path], Iterator[Any]] | None = None) -> TaskResult:
    """Read and scan one task.

    Args:
        task: The task.
        state: Tokenizer and test n-grams.
        on_block: Called with the bytes on disk consumed so far after each block.
        mcap_documents: Reader for MCAP sources (default: the state's).
    """
    fn = TOKENIZERS[state.tokenizer]
    table = state.table
    res = TaskResult(task.source, task.part, task.size)
    per_gram: dict[tuple[int, int], int] = {}
    lines = 0
    block: Block
    for block in read_task(task, state.fields, mcap_documents or state.mcap_documents):
        if block.raw is not None:
            try:
                norm = _scan.normalize_lines(block.raw, state.tokenizer, fn)
            except _scan.BadLine as exc:
                raise _bad_line(task, block.first_line, exc) from None
            lines = block.first_line + block.newlines
        else:
            norm = _scan.normalize_docs(block.texts or [], state.tokenizer, fn)
        if len(table):
            w = _scan.block_windows(norm, table.n)
            for line, tpos, ex, pos, gram in table.matches(norm, w):
                res.counts[ex] = res.counts.get(ex, 0) + 1
                k = per_gram.get((ex, pos), 0)
                if k >= state.max_occurrences:
                    continue
                per_gram[(ex, pos)] = k + 1
                if block.raw is not None:
                    loc_line, loc = block.first_line + line, ""
                else:
                    loc_line, loc = block.locs[line] if block.locs else (-1, "")
                res.hits.append((ex, pos, gram.decode("utf-8", "replace"), loc_line, loc, tpos))
        if block.locs is not None and block.locs:
            lines = max(lines, max(ln for ln, _ in block.locs) + 1)
        if on_block:
            on_block(block.done)
    res.lines = lines
    return res


# --------------------------------------------------------------------------- per-source merge


@dataclass(slots=True)
class SourceResult:
    """A finished source: its matches with file-wide locators, and occurrence counts."""

    source: Source
    hits: list[tuple[int, int, str, str, int]]  # example, position, n-gram, locator, train position
    counts: dict[int, int]

    def to_json(self) -> dict[str, Any]:
        s = self.source
        return {"path": s.path, "size": s.size, "mtime_ns": s.mtime_ns, "hits": [list(h) for h in self.hits],
                "counts": [[k, v] for k, v in sorted(self.counts.items())]}


def merge_parts(source: Source, parts: Sequence[TaskResult], max_occurrences: int) -> SourceResult:
    """One source's task results, in part order, with line numbers counted across parts."""
    hits: list[tuple[int, int, str, str, int]] = []
    counts: dict[int, int] = {}
    per_gram: dict[tuple[int, int], int] = {}
    base = 0
    for r in sorted(parts, key=lambda r: r.part):
        for ex, pos, gram, line, loc, tpos in r.hits:
            k = per_gram.get((ex, pos), 0)
            if k >= max_occurrences:
                continue
            per_gram[(ex, pos)] = k + 1
            where = " ".join(x for x in ((f"line {base + line + 1}" if line >= 0 else ""), loc) if x)
            hits.append((ex, pos, gram, where, tpos))
        for ex, c in r.counts.items():
            counts[ex] = counts.get(ex, 0) + c
        base += r.lines
    return SourceResult(source, hits, counts)


# --------------------------------------------------------------------------- checkpoint


class Checkpoint:
    """Finished sources of a job, kept in a JSON-lines file so an interrupted scan resumes.

    The first line names the job (a digest of everything that changes the result except the
    list of sources, so adding a folder keeps what was done); a file of another job is
    replaced. Each further line is one finished source.
    """

    def __init__(self, path: Path, job: str) -> None:
        self.path = path
        self.job = job
        self.done: dict[str, dict[str, Any]] = {}
        self.parts: dict[tuple[str, int, int], dict[str, Any]] = {}
        self._fh: Any = None

    def load(self) -> None:
        try:
            with open(self.path, "rb") as fh:
                head = fh.readline()
                try:
                    meta = json.loads(head)
                except (json.JSONDecodeError, RecursionError, UnicodeDecodeError):
                    return
                if not isinstance(meta, dict) or meta.get("schema") != CHECKPOINT_SCHEMA \
                        or meta.get("job") != self.job:
                    return
                for raw in fh:
                    try:
                        rec = json.loads(raw)
                    except (json.JSONDecodeError, RecursionError, UnicodeDecodeError):
                        break  # the tail of a write cut short by a crash
                    if not isinstance(rec, dict) or not isinstance(rec.get("path"), str):
                        continue
                    if rec.get("kind") == "part":
                        self.parts[(rec["path"], rec.get("start", -1), rec.get("end", -1))] = rec
                    else:
                        self.done[rec["path"]] = rec
        except FileNotFoundError:
            return
        except OSError as exc:
            raise InputError(f"cannot read the checkpoint: {exc.strerror or exc}", path=self.path) from exc

    def finished(self, s: Source) -> SourceResult | None:
        """The stored result of ``s`` if it was finished with the same size and mtime."""
        rec = self.done.get(s.path)
        if not rec or rec.get("size") != s.size or rec.get("mtime_ns") != s.mtime_ns:
            return None
        try:
            hits = [(int(e), int(p), str(g), str(w), int(t)) for e, p, g, w, t in rec["hits"]]
            counts = {int(k): int(v) for k, v in rec["counts"]}
        except (KeyError, TypeError, ValueError):
            return None
        return SourceResult(s, hits, counts)

    def finished_part(self, s: Source, task: Task) -> TaskResult | None:
        """The stored result of one byte range of a large file that was not finished as a whole
        (so a single 100 GB file resumes near where it stopped, not at its start)."""
        rec = self.parts.get((s.path, task.start, task.end))
        if not rec or rec.get("size") != s.size or rec.get("mtime_ns") != s.mtime_ns:
            return None
        try:
            hits = [(int(e), int(p), str(g), int(ln), str(w), int(t)) for e, p, g, ln, w, t in rec["hits"]]
            counts = {int(k): int(v) for k, v in rec["counts"]}
            return TaskResult(task.source, task.part, task.size, int(rec["lines"]), hits, counts)
        except (KeyError, TypeError, ValueError):
            return None

    def add_part(self, s: Source, task: Task, r: TaskResult) -> None:
        self._write({"kind": "part", "path": s.path, "size": s.size, "mtime_ns": s.mtime_ns, "start": task.start,
                     "end": task.end, "lines": r.lines, "hits": [list(h) for h in r.hits],
                     "counts": [[k, v] for k, v in sorted(r.counts.items())]})

    def open(self) -> None:
        """Start writing: keep the loaded records (rewritten), drop anything else."""
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(json.dumps({"schema": CHECKPOINT_SCHEMA, "job": self.job}) + "\n")
                for rec in [*self.done.values(), *(r for r in self.parts.values() if r["path"] not in self.done)]:
                    fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
            self._fh = open(self.path, "a", encoding="utf-8")
        except OSError as exc:
            # A full disk must not leave the hidden temporary copy behind (issue 36).
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise os_write_error(exc, self.path, "cannot write the checkpoint (a hidden file that lets an "
                                 "interrupted scan resume; nothing was left behind)") from exc

    def add(self, r: SourceResult) -> None:
        self._write(r.to_json())

    def _write(self, rec: dict[str, Any]) -> None:
        if self._fh is None:
            return
        try:
            self._fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
            self._fh.flush()
            os.fsync(self._fh.fileno())
        except OSError as exc:
            raise os_write_error(exc, self.path, _CHECKPOINT_WRITE) from exc

    def close(self, *, remove: bool) -> None:
        if self._fh is not None:
            fh, self._fh = self._fh, None
            # Every record was flushed when written; a close that fails (the disk filled, a
            # file-size limit) loses at most a torn last line, which load() skips, and must
            # not hide the error that stopped the scan.
            with contextlib.suppress(OSError):
                fh.close()
        if remove:
            try:
                self.path.unlink()
            except OSError:
                pass


#: What a failed checkpoint write says: the hidden file stays (a rerun resumes from it).
_CHECKPOINT_WRITE = ("cannot write the checkpoint (this hidden file keeps the finished part of the scan so a "
                     "rerun resumes; delete it to start afresh)")


def job_digest(parts: Iterable[bytes | str]) -> str:
    h = hashlib.sha256()
    for p in parts:
        b = p.encode("utf-8") if isinstance(p, str) else p
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


# --------------------------------------------------------------------------- runners


def scan_call(part: Task, state: ScanState, *, task: Call) -> TaskResult:
    """The engine's work function: :func:`scan_task` on one part, reporting the bytes read so far
    and polling the run's cancel between blocks."""

    def step(done: int) -> None:
        if task.progress is not None:
            task.progress(done)
        task.check()

    return scan_task(part, state, on_block=step)


def run_tasks(tasks: Iterable[Task], state: ScanState, *, workers: int, cluster: str | None,
              on_result: Callable[[TaskResult, Task], None], on_bytes: Callable[[int], None],
              cancel: CancelCallback | None) -> None:
    """Run every task and hand each result to ``on_result`` (in completion order).

    Args:
        tasks: The tasks (consumed lazily: at most a few per worker are in flight).
        state: Tokenizer and test n-grams (sent to each worker once).
        workers: Worker processes on this machine (1: in this process). Ignored with ``cluster``.
        cluster: Address of a Dask scheduler (``tcp://host:8786``), or None.
        on_result: Receives each task's result, with the task.
        on_bytes: Receives bytes on disk newly finished (for progress).
        cancel: Polled between blocks/tasks.
    """
    seen: dict[Hashable, int] = {}

    def read(key: Hashable, done: float) -> None:  # within-task progress, where the engine passes it on
        on_bytes(int(done) - seen.get(key, 0))
        seen[key] = int(done)

    engine = engine_named(engine_for(cluster=cluster, workers=workers), workers=workers, address=cluster or "",
                          label="text-scan", on_progress=read, cancel=cancel)
    try:
        shared = engine.share(state)
        by_key: dict[Hashable, Task] = {}

        def calls() -> Iterator[tuple[Hashable, tuple[Any, ...]]]:
            for task in tasks:
                by_key[(task.source, task.part)] = task
                yield (task.source, task.part), (task, shared)

        for done in run_each(engine, scan_call, calls(), cancel=cancel):
            task = by_key.pop(done.key)
            try:
                r = done.result()
            except OverlapError:
                raise
            except Exception as exc:  # a worker died repeatedly, or a task could not be run there
                if not cluster:
                    raise
                raise InputError(f"the Dask cluster at {cluster} could not run a scan task: {exc}") from exc
            on_bytes(task.size - seen.pop(done.key, 0))
            on_result(r, task)
    finally:
        engine.close()
