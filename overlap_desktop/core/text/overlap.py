"""Text overlap: n-gram contamination checks for dataset annotations.

The method follows the GPT-3 paper's appendix (as implemented by overlapy): tokenise,
pick the n-gram size n as a low percentile of the test examples' lengths (5th, clamped
to [8, 13]), and report every test example that shares at least one n-gram with the
training text, with the n-gram and where it occurs.

Scale: training sources (folders, text, JSONL/JSON, Parquet, compressed) are read as
streams of blocks (:mod:`overlap_desktop.core.text.sources`); each block's n-grams are
hashed in numpy and looked up in the test n-grams (:mod:`overlap_desktop.core.text.scan`),
in worker processes or on a Dask cluster, with results merged in source order and
finished sources checkpointed (:mod:`overlap_desktop.core.text.fanout`). Candidate hits are
confirmed on the actual tokens, so a hash collision can never produce a false match.

Privacy-preserving form: :func:`keyed_ngram_hashes` turns annotations into keyed
64-bit n-gram hashes for several n at once (no raw text); a vendor's manifest can
carry them and a lab checks its own evaluation set against them with
:func:`check_hashed_overlap` without seeing the vendor's text.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import platformdirs

from overlap_desktop.core.text import fanout as _fanout
from overlap_desktop.core.text import scan as _scan
from overlap_desktop.core.text import sources as _sources
from overlap_desktop.core.text.ngrams import (
    DEFAULT_TOKENIZER,
    TOKENIZERS,
    TokenHasher,
    check_n_rule,
    choose_n,
    keyed_ngram_hashes,
    ngram_hashes,
    ngram_key,
    ngram_windows,
    tokenize,
)
from overlap_desktop.core.types import CancelCallback, Progress, ProgressCallback, check_cancel
from overlap_desktop.errors import InputError, UsageError
from overlap_desktop.paths import APP_AUTHOR, APP_NAME

# Tokenizers and hashing live in ngrams.py; the public ones stay importable from here, the
# module callers have always used for text overlap.
__all__ = [
    "TOKENIZERS",
    "Document",
    "NgramMatch",
    "SourceSummary",
    "TextOverlapResult",
    "check_hashed_overlap",
    "choose_n",
    "iter_documents",
    "keyed_ngram_hashes",
    "ngram_hashes",
    "text_overlap",
    "tokenize",
]

#: Longest line accepted from a text/JSONL source; longer lines are refused with a clear error
#: rather than read into memory whole.
MAX_LINE_BYTES = 64 * 1024 * 1024
#: Training occurrences reported per test n-gram (all are counted as a match either way).
MAX_OCCURRENCES = 5

# --------------------------------------------------------------------------- sources


@dataclass(frozen=True, slots=True)
class Document:
    """One unit of text: a test example or a training document.

    Attributes:
        text: The text.
        source: Where it came from (file path).
        locator: Position in the source (``"line 12"``, ``"record 3 field task"``, ``"topic /x msg 4"``).
    """

    text: str
    source: str
    locator: str


def _open_text(path: Path) -> BinaryIO:
    """Open ``path`` for reading bytes, refusing binary files (a NUL in the first 8 KiB)."""
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from exc
    if b"\x00" in fh.read(8192):
        fh.close()
        raise InputError("looks like a binary file, not text (NUL bytes)", path=path)
    fh.seek(0)
    return fh


def _read_lines(path: Path) -> Iterator[tuple[int, str]]:
    with _open_text(path) as fh:
        for lineno, raw in enumerate(iter(lambda: fh.readline(MAX_LINE_BYTES + 1), b""), start=1):
            if len(raw) > MAX_LINE_BYTES:
                raise InputError(f"line {lineno} is longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB", path=path)
            try:
                yield lineno, raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"line {lineno} is not UTF-8 text ({exc.reason} at byte {exc.start})",
                                 path=path) from exc


def iter_documents(path: Path, *, fields: Sequence[str] | None = None) -> Iterator[Document]:
    """Documents from a source, chosen by what ``path`` is.

    - ``*.jsonl`` / ``*.ndjson``: one document per string field of each record (``fields`` to
      choose); ``*.json``: a list of strings or records (read item by item).
    - ``*.parquet``: string columns (``fields`` to choose); any text kind compressed as
      ``.gz``, ``.zst``, ``.xz`` or ``.bz2``.
    - A LeRobot dataset folder (``meta/info.json``): task strings from ``meta/tasks.jsonl`` and
      episode descriptions from ``meta/episodes.jsonl`` where present.
    - ``*.mcap``: ``std_msgs/String`` messages (and other messages with a string ``data``).
    - Anything else: UTF-8 text, one document per non-empty line.

    Raises:
        InputError: unreadable, binary, non-UTF-8, or malformed input (the message names the
            file and the line).
    """
    path = Path(path)
    src = str(path)
    if path.is_dir():
        if (path / "meta" / "info.json").is_file():
            yield from _lerobot_documents(path)
            return
        raise InputError("is a folder, not a text, JSONL or dataset source", path=path)
    suffix = path.suffix.lower()
    kind, codec, _ = _sources.source_kind(path)
    if codec or kind in ("json", "parquet"):
        yield from _streamed_documents(path, fields)
    elif suffix in (".jsonl", ".ndjson"):
        for lineno, line in _read_lines(path):
            if not line.strip():
                continue
            rec = _sources.loads(line, src, f"line {lineno}")
            for k, text in _sources.json_fields(rec, fields):
                yield Document(text, src, f"line {lineno}" + (f" field {k}" if k else ""))
    elif suffix == ".mcap":
        yield from mcap_documents(path)
    else:
        for lineno, line in _read_lines(path):
            if line.strip():
                yield Document(line.rstrip("\r\n"), src, f"line {lineno}")


def _lerobot_documents(root: Path) -> Iterator[Document]:
    found = False
    for name, fields in (("tasks.jsonl", ["task"]), ("episodes.jsonl", ["tasks", "description"])):
        p = root / "meta" / name
        if p.is_file():
            found = True
            yield from iter_documents(p, fields=fields)
    if not found:
        raise InputError("LeRobot dataset without meta/tasks.jsonl or meta/episodes.jsonl "
                         "(parquet task tables are not read)", path=root)


def _streamed_documents(path: Path, fields: Sequence[str] | None) -> Iterator[Document]:
    """Documents of a compressed, JSON-list or Parquet file, through the training-side readers
    (bounded memory, the same clear errors)."""
    src = str(path)
    task = _sources.whole_file_task(path)
    for block in _sources.read_task(task, fields, mcap_documents):
        if block.raw is not None:
            if b"\x00" in block.raw:
                raise InputError("looks like a binary file, not text (NUL bytes)", path=path)
            for k, raw in enumerate(block.raw.split(b"\n")):
                try:
                    line = raw.decode("utf-8").rstrip("\r")
                except UnicodeDecodeError as exc:
                    raise InputError(f"line {block.first_line + k + 1} is not UTF-8 text ({exc.reason})",
                                     path=path) from None
                if line.strip():
                    yield Document(line, src, f"line {block.first_line + k + 1}")
            continue
        for text, (lineno, loc) in zip(block.texts or [], block.locs or []):
            where = " ".join(x for x in ((f"line {lineno + 1}" if lineno >= 0 else ""), loc) if x)
            yield Document(text, src, where)


def mcap_documents(path: Path) -> Iterator[Document]:
    try:
        from mcap.reader import make_reader
        from mcap_ros2.decoder import DecoderFactory as Ros2Decoder
    except ImportError as exc:  # pragma: no cover - mcap is a core dependency
        raise InputError(f"MCAP support is missing: {exc}", path=path) from exc
    try:
        with open(path, "rb") as fh:
            reader = make_reader(fh, decoder_factories=[Ros2Decoder()])
            counts: dict[str, int] = {}
            for _schema, channel, _message, decoded in reader.iter_decoded_messages():
                text = getattr(decoded, "data", None)
                if not isinstance(text, str):
                    continue
                k = counts[channel.topic] = counts.get(channel.topic, 0) + 1
                yield Document(text, str(path), f"topic {channel.topic} message {k}")
    except InputError:
        raise
    except Exception as exc:  # mcap raises several unrelated types on corrupt input
        raise InputError(f"cannot read MCAP strings: {exc}", path=path) from exc


# --------------------------------------------------------------------------- matching


@dataclass(frozen=True, slots=True)
class NgramMatch:
    """One shared n-gram.

    Attributes:
        example: Index of the test example.
        position: Token index of the n-gram in the test example.
        ngram: The n-gram's tokens joined by spaces (empty in the hashed form: no text there).
        train_source: Training file the n-gram was found in.
        train_locator: Where in that file.
        train_position: Token index within that training document.
    """

    example: int
    position: int
    ngram: str
    train_source: str
    train_locator: str
    train_position: int


@dataclass(frozen=True, slots=True)
class SourceSummary:
    """A training file holding matches.

    Attributes:
        source: The file.
        examples: Test examples with at least one n-gram in it.
        occurrences: Test n-gram occurrences in it (all, not only the ones listed as matches).
    """

    source: str
    examples: int
    occurrences: int


@dataclass(slots=True)
class TextOverlapResult:
    """Which test examples share an n-gram with the training text.

    Attributes:
        n: The n-gram size used.
        tokenizer: Tokenizer id.
        examples: Number of test examples.
        too_short: Test examples shorter than n (cannot be checked; counted, never hidden).
        matched_examples: Sorted indices of examples with at least one shared n-gram.
        matches: Shared n-gram occurrences (up to :data:`MAX_OCCURRENCES` per test n-gram).
        train_bytes: Bytes on disk of the training sources.
        example_text: The test examples' text (for reports), by index.
        sources: Training files holding matches, in scan order.
        files: Training files scanned (including resumed ones).
        skipped_files: Files in training folders skipped as not text (images, binaries...).
        resumed_files: Files whose result came from a checkpoint instead of a new scan.
        skipped_sources: ``(path, reason)`` of training files holding nothing to scan (a
            Parquet file without text columns), not counted in ``files``.
    """

    n: int
    tokenizer: str
    examples: int
    too_short: int
    matched_examples: list[int] = field(default_factory=list)
    matches: list[NgramMatch] = field(default_factory=list)
    train_bytes: int = 0
    example_text: list[str] = field(default_factory=list)
    sources: list[SourceSummary] = field(default_factory=list)
    files: int = 0
    skipped_files: int = 0
    resumed_files: int = 0
    skipped_sources: list[tuple[str, str]] = field(default_factory=list)

    def write_json(self, path: Path) -> None:
        """Write :meth:`to_dict` to ``path`` atomically (see :func:`write_result`)."""
        write_result(self, path)

    @property
    def matched_percent(self) -> float:
        return 0.0 if self.examples == 0 else 100.0 * len(self.matched_examples) / self.examples

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": "overlap.text-overlap/1",
            "n": self.n,
            "tokenizer": self.tokenizer,
            "examples": self.examples,
            "too_short": self.too_short,
            "matched_examples": self.matched_examples,
            "matched_percent": round(self.matched_percent, 3),
            "train_bytes": self.train_bytes,
            "train_files": self.files,
            "skipped_files": self.skipped_files,
            "resumed_files": self.resumed_files,
            "skipped_sources": [{"path": p, "reason": r} for p, r in self.skipped_sources],
            "sources": [{"source": s.source, "examples": s.examples, "occurrences": s.occurrences}
                        for s in self.sources],
            "matches": [{
                "example": mt.example, "position": mt.position, "ngram": mt.ngram,
                "train_source": mt.train_source, "train_locator": mt.train_locator,
                "train_position": mt.train_position,
            } for mt in self.matches],
        }


def write_result(result: TextOverlapResult, path: Path) -> None:
    """Write ``result`` as JSON atomically: ``path`` is the old file or the complete new one.

    Raises:
        InputError: naming ``path`` and the system's reason.
    """
    from overlap_desktop.core.fsutil import atomic_write_bytes

    data = json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n"
    atomic_write_bytes(path, data.encode("utf-8"), open_message="cannot write the result",
                       write_message="cannot write the result")


#: Test examples held at once. The test side is held in memory (its n-grams are what the
#: training text is scanned for), so it is capped where the training side is streamed: a
#: 99 KB .zst of 1 GiB of short lines reached 1.9 GB and a MemoryError (issue 36).
MAX_TEST_EXAMPLES = 1_000_000
#: Decoded characters of test text held at once (see :data:`MAX_TEST_EXAMPLES`).
MAX_TEST_CHARS = 256 * 1024 * 1024


def _examples(test: Sequence[Path | str] | Sequence[Document], fields: Sequence[str] | None) -> list[Document]:
    """Every test example, read as a stream and stopped at the caps; a test file holding no
    example at all is an error (a check over it would say 0 of 0, which reads as clean)."""
    examples: list[Document] = []
    chars = 0
    for item in test:
        before = len(examples)
        for doc in [item] if isinstance(item, Document) else iter_documents(Path(item), fields=fields):
            examples.append(doc)
            chars += len(doc.text)
            if len(examples) > MAX_TEST_EXAMPLES or chars > MAX_TEST_CHARS:
                what = (f"{MAX_TEST_EXAMPLES:,} test examples" if len(examples) > MAX_TEST_EXAMPLES
                        else f"{MAX_TEST_CHARS // (1024 * 1024)} MiB of test text")
                raise InputError(f"the test side holds more than {what} (the limit: test examples are held in "
                                 "memory, training text is streamed); check a sample or split the test set",
                                 path=None if isinstance(item, Document) else item)
        if len(examples) == before and not isinstance(item, Document):
            raise InputError("no test examples in this file (no text lines, records or text columns); "
                             "choose fields or columns with --field", path=item)
    return examples


def text_overlap(test: Sequence[Path | str] | Sequence[Document], train: Sequence[Path | str], *,
                 tokenizer: str = DEFAULT_TOKENIZER, n: int | None = None, percentile: float = 5.0,
                 min_n: int = 8, max_n: int = 13, fields: Sequence[str] | None = None,
                 workers: int = 0, cluster: str | None = None, checkpoint: Path | str | None = None,
                 progress: ProgressCallback | None = None,
                 cancel: CancelCallback | None = None) -> TextOverlapResult:
    """Report every test example that shares an n-gram with the training text.

    Args:
        test: Test-set sources (paths) or already-built :class:`Document` s (one per example).
        train: Training files and folders (see :mod:`overlap_desktop.core.text.sources`).
        tokenizer: A key of :data:`TOKENIZERS`.
        n: Force the n-gram size; by default :func:`choose_n` over the test examples.
        percentile, min_n, max_n: The n-choosing rule.
        fields: JSON fields / Parquet columns to read (default: every string field).
        workers: Worker processes (0 = one per core; 1 = in this process).
        cluster: Address of a Dask scheduler to scan on instead (``tcp://host:8786``).
        checkpoint: File recording finished sources; an interrupted scan with the same
            settings resumes from it, and it is removed when the scan completes. ``"auto"``:
            a file in the user cache folder named after the settings and training paths.
        progress: Receives bytes on disk of training sources finished, out of their total.
        cancel: Polled between blocks (one worker) or tasks.

    Raises:
        InputError: a source is unreadable or malformed, or a setting is out of range.
        Cancelled: ``cancel()`` turned true (finished sources stay in the checkpoint).
    """
    if tokenizer not in TOKENIZERS:
        tokenize("", tokenizer)  # raises the clear error
    check_n_rule(percentile, min_n, max_n)
    if workers < 0:
        raise UsageError(f"--workers must be 0 (one per core) or more (got {workers})")
    examples = _examples(test, fields)
    lengths = [len(tokenize(d.text, tokenizer)) for d in examples]
    if n is None:
        n = choose_n(lengths, percentile=percentile, min_n=min_n, max_n=max_n)
    if n < 1:
        raise InputError(f"n-gram size must be at least 1 (got {n})")
    test_norm = _scan.normalize_docs([d.text for d in examples], tokenizer, TOKENIZERS[tokenizer])
    table = _scan.TestTable(test_norm, n)
    sources, skipped = _sources.expand_sources(train)
    # A Parquet file without text columns is listed, never counted silently as scanned.
    passed_over = [(s.path, why) for s in sources
                   if s.kind == "parquet" and (why := _sources.parquet_skip_reason(s.path, fields))]
    sources = [s for s in sources if s.path not in {p for p, _ in passed_over}]
    state = _fanout.ScanState(tokenizer, table, list(fields) if fields else None, MAX_OCCURRENCES, mcap_documents)
    result = TextOverlapResult(n=n, tokenizer=tokenizer, examples=len(examples),
                               too_short=sum(1 for k in lengths if k < n),
                               example_text=[d.text for d in examples], files=len(sources),
                               skipped_files=skipped, skipped_sources=passed_over)
    ckpt = None
    if checkpoint is not None:
        ckpt = _checkpoint(checkpoint, tokenizer, n, fields, test_norm, train)
        ckpt.load()
    run = _Run(sources, ckpt, progress, cancel)
    result.resumed_files = len(run.finished)
    if ckpt:
        ckpt.open()
    run.on_bytes(0)
    try:
        _fanout.run_tasks(run.tasks(), state, workers=workers or (os.cpu_count() or 1), cluster=cluster,
                          on_result=run.on_result, on_bytes=run.on_bytes, cancel=cancel)
    finally:
        if ckpt:
            ckpt.close(remove=False)
    _merge_sources(result, [run.finished[i] for i in sorted(run.finished)])
    result.train_bytes = run.total
    if ckpt:
        ckpt.close(remove=True)
    return result


def _checkpoint(checkpoint: Path | str, tokenizer: str, n: int, fields: Sequence[str] | None,
                test_norm: bytes, train: Sequence[Path | str]) -> _fanout.Checkpoint:
    """The checkpoint of this job: the settings and test set decide which results it may reuse;
    ``"auto"`` places it in the user cache folder, named after the job and training paths."""
    job = _fanout.job_digest(["text-overlap/2", tokenizer, str(n), json.dumps(sorted(fields or [])),
                              str(MAX_OCCURRENCES), test_norm])
    if checkpoint == "auto":
        where = _fanout.job_digest([job, *(os.path.abspath(t) for t in train)])[:24]
        checkpoint = Path(platformdirs.user_cache_dir(APP_NAME, APP_AUTHOR)) / "text-overlap" / f"{where}.ckpt"
    return _fanout.Checkpoint(Path(checkpoint), job)


class _Run:
    """One scan's bookkeeping: which sources are finished (from the checkpoint or just now),
    the tasks still to run, per-source parts until a source is complete, and bytes done."""

    def __init__(self, sources: Sequence[_sources.Source], ckpt: _fanout.Checkpoint | None,
                 progress: ProgressCallback | None, cancel: CancelCallback | None) -> None:
        self.sources, self.ckpt, self.progress, self.cancel = sources, ckpt, progress, cancel
        self.finished: dict[int, _fanout.SourceResult] = {}
        for i, s in enumerate(sources):
            prev = ckpt.finished(s) if ckpt else None
            if prev is not None:
                self.finished[i] = prev
        self.total = sum(s.size for s in sources)
        self.done = sum(sources[i].size for i in self.finished)
        self.parts: dict[int, list[_fanout.TaskResult]] = {}
        self.expected: dict[int, int] = {}

    def on_bytes(self, k: int) -> None:
        self.done += k
        if self.progress:
            self.progress(Progress("text-overlap", self.done, self.total, unit="bytes"))

    def tasks(self) -> Iterator[_sources.Task]:
        """Tasks of unfinished sources; parts a checkpoint already holds are replayed instead."""
        ckpt, sources = self.ckpt, self.sources
        for i in range(len(sources)):
            if i in self.finished:
                continue
            check_cancel(self.cancel)
            planned = _sources.plan_tasks(sources, i)
            self.expected[i] = len(planned)
            for task in planned:
                stored = ckpt.finished_part(sources[i], task) if ckpt and len(planned) > 1 else None
                if stored is None:
                    yield task
                else:
                    self.on_bytes(task.size)
                    self.on_result(stored, None)

    def on_result(self, r: _fanout.TaskResult, task: _sources.Task | None) -> None:
        ckpt = self.ckpt
        if ckpt and task is not None and self.expected.get(r.source, 0) > 1:
            ckpt.add_part(self.sources[r.source], task, r)
        got = self.parts.setdefault(r.source, [])
        got.append(r)
        if len(got) == self.expected.get(r.source, -1):
            sr = _fanout.merge_parts(self.sources[r.source], self.parts.pop(r.source), MAX_OCCURRENCES)
            self.finished[r.source] = sr
            if ckpt:
                ckpt.add(sr)


def _merge_sources(result: TextOverlapResult, done: Sequence[_fanout.SourceResult]) -> None:
    """Fill ``result`` from per-source results, in source order (so the result does not depend
    on which worker finished first)."""
    per_gram: dict[tuple[int, int], int] = {}
    for sr in done:
        for ex, pos, gram, where, tpos in sr.hits:
            k = per_gram.get((ex, pos), 0)
            if k < MAX_OCCURRENCES:
                per_gram[(ex, pos)] = k + 1
                result.matches.append(NgramMatch(ex, pos, gram, sr.source.path, where, tpos))
        if sr.counts:
            result.sources.append(SourceSummary(sr.source.path, len(sr.counts), sum(sr.counts.values())))
    result.matches.sort(key=lambda mt: (mt.example, mt.position))
    result.matched_examples = sorted({mt.example for mt in result.matches})


def check_hashed_overlap(test: Sequence[Path | str] | Sequence[Document], hashed: dict[int, np.ndarray], *,
                         tokenizer: str = DEFAULT_TOKENIZER, n: int | None = None, percentile: float = 5.0,
                         min_n: int = 8, max_n: int = 13, fields: Sequence[str] | None = None
                         ) -> TextOverlapResult:
    """Check test examples against keyed n-gram hashes (e.g. from a vendor's manifest).

    ``n`` is chosen as in :func:`text_overlap` and then moved to the nearest n the hashes
    were made for. Matches carry positions and the lab's own n-gram text (the lab owns the
    test set); nothing of the vendor's text is known beyond "this n-gram occurs".
    """
    examples = _examples(test, fields)
    toks = [tokenize(d.text, tokenizer) for d in examples]
    if not hashed:
        raise InputError("the manifest carries no text n-gram hashes")
    if n is None:
        n = choose_n([len(t) for t in toks], percentile=percentile, min_n=min_n, max_n=max_n)
    want = n
    n = min(hashed, key=lambda k: (abs(k - want), k))
    ref = np.asarray(hashed[n], dtype=np.uint64)
    hasher = TokenHasher(ngram_key(tokenizer, n))
    result = TextOverlapResult(n=n, tokenizer=tokenizer, examples=len(examples), too_short=0,
                               example_text=[d.text for d in examples])
    for ex, t in enumerate(toks):
        if len(t) < n:
            result.too_short += 1
            continue
        hs = ngram_windows(hasher(t), n)
        pos = np.searchsorted(ref, hs)
        pos[pos >= ref.shape[0]] = 0
        for p in np.nonzero(ref[pos] == hs)[0].tolist() if ref.size else []:
            result.matches.append(NgramMatch(ex, p, " ".join(t[p:p + n]), "manifest", "hashed n-grams", -1))
    result.matched_examples = sorted({mt.example for mt in result.matches})
    return result
