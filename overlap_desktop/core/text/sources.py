"""Training sources as users have them, read as streams of bounded blocks.

A training argument may be a file or a folder (walked recursively; hidden entries skipped;
only regular files read). Each file is one *source*; its kind comes from its name:

- ``.jsonl``/``.ndjson``: one document per string field of each record (``fields`` to choose);
- ``.json``: a list of strings or records, parsed item by item (never the whole file at once);
- ``.parquet``: string columns (``fields`` to choose), read a batch of rows at a time;
- ``.mcap``: ``std_msgs/String``-like messages;
- anything else: UTF-8 text, one document per line;

and any of the text kinds may be compressed: ``.gz``, ``.zst``/``.zstd``, ``.xz``, ``.bz2``.
In a folder, files whose kind is not recognisably text (``.png``, ``.bin``...) are skipped and
counted; a file named on the command line is always read.

A source is split into *tasks* that a worker reads on its own: byte ranges cut at newlines for
uncompressed line formats (so one large file spreads over every worker), the whole file
otherwise (a compressed stream cannot be entered in the middle). A task yields
:class:`Block` s of at most about :data:`BLOCK_BYTES` of text, so memory does not depend on
the file's size.
"""

from __future__ import annotations

import bz2
import codecs
import gzip
import io
import itertools
import json
import lzma
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

from overlap_desktop.errors import InputError

__all__ = ["BLOCK_BYTES", "MAX_LINE_BYTES", "Block", "Source", "Task", "expand_sources", "json_fields",
           "loads", "parquet_skip_reason", "parquet_text_columns", "plan_tasks", "read_task", "source_kind",
           "whole_file_task"]

#: Text handed to the scanner at once (and the size of a byte-range task).
BLOCK_BYTES = 8 * 1024 * 1024
#: Longest line or JSON item accepted; longer ones are refused rather than read whole.
MAX_LINE_BYTES = 64 * 1024 * 1024

_COMPRESSED = {".gz": "gz", ".zst": "zst", ".zstd": "zst", ".xz": "xz", ".bz2": "bz2"}
_TEXT_SUFFIXES = {"", ".txt", ".text", ".md", ".rst", ".jsonl", ".ndjson", ".json", ".parquet", ".mcap",
                  ".csv", ".tsv"}


@dataclass(frozen=True, slots=True)
class Source:
    """One training file.

    Attributes:
        path: The file.
        kind: ``text``, ``jsonl``, ``json``, ``parquet`` or ``mcap``.
        codec: Compression (``gz``, ``zst``, ``xz``, ``bz2``) or ``""``.
        size: Bytes on disk (progress counts these).
        mtime_ns: Modification time (with size, what a checkpoint recognises a file by).
    """

    path: str
    kind: str
    codec: str
    size: int
    mtime_ns: int


def source_kind(path: Path) -> tuple[str, str, str]:
    """(kind, codec, inner suffix) from the file name."""
    name = path.name.lower()
    codec = ""
    suffix = Path(name).suffix
    if suffix in _COMPRESSED:
        codec = _COMPRESSED[suffix]
        name = name[: -len(suffix)]
        suffix = Path(name).suffix
    kind = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".parquet": "parquet",
            ".mcap": "mcap"}.get(suffix, "text")
    if codec and kind in ("parquet", "mcap"):
        kind = "text"  # a compressed Parquet/MCAP file is not a format we read; fail on it as text
    return kind, codec, suffix


def _source(path: Path) -> Source:
    try:
        st = path.stat()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from exc
    kind, codec, _ = source_kind(path)
    return Source(str(path), kind, codec, st.st_size, st.st_mtime_ns)


def expand_sources(paths: Sequence[Path | str]) -> tuple[list[Source], int]:
    """Training sources in a stable order, and how many files in folders were skipped.

    Raises:
        InputError: a path that does not exist or is neither a file nor a folder.
    """
    out: list[Source] = []
    skipped = 0
    seen: set[str] = set()

    def add(f: Path) -> None:
        # The same file named twice (or inside a folder also named) is scanned once.
        real = os.path.realpath(f)
        if real not in seen:
            seen.add(real)
            out.append(_source(f))

    for item in paths:
        p = Path(item)
        if p.is_dir():
            for root, dirs, files in os.walk(p):  # does not follow symlinked folders (no loops)
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    f = Path(root) / name
                    if name.startswith("."):
                        continue
                    if not f.is_file() or source_kind(f)[2] not in _TEXT_SUFFIXES:
                        skipped += 1
                        continue
                    add(f)
        elif p.is_file():
            add(p)
        elif p.exists():
            raise InputError("is not a regular file or a folder", path=p)
        else:
            raise InputError("does not exist", path=p)
    return out, skipped


@dataclass(frozen=True, slots=True)
class Task:
    """A unit of work: a byte range of an uncompressed line source, or a whole source.

    Attributes:
        source: Index into the job's source list.
        part: Order of this task within its source.
        path, kind, codec: As in :class:`Source`.
        start, end: Byte range (``end = -1``: the whole file).
        size: Bytes on disk this task accounts for.
    """

    source: int
    part: int
    path: str
    kind: str
    codec: str
    start: int
    end: int
    size: int


def _cut_points(path: str, size: int) -> list[int]:
    """Offsets just after a newline near every BLOCK_BYTES (reads a little at each cut only)."""
    cuts = [0]
    try:
        with open(path, "rb") as fh:
            while cuts[-1] + BLOCK_BYTES < size:
                fh.seek(cuts[-1] + BLOCK_BYTES)
                nl = -1
                read = 0
                while nl < 0:
                    piece = fh.read(1 << 16)
                    if not piece:
                        break
                    nl = piece.find(b"\n")
                    read += len(piece) if nl < 0 else nl + 1
                    if nl < 0 and read > MAX_LINE_BYTES:
                        raise InputError(f"a line near byte {cuts[-1] + BLOCK_BYTES} is longer than "
                                         f"{MAX_LINE_BYTES // (1 << 20)} MiB", path=path)
                if nl < 0:
                    break
                cuts.append(cuts[-1] + BLOCK_BYTES + read)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from exc
    cuts.append(size)
    return cuts


def whole_file_task(path: Path) -> Task:
    """One task reading all of ``path`` (for test sets and other small, single-file reads)."""
    s = _source(Path(path))
    return Task(0, 0, s.path, s.kind, s.codec, 0, -1, s.size)


def plan_tasks(sources: Sequence[Source], index: int) -> list[Task]:
    """The tasks of ``sources[index]``."""
    s = sources[index]
    if s.codec or s.kind not in ("text", "jsonl") or s.size <= BLOCK_BYTES:
        return [Task(index, 0, s.path, s.kind, s.codec, 0, -1, s.size)]
    cuts = _cut_points(s.path, s.size)
    return [Task(index, k, s.path, s.kind, s.codec, a, b, b - a)
            for k, (a, b) in enumerate(itertools.pairwise(cuts)) if b > a]


# --------------------------------------------------------------------------- reading


@dataclass(slots=True)
class Block:
    """Text from a task.

    Attributes:
        raw: UTF-8 lines (``kind == "lines"``) or None.
        texts: Documents (``kind == "docs"``) or None.
        locs: Per document in ``texts``: (line number or -1, locator text).
        first_line: For ``raw``: line number (0-based, within the task) of its first line.
        done: Bytes on disk of the task consumed so far (for progress).
        newlines: For ``raw``: how many newlines it holds.
    """

    raw: bytes | None
    texts: list[str] | None
    locs: list[tuple[int, str]] | None
    first_line: int
    done: int
    newlines: int = 0


class _Counting:
    """A raw file that remembers how far it has been read (compressed bytes consumed)."""

    def __init__(self, fh: io.BufferedReader) -> None:
        self.fh = fh
        self.pos = 0

    def read(self, size: int = -1) -> bytes:
        data = self.fh.read(size)
        self.pos += len(data)
        return data

    def readinto(self, b: Any) -> int:
        n = self.fh.readinto(b)
        self.pos += n or 0
        return n or 0

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.fh.close()

    def __enter__(self) -> _Counting:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _open_stream(task: Task) -> tuple[Any, _Counting]:
    try:
        raw = open(task.path, "rb")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc} (on a cluster, every worker must see this path)",
                         path=task.path) from exc
    counted = _Counting(raw)
    # Read front to back (never rewound), the decompressors use only the read side of their
    # file object, which _Counting implements; their stubs ask for a whole IO[bytes].
    fileobj = cast(IO[bytes], counted)
    if task.codec == "gz":
        return gzip.GzipFile(fileobj=fileobj, mode="rb"), counted
    if task.codec == "xz":
        return lzma.LZMAFile(fileobj, "rb"), counted
    if task.codec == "bz2":
        return bz2.BZ2File(fileobj, "rb"), counted
    if task.codec == "zst":
        import zstandard

        return zstandard.ZstdDecompressor().stream_reader(fileobj, read_across_frames=True), counted
    return counted, counted


def _compressed_error(task: Task, exc: Exception) -> InputError:
    return InputError(f"cannot decompress ({task.codec}): {exc}", path=task.path)


def _line_chunks(task: Task) -> Iterator[tuple[bytes, int]]:
    """Blocks of whole lines from a task (``\\n``-terminated except maybe the last), with the
    bytes on disk consumed so far."""
    if not task.codec and task.end >= 0:
        try:
            with open(task.path, "rb") as fh:
                fh.seek(task.start)
                data = fh.read(task.end - task.start)
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror or exc} (on a cluster, every worker must see this "
                             f"path)", path=task.path) from exc
        yield data, task.size
        return
    stream, counted = _open_stream(task)
    carry = b""
    try:
        with stream:
            while True:
                try:
                    piece = stream.read(BLOCK_BYTES)
                except (OSError, EOFError, lzma.LZMAError, ValueError) as exc:
                    raise _compressed_error(task, exc) from exc
                except Exception as exc:  # zstandard.ZstdError is not an OSError
                    if type(exc).__name__ == "ZstdError":
                        raise _compressed_error(task, exc) from exc
                    raise
                if not piece:
                    break
                data = carry + piece
                cut = data.rfind(b"\n") + 1
                if cut == 0:
                    if len(data) > MAX_LINE_BYTES:
                        raise InputError(f"a line is longer than {MAX_LINE_BYTES // (1 << 20)} MiB", path=task.path)
                    carry = data
                    continue
                carry = data[cut:]
                yield data[:cut], counted.pos
    finally:
        counted.close()
    if carry:
        yield carry, counted.pos


def _json_error(task: Task, where: str, exc: Exception) -> InputError:
    if isinstance(exc, RecursionError):
        return InputError(f"{where} is nested too deeply to be text records", path=task.path)
    msg = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
    return InputError(f"{where} is not valid JSON: {msg}", path=task.path)


def json_fields(record: Any, fields: Sequence[str] | None) -> Iterator[tuple[str, str]]:
    """(field name, text) of a JSON record: a string itself, or string (list) fields of an object."""
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


def loads(text: str | bytes, task_path: str, where: str) -> Any:
    """``json.loads`` with a clear error for malformed or absurdly nested JSON."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError, UnicodeDecodeError) as exc:
        raise _json_error(Task(0, 0, task_path, "", "", 0, -1, 0), where, exc) from None


def _jsonl_blocks(task: Task, fields: Sequence[str] | None) -> Iterator[Block]:
    line0 = 0
    for data, done in _line_chunks(task):
        texts: list[str] = []
        locs: list[tuple[int, str]] = []
        lines = data.split(b"\n")
        if lines and not lines[-1]:
            lines.pop()
        for k, line in enumerate(lines):
            if not line.strip():
                continue
            if len(line) > MAX_LINE_BYTES:
                raise InputError(f"line {line0 + k + 1} is longer than {MAX_LINE_BYTES // (1 << 20)} MiB",
                                 path=task.path)
            rec = loads(line, task.path, f"line {line0 + k + 1}" if task.start == 0 else "a line")
            for key, text in json_fields(rec, fields):
                texts.append(text)
                locs.append((line0 + k, f"field {key}" if key else ""))
        line0 += len(lines)
        yield Block(None, texts, locs, 0, done)


def _text_blocks(task: Task) -> Iterator[Block]:
    line0 = 0
    for data, done in _line_chunks(task):
        if b"\x00" in data[:8192] and line0 == 0:
            raise InputError("looks like a binary file, not text (NUL bytes)", path=task.path)
        count = data.count(b"\n")
        yield Block(data, None, None, line0, done, count)
        line0 += count


def _json_array_blocks(task: Task, fields: Sequence[str] | None) -> Iterator[Block]:
    """Items of a top-level JSON array, decoded one at a time (bounded by the largest item)."""
    stream, counted = _open_stream(task)
    decoder = json.JSONDecoder()
    utf8 = codecs.getincrementaldecoder("utf-8")()
    buf, pos, eof, started, item = "", 0, False, False, 0
    texts: list[str] = []
    locs: list[tuple[int, str]] = []
    size = 0

    def more() -> bool:
        nonlocal buf, pos, eof
        try:
            piece = stream.read(1 << 20)
            buf = buf[pos:] + utf8.decode(piece, final=not piece)
        except UnicodeDecodeError as exc:
            raise InputError(f"is not UTF-8 text ({exc.reason})", path=task.path) from None
        except (OSError, EOFError, lzma.LZMAError) as exc:
            raise _compressed_error(task, exc) from exc
        pos = 0
        eof = not piece
        if len(buf) > MAX_LINE_BYTES:
            raise InputError(f"item {item} is larger than {MAX_LINE_BYTES // (1 << 20)} MiB", path=task.path)
        return not eof

    try:
        with stream:
            while True:
                while pos < len(buf) and buf[pos] in " \t\r\n,":
                    if buf[pos] == "," and not started:
                        break
                    pos += 1
                if pos >= len(buf):
                    if not more():
                        break
                    continue
                ch = buf[pos]
                if not started:
                    if ch != "[":
                        raise InputError("expected a JSON list of strings or records", path=task.path)
                    started, pos = True, pos + 1
                    continue
                if ch == "]":
                    break
                try:
                    rec, end = decoder.raw_decode(buf, pos)
                except json.JSONDecodeError as exc:
                    if not eof and more():
                        continue
                    raise _json_error(task, f"item {item}", exc) from None
                except RecursionError as exc:
                    raise _json_error(task, f"item {item}", exc) from None
                if end >= len(buf) and not eof:
                    more()  # a number cut at the buffer's end would parse short: read on first
                    continue
                pos = end
                for key, text in json_fields(rec, fields):
                    texts.append(text)
                    locs.append((-1, f"item {item}" + (f" field {key}" if key else "")))
                    size += len(text)
                item += 1
                if size >= BLOCK_BYTES:
                    yield Block(None, texts, locs, 0, counted.pos)
                    texts, locs, size = [], [], 0
    finally:
        counted.close()
    if not started:
        raise InputError("expected a JSON list of strings or records (the file is empty)", path=task.path)
    yield Block(None, texts, locs, 0, task.size)


def _parquet_blocks(task: Task, fields: Sequence[str] | None) -> Iterator[Block]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError("reading Parquet needs pyarrow: pip install 'overlap-desktop[lerobot]'",
                         path=task.path) from None
    try:
        pf = pq.ParquetFile(task.path)
        cols = parquet_text_columns(pf.schema_arrow, fields, task.path)
        if not cols:
            raise InputError(f"no text column to read ({_describe_columns(pf.schema_arrow)}); name the text "
                             "columns with --field, or leave this file out", path=task.path)
        total = max(1, pf.metadata.num_rows)
        row = 0
        for batch in pf.iter_batches(batch_size=8192, columns=cols):
            texts: list[str] = []
            locs: list[tuple[int, str]] = []
            for name in cols:
                values = batch.column(name).to_pylist()
                for r, v in enumerate(values):
                    for k, text in enumerate(v if isinstance(v, list) else [v]):
                        if isinstance(text, str):
                            texts.append(text)
                            locs.append((-1, f"row {row + r} column {name}" + (f"[{k}]" if isinstance(v, list)
                                                                               else "")))
            row += batch.num_rows
            yield Block(None, texts, locs, 0, int(task.size * row / total))
    except InputError:
        raise
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError... on damaged files
        raise InputError(f"cannot read as Parquet: {exc}", path=task.path) from exc


def _is_text_type(t: Any) -> bool:
    """Arrow types read as text: string, large_string, string_view, a dictionary of those
    (pandas ``category`` columns), and lists of any of them."""
    import pyarrow as pa

    if pa.types.is_dictionary(t):
        return _is_text_type(t.value_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _is_text_type(t.value_type)
    is_view = getattr(pa.types, "is_string_view", lambda _t: False)
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or is_view(t))


def _describe_columns(schema: Any, limit: int = 8) -> str:
    shown = [f"{f.name}: {f.type}" for f in list(schema)[:limit]]
    more = f", and {len(schema) - limit} more" if len(schema) > limit else ""
    return "columns: " + (", ".join(shown) + more if shown else "none")


def parquet_text_columns(schema: Any, fields: Sequence[str] | None, path: str | Path) -> list[str]:
    """The columns of a Parquet file read as text: ``fields`` if given (each must exist and
    hold text), else every text column (possibly none).

    Raises:
        InputError: a named column is missing or does not hold text (before this check it
            was skipped silently, and a check over it reported 0 %).
    """
    if not fields:
        return [f.name for f in schema if _is_text_type(f.type)]
    missing = [f for f in fields if f not in schema.names]
    if missing:
        raise InputError(f"no column {', '.join(missing)} ({_describe_columns(schema)})", path=path)
    not_text = [f"{f} ({schema.field(f).type})" for f in fields if not _is_text_type(schema.field(f).type)]
    if not_text:
        raise InputError(f"column {', '.join(not_text)} does not hold text and cannot be read as examples; "
                         "choose text columns with --field", path=path)
    return list(fields)


def parquet_skip_reason(path: str | Path, fields: Sequence[str] | None) -> str | None:
    """Why a training Parquet file holds nothing to scan (no text column), or None.

    Read from the file's footer only. Such files (a LeRobot dataset's numeric frames, say)
    are listed as skipped in the result instead of counting silently as scanned.
    """
    try:
        import pyarrow.parquet as pq
    except ImportError:
        return None  # reading it reports the missing dependency
    try:
        schema = pq.ParquetFile(path).schema_arrow
    except Exception:  # a damaged file: reading it reports the problem with its own words
        return None
    if parquet_text_columns(schema, fields, path):
        return None
    return f"no text column ({_describe_columns(schema)})"


def read_task(task: Task, fields: Sequence[str] | None,
              mcap_documents: Callable[[Path], Iterator[Any]] | None = None) -> Iterator[Block]:
    """The blocks of a task, in order.

    Raises:
        InputError: unreadable, undecompressable or malformed input (naming the file).
    """
    if task.kind == "jsonl":
        yield from _jsonl_blocks(task, fields)
    elif task.kind == "json":
        yield from _json_array_blocks(task, fields)
    elif task.kind == "parquet":
        yield from _parquet_blocks(task, fields)
    elif task.kind == "mcap" and mcap_documents is not None:
        texts: list[str] = []
        locs: list[tuple[int, str]] = []
        for doc in mcap_documents(Path(task.path)):
            texts.append(doc.text)
            locs.append((-1, doc.locator))
        yield Block(None, texts, locs, 0, task.size)
    else:
        yield from _text_blocks(task)
