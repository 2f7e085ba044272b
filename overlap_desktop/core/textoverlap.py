"""Text overlap: n-gram contamination checks for dataset annotations.

The method follows the GPT-3 paper's appendix (as implemented by overlapy): tokenise,
pick the n-gram size n as a low percentile of the test examples' lengths (5th, clamped
to [8, 13]), and report every test example that shares at least one n-gram with the
training text, with the n-gram and where it occurs.

Scale: n-grams are hashed to 64 bits with a rolling polynomial over per-token hashes
(numpy, no Python loop per n-gram); the training text is streamed in chunks and
checked against the sorted test hashes in worker processes on every core. Candidate
hits are confirmed on the actual tokens, so a hash collision can never produce a
false match.

Privacy-preserving form: :func:`keyed_ngram_hashes` turns annotations into keyed
64-bit n-gram hashes for several n at once (no raw text); a vendor's manifest can
carry them and a lab checks its own evaluation set against them with
:func:`check_hashed_overlap` without seeing the vendor's text.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from overlap_desktop.core.types import CancelCallback, Progress, ProgressCallback, check_cancel
from overlap_desktop.errors import InputError

__all__ = [
    "TOKENIZERS",
    "Document",
    "NgramMatch",
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
#: Bytes of training text handed to one worker task.
CHUNK_BYTES = 8 * 1024 * 1024

_NON_ALNUM = re.compile(r"[^\w\s]|_")


def _tok_alnum_lower(text: str) -> list[str]:
    # One regex pass over the whole text, then a split: much faster than filtering each token.
    return _NON_ALNUM.sub("", text.lower()).split()


def _tok_whitespace(text: str) -> list[str]:
    return text.split()


#: Tokenizer id -> function. The id is part of every hashed n-gram key, so both sides of a
#: privacy-preserving check must use the same tokenizer.
TOKENIZERS: dict[str, Callable[[str], list[str]]] = {
    "alnum-lower-v1": _tok_alnum_lower,
    "whitespace-v1": _tok_whitespace,
}
DEFAULT_TOKENIZER = "alnum-lower-v1"


def tokenize(text: str, tokenizer: str = DEFAULT_TOKENIZER) -> list[str]:
    """Split ``text`` into tokens with a registered tokenizer (default: lower-cased alphanumeric
    tokens delimited by whitespace)."""
    try:
        return TOKENIZERS[tokenizer](text)
    except KeyError:
        raise InputError(f"unknown tokenizer {tokenizer!r} (known: {', '.join(sorted(TOKENIZERS))})") from None


def choose_n(lengths: Sequence[int], *, percentile: float = 5.0, min_n: int = 8, max_n: int = 13) -> int:
    """The n-gram size: the ``percentile`` of test-example lengths (in tokens), clamped to
    [``min_n``, ``max_n``]."""
    if not lengths:
        return max(1, min_n)
    n = int(np.percentile(np.asarray(lengths, dtype=np.float64), percentile))
    return int(max(min_n, min(max_n, n)))


# --------------------------------------------------------------------------- hashing

_MASK = (1 << 64) - 1
_P = np.uint64(0x100000001B3)  # FNV prime: odd, so the polynomial is invertible mod 2^64


def _token_hash(token: str, key: bytes = b"") -> int:
    return int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8, key=key).digest(), "little")


class _TokenHasher(dict):  # type: ignore[type-arg]
    """Per-token 64-bit hashes, cached (vocabularies are small next to text volumes).

    A dict with ``__missing__`` so that ``np.fromiter(map(hasher.__getitem__, tokens))``
    runs the per-token step in C for every token seen before.
    """

    def __init__(self, key: bytes = b"") -> None:
        super().__init__()
        self.key = key

    def __missing__(self, token: str) -> int:
        h = self[token] = _token_hash(token, self.key)
        return h

    def __call__(self, tokens: Sequence[str]) -> np.ndarray:
        return np.fromiter(map(self.__getitem__, tokens), dtype=np.uint64, count=len(tokens))


def _windows(token_hashes: np.ndarray, n: int) -> np.ndarray:
    """Rolling polynomial hash of every window of ``n`` token hashes (uint64, wrapping)."""
    m = token_hashes.shape[0] - n + 1
    if m <= 0:
        return np.empty(0, dtype=np.uint64)
    acc = np.zeros(m, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for k in range(n):
            acc = acc * _P + token_hashes[k:k + m]
    return acc


def ngram_hashes(tokens: Sequence[str], n: int, *, key: bytes = b"") -> np.ndarray:
    """64-bit hashes of every n-gram of ``tokens`` in order (``len(tokens) - n + 1`` values)."""
    return _windows(_TokenHasher(key)(tokens), n)


def _ngram_key(tokenizer: str, n: int) -> bytes:
    # blake2b keys are at most 64 bytes; the key binds the hashes to the tokenizer and n.
    return hashlib.blake2b(f"overlap-text-ngrams/v1/{tokenizer}/{n}".encode(), digest_size=32).digest()


def keyed_ngram_hashes(examples: Iterable[str], *, tokenizer: str = DEFAULT_TOKENIZER,
                       ns: Sequence[int] = tuple(range(8, 14))) -> dict[int, np.ndarray]:
    """Sorted unique keyed hashes of every n-gram of ``examples`` for each n in ``ns``.

    This is what a manifest carries instead of text: the key depends on the tokenizer id
    and n, so hashes of different settings never collide by construction.
    """
    tok = [tokenize(e, tokenizer) for e in examples]
    out: dict[int, np.ndarray] = {}
    for n in ns:
        hasher = _TokenHasher(_ngram_key(tokenizer, n))
        parts = [_windows(hasher(t), n) for t in tok if len(t) >= n]
        out[n] = np.unique(np.concatenate(parts)) if parts else np.empty(0, dtype=np.uint64)
    return out


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


def _json_fields(record: Any, fields: Sequence[str] | None) -> Iterator[tuple[str, str]]:
    if isinstance(record, str):
        yield "", record
        return
    if not isinstance(record, dict):
        return
    keys = fields if fields else [k for k, v in record.items() if isinstance(v, str)]
    for k in keys:
        v = record.get(k)
        if isinstance(v, str):
            yield k, v
        elif isinstance(v, list):
            for i, item in enumerate(v):
                if isinstance(item, str):
                    yield f"{k}[{i}]", item


def iter_documents(path: Path, *, fields: Sequence[str] | None = None) -> Iterator[Document]:
    """Documents from a source, chosen by what ``path`` is.

    - ``*.jsonl`` / ``*.ndjson``: one document per string field of each record (``fields`` to
      choose); ``*.json``: a list of strings or records.
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
    if suffix in (".jsonl", ".ndjson"):
        for lineno, line in _read_lines(path):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"line {lineno} is not valid JSON: {exc.msg}", path=path) from exc
            for k, text in _json_fields(rec, fields):
                yield Document(text, src, f"line {lineno}" + (f" field {k}" if k else ""))
    elif suffix == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(f"not a readable JSON file: {exc}", path=path) from exc
        if not isinstance(data, list):
            raise InputError("expected a JSON list of strings or records", path=path)
        for i, rec in enumerate(data):
            for k, text in _json_fields(rec, fields):
                yield Document(text, src, f"item {i}" + (f" field {k}" if k else ""))
    elif suffix == ".mcap":
        yield from _mcap_documents(path)
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
            for doc in iter_documents(p, fields=fields):
                yield doc
    if not found:
        raise InputError("LeRobot dataset without meta/tasks.jsonl or meta/episodes.jsonl "
                         "(parquet task tables are not read)", path=root)


def _mcap_documents(path: Path) -> Iterator[Document]:
    try:
        from mcap.reader import make_reader
        from mcap_ros2.decoder import DecoderFactory as Ros2Decoder
    except ImportError as exc:  # pragma: no cover - mcap is a core dependency
        raise InputError(f"MCAP support is missing: {exc}", path=path) from exc
    try:
        with open(path, "rb") as fh:
            reader = make_reader(fh, decoder_factories=[Ros2Decoder()])
            counts: dict[str, int] = {}
            for schema, channel, message, decoded in reader.iter_decoded_messages():
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
        train_bytes: Bytes of training text read.
        example_text: The test examples' text (for reports), by index.
    """

    n: int
    tokenizer: str
    examples: int
    too_short: int
    matched_examples: list[int] = field(default_factory=list)
    matches: list[NgramMatch] = field(default_factory=list)
    train_bytes: int = 0
    example_text: list[str] = field(default_factory=list)

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
            "matches": [{
                "example": mt.example, "position": mt.position, "ngram": mt.ngram,
                "train_source": mt.train_source, "train_locator": mt.train_locator,
                "train_position": mt.train_position,
            } for mt in self.matches],
        }


def _scan_chunk(args: tuple[list[tuple[str, str, str]], str, int, np.ndarray,
                    dict[int, list[tuple[int, int, tuple[str, ...]]]]]) -> list[NgramMatch]:
    """Worker: tokenize a chunk of training documents and confirm hits on the tokens.

    All documents of the chunk are hashed as one token array (windows that straddle two
    documents are discarded), so numpy does the per-n-gram work for the whole chunk at once.
    """
    docs, tokenizer, n, test_sorted, table = args
    fn = TOKENIZERS[tokenizer]
    per_doc = [fn(text) for text, _, _ in docs]
    lens = np.fromiter((len(t) for t in per_doc), dtype=np.int64, count=len(per_doc))
    flat = [tok for toks in per_doc for tok in toks]
    if len(flat) < n:
        return []
    hashes = _windows(_TokenHasher()(flat), n)
    starts = np.concatenate(([0], np.cumsum(lens)[:-1]))
    doc_of = np.repeat(np.arange(len(per_doc)), lens)[: hashes.shape[0]]
    pos = np.searchsorted(test_sorted, hashes)
    pos[pos >= test_sorted.shape[0]] = 0
    hit = np.nonzero(test_sorted[pos] == hashes)[0]
    found: list[NgramMatch] = []
    for j in hit.tolist():
        d = int(doc_of[j])
        off = j - int(starts[d])
        toks = per_doc[d]
        if off + n > len(toks):
            continue  # the window runs into the next document
        gram = tuple(toks[off:off + n])
        for ex, p, tgram in table.get(int(hashes[j]), ()):
            if tgram == gram:  # confirm on the tokens: a hash collision never reports a match
                found.append(NgramMatch(ex, p, " ".join(gram), docs[d][1], docs[d][2], off))
    return found


_LINE_SOURCES = (".jsonl", ".ndjson")


def _is_line_source(path: Path) -> bool:
    """Plain text and JSONL are split into byte ranges that workers read themselves."""
    return path.is_file() and path.suffix.lower() not in (".json", ".mcap")


def _line_ranges(path: Path, cancel: CancelCallback | None) -> Iterator[tuple[int, int, int]]:
    """(start byte, end byte, first line number) ranges of about CHUNK_BYTES, cut at newlines."""
    with _open_text(path) as fh:
        start, line = 0, 1
        while True:
            check_cancel(cancel)
            fh.seek(start + CHUNK_BYTES)
            tail = fh.read(MAX_LINE_BYTES + 1)
            if not tail:
                end = fh.seek(0, os.SEEK_END)
            else:
                nl = tail.find(b"\n")
                if nl < 0:
                    if len(tail) > MAX_LINE_BYTES:
                        raise InputError(f"a line after line {line} is longer than "
                                         f"{MAX_LINE_BYTES // (1024 * 1024)} MiB", path=path)
                    end = start + CHUNK_BYTES + len(tail)
                else:
                    end = start + CHUNK_BYTES + nl + 1
            if end <= start:
                return
            yield start, end, line
            fh.seek(start)
            line += fh.read(end - start).count(b"\n")
            start = end


def _read_range(path: Path, start: int, end: int, first_line: int,
                fields: Sequence[str] | None) -> list[tuple[str, str, str]]:
    with open(path, "rb") as fh:
        fh.seek(start)
        data = fh.read(end - start)
    is_json = path.suffix.lower() in _LINE_SOURCES
    docs: list[tuple[str, str, str]] = []
    src = str(path)
    for k, raw in enumerate(data.split(b"\n")):
        lineno = first_line + k
        if len(raw) > MAX_LINE_BYTES:
            raise InputError(f"line {lineno} is longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB", path=path)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"line {lineno} is not UTF-8 text ({exc.reason} at byte {exc.start})",
                             path=path) from exc
        if not text.strip():
            continue
        if is_json:
            try:
                rec = json.loads(text)
            except json.JSONDecodeError as exc:
                raise InputError(f"line {lineno} is not valid JSON: {exc.msg}", path=path) from exc
            for key, value in _json_fields(rec, fields):
                docs.append((value, src, f"line {lineno}" + (f" field {key}" if key else "")))
        else:
            docs.append((text.rstrip("\r"), src, f"line {lineno}"))
    return docs


def _scan_range(args: tuple[str, int, int, int, Sequence[str] | None, str, int, np.ndarray,
                    dict[int, list[tuple[int, int, tuple[str, ...]]]]]) -> tuple[list[NgramMatch], int]:
    path, start, end, first_line, fields, tokenizer, n, test_sorted, table = args
    docs = _read_range(Path(path), start, end, first_line, fields)
    return _scan_chunk((docs, tokenizer, n, test_sorted, table)), end - start


def _tasks(sources: Sequence[Path], fields: Sequence[str] | None,
           cancel: CancelCallback | None) -> Iterator[tuple[str, Any]]:
    """Work items: ("range", (path, start, end, line)) for line sources, ("docs", (batch, size)) otherwise."""
    for src in sources:
        src = Path(src)
        if _is_line_source(src):
            for start, end, line in _line_ranges(src, cancel):
                yield "range", (str(src), start, end, line)
            continue
        batch: list[tuple[str, str, str]] = []
        size = 0
        for doc in iter_documents(src, fields=fields):
            batch.append((doc.text, doc.source, doc.locator))
            size += len(doc.text)
            if size >= CHUNK_BYTES:
                check_cancel(cancel)
                yield "docs", (batch, size)
                batch, size = [], 0
        if batch:
            yield "docs", (batch, size)


_WORKER_STATE: tuple[Any, ...] = ()


def _init_worker(state: tuple[Any, ...]) -> None:
    """Receive the test-set tables once per worker process instead of once per task."""
    global _WORKER_STATE
    _WORKER_STATE = state


def _run_task_in_worker(task: tuple[str, Any, Sequence[str] | None]) -> tuple[list[NgramMatch], int]:
    return _run_task((*task, *_WORKER_STATE))


def _run_task(args: tuple[str, Any, Sequence[str] | None, str, int, np.ndarray,
                  dict[int, list[tuple[int, int, tuple[str, ...]]]]]) -> tuple[list[NgramMatch], int]:
    kind, item, fields, tokenizer, n, test_sorted, table = args
    if kind == "range":
        path, start, end, line = item
        return _scan_range((path, start, end, line, fields, tokenizer, n, test_sorted, table))
    batch, size = item
    return _scan_chunk((batch, tokenizer, n, test_sorted, table)), size


def _task_size(task: tuple[Any, ...]) -> int:
    kind, item = task[0], task[1]
    if kind == "range":
        path, start, end, line = item
        _read_range(Path(path), start, end, line, task[2])  # validates the text
        return int(end - start)
    return int(item[1])


def text_overlap(test: Sequence[Path | str] | Sequence[Document], train: Sequence[Path | str], *,
                 tokenizer: str = DEFAULT_TOKENIZER, n: int | None = None, percentile: float = 5.0,
                 min_n: int = 8, max_n: int = 13, fields: Sequence[str] | None = None,
                 workers: int = 0, progress: ProgressCallback | None = None,
                 cancel: CancelCallback | None = None) -> TextOverlapResult:
    """Report every test example that shares an n-gram with the training text.

    Args:
        test: Test-set sources (paths) or already-built :class:`Document` s (one per example).
        train: Training sources (paths; see :func:`iter_documents` for the kinds).
        tokenizer: A key of :data:`TOKENIZERS`.
        n: Force the n-gram size; by default :func:`choose_n` over the test examples.
        percentile, min_n, max_n: The n-choosing rule.
        fields: JSON fields to read (default: every string field).
        workers: Worker processes (0 = one per core; 1 = in this process).
        progress: Receives bytes of training text read.
        cancel: Polled between chunks.

    Raises:
        InputError: a source is unreadable or malformed.
        Cancelled: ``cancel()`` turned true.
    """
    if tokenizer not in TOKENIZERS:
        tokenize("", tokenizer)  # raises the clear error
    examples: list[Document] = []
    for item in test:
        if isinstance(item, Document):
            examples.append(item)
        else:
            examples.extend(iter_documents(Path(item), fields=fields))
    toks = [tokenize(d.text, tokenizer) for d in examples]
    if n is None:
        n = choose_n([len(t) for t in toks], percentile=percentile, min_n=min_n, max_n=max_n)
    if n < 1:
        raise InputError(f"n-gram size must be at least 1 (got {n})")
    hasher = _TokenHasher()
    table: dict[int, list[tuple[int, int, tuple[str, ...]]]] = {}
    too_short = 0
    for ex, t in enumerate(toks):
        if len(t) < n:
            too_short += 1
            continue
        for p, h in enumerate(_windows(hasher(t), n).tolist()):
            table.setdefault(h, []).append((ex, p, tuple(t[p:p + n])))
    test_sorted = np.array(sorted(table), dtype=np.uint64)
    result = TextOverlapResult(n=n, tokenizer=tokenizer, examples=len(examples), too_short=too_short,
                               example_text=[d.text for d in examples])
    seen: dict[tuple[int, int], int] = {}

    def absorb(found: list[NgramMatch]) -> None:
        # Every occurrence is evidence, but a boilerplate phrase repeated a million times in the
        # training text must not flood the report: keep the first few per test n-gram.
        for mt in found:
            key = (mt.example, mt.position)
            k = seen.get(key, 0)
            if k < MAX_OCCURRENCES:
                seen[key] = k + 1
                result.matches.append(mt)

    done = 0
    nworkers = workers or (os.cpu_count() or 1)

    def advance(size: int) -> None:
        nonlocal done
        done += size
        if progress:
            progress(Progress("text-overlap", done, None, unit="bytes"))
        check_cancel(cancel)

    state = (tokenizer, n, test_sorted, table)
    tasks = ((kind, item, fields) for kind, item in _tasks([Path(t) for t in train], fields, cancel))
    if not test_sorted.size or nworkers <= 1:
        # Nothing to look for still reads (and so validates) the training sources.
        for task in tasks:
            found, size = _run_task((*task, *state)) if test_sorted.size else ([], _task_size(task))
            absorb(found)
            advance(size)
    else:
        with ProcessPoolExecutor(max_workers=nworkers, initializer=_init_worker, initargs=(state,)) as pool:
            pending: list[Any] = []
            for task in tasks:
                pending.append(pool.submit(_run_task_in_worker, task))
                # Bounded look-ahead keeps memory flat on gigabytes of text.
                while len(pending) >= 2 * nworkers:
                    found, size = pending.pop(0).result()
                    absorb(found)
                    advance(size)
            for fut in pending:
                found, size = fut.result()
                absorb(found)
                advance(size)
    result.train_bytes = done
    result.matches.sort(key=lambda mt: (mt.example, mt.position))
    result.matched_examples = sorted({mt.example for mt in result.matches})
    return result


def check_hashed_overlap(test: Sequence[Path | str] | Sequence[Document], hashed: dict[int, np.ndarray], *,
                         tokenizer: str = DEFAULT_TOKENIZER, n: int | None = None, percentile: float = 5.0,
                         min_n: int = 8, max_n: int = 13, fields: Sequence[str] | None = None
                         ) -> TextOverlapResult:
    """Check test examples against keyed n-gram hashes (e.g. from a vendor's manifest).

    ``n`` is chosen as in :func:`text_overlap` and then moved to the nearest n the hashes
    were made for. Matches carry positions and the lab's own n-gram text (the lab owns the
    test set); nothing of the vendor's text is known beyond "this n-gram occurs".
    """
    examples: list[Document] = []
    for item in test:
        examples.extend([item] if isinstance(item, Document) else iter_documents(Path(item), fields=fields))
    toks = [tokenize(d.text, tokenizer) for d in examples]
    if not hashed:
        raise InputError("the manifest carries no text n-gram hashes")
    if n is None:
        n = choose_n([len(t) for t in toks], percentile=percentile, min_n=min_n, max_n=max_n)
    n = min(hashed, key=lambda k: (abs(k - n), k))
    ref = np.asarray(hashed[n], dtype=np.uint64)
    hasher = _TokenHasher(_ngram_key(tokenizer, n))
    result = TextOverlapResult(n=n, tokenizer=tokenizer, examples=len(examples), too_short=0,
                               example_text=[d.text for d in examples])
    for ex, t in enumerate(toks):
        if len(t) < n:
            result.too_short += 1
            continue
        hs = _windows(hasher(t), n)
        pos = np.searchsorted(ref, hs)
        pos[pos >= ref.shape[0]] = 0
        for p in np.nonzero(ref[pos] == hs)[0].tolist() if ref.size else []:
            result.matches.append(NgramMatch(ex, p, " ".join(t[p:p + n]), "manifest", "hashed n-grams", -1))
    result.matched_examples = sorted({mt.example for mt in result.matches})
    return result
