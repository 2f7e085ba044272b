"""Optional manifest sections understood by this version: TEXT_NGRAMS and STREAM_EPISODES.

Both are non-critical sections of format v1 (docs/manifest-spec.md, "TEXT_NGRAMS" and
"STREAM_EPISODES"): a reader that does not know them skips them, and they are bound
into the Merkle root like every optional section. The writer
(:mod:`~overlap_desktop.core.manifest.encode`) calls :func:`encode_text_ngrams` /
:func:`encode_stream_episodes` and the reader (:mod:`~overlap_desktop.core.manifest.parse`)
calls :func:`parse_text_ngrams` / :func:`parse_stream_episodes`; the parsers
are as strict as the rest of the reader (every count is checked against the bytes
that remain, and decoded sizes against the decoded budget, before any allocation).
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from overlap_desktop.core.manifest.format import ManifestFile, ManifestStream, TextNgrams
from overlap_desktop.errors import ManifestError

__all__ = [
    "EPISODES_SVERSION",
    "MAX_EPISODES_PER_STREAM",
    "MAX_NGRAM_HASHES",
    "MAX_NGRAM_SIZES",
    "NGRAMS_SVERSION",
    "clean_episodes",
    "encode_stream_episodes",
    "encode_text_ngrams",
    "episode_seconds",
    "parse_stream_episodes",
    "parse_text_ngrams",
    "stream_episode",
]

NGRAMS_SVERSION = 1
EPISODES_SVERSION = 1

#: Distinct n values in one TEXT_NGRAMS section.
MAX_NGRAM_SIZES = 32
#: Largest n (u8 field).
MAX_NGRAM_N = 255
#: Hashes per n (2^27 = 1 GiB decoded; a vendor's annotations are far smaller).
MAX_NGRAM_HASHES = 1 << 27
#: Episode spans recorded for one stream.
MAX_EPISODES_PER_STREAM = 10_000_000
_MAX_DURATION_S = 1e8
_EPISODE_BYTES = 4 + 8 + 8
_ID_RE = re.compile(r"[A-Za-z0-9._:+\-]{1,64}")
_ZSTD_LEVEL = 9
_ZSTD_MIN_SAVING = 0.03
_MAX_WINDOW = 1 << 27


# --------------------------------------------------------------------------- TEXT_NGRAMS


def _shuffle(values: np.ndarray) -> bytes:
    """Deltas of sorted hashes, as 8 byte planes (least significant first): the high planes
    of small deltas are mostly zero, which zstd then stores in a few bytes."""
    deltas = np.diff(values, prepend=np.uint64(0)).astype("<u8")
    return np.ascontiguousarray(deltas.view(np.uint8).reshape(-1, 8).T).tobytes()


def _unshuffle(raw: bytes, count: int) -> np.ndarray:
    planes = np.frombuffer(raw, dtype=np.uint8, count=8 * count).reshape(8, count)
    deltas = np.ascontiguousarray(planes.T).view("<u8").reshape(count)
    with np.errstate(over="ignore"):
        return np.cumsum(deltas, dtype=np.uint64)


def encode_text_ngrams(t: TextNgrams, compress: str) -> bytes:
    """The TEXT_NGRAMS body (sversion 1) for ``t``.

    Raises:
        ManifestError: the tokenizer id, an n or a count cannot be represented.
    """
    if not _ID_RE.fullmatch(t.tokenizer or ""):
        raise ManifestError(f"cannot write manifest: tokenizer id {t.tokenizer!r} is not 1-64 of "
                            "[A-Za-z0-9._:+-]")
    ns = t.ns
    if not 1 <= len(ns) <= MAX_NGRAM_SIZES:
        raise ManifestError(f"cannot write manifest: text n-grams need 1..{MAX_NGRAM_SIZES} n values, "
                            f"got {len(ns)}")
    if not 0 <= int(t.documents) <= 0xFFFFFFFF:
        raise ManifestError(f"cannot write manifest: text n-gram document count {t.documents} out of range")
    tok = t.tokenizer.encode("ascii")
    out = [struct.pack("<B", len(tok)), tok, struct.pack("<IB", int(t.documents), len(ns))]
    for n in ns:
        if not 1 <= int(n) <= MAX_NGRAM_N:
            raise ManifestError(f"cannot write manifest: n-gram size {n} outside 1..{MAX_NGRAM_N}")
        values = np.unique(np.asarray(t.hashes[n], dtype=np.uint64))
        count = int(values.shape[0])
        if count > MAX_NGRAM_HASHES:
            raise ManifestError(f"cannot write manifest: {count} hashes for n={n} exceed the limit of "
                                f"{MAX_NGRAM_HASHES}")
        raw = _shuffle(values) if count else b""
        enc, payload = 0, raw
        if compress != "never" and count:
            import zstandard

            packed = zstandard.ZstdCompressor(level=_ZSTD_LEVEL, write_content_size=True,
                                              write_checksum=False, write_dict_id=False).compress(raw)
            if compress == "always" or len(packed) <= len(raw) * (1.0 - _ZSTD_MIN_SAVING):
                enc, payload = 1, packed
        out += [struct.pack("<BIBI", int(n), count, enc, len(payload)), payload]
    return b"".join(out)


def _zstd_exact(r: Any, packed: bytes, want: int, at: int) -> bytes:
    """Decompress one zstd frame that must declare exactly ``want`` bytes (checked first)."""
    import zstandard

    try:
        params = zstandard.get_frame_parameters(packed)
    except zstandard.ZstdError as exc:
        raise r.fail(f"compressed hashes are not a zstd frame ({exc})", at) from None
    if params.content_size != want:
        raise r.fail(f"compressed hashes declare {params.content_size} bytes, the count needs {want}", at)
    if params.window_size > _MAX_WINDOW:
        raise r.fail(f"compressed hashes ask for a {params.window_size}-byte window", at)
    try:
        dobj = zstandard.ZstdDecompressor().decompressobj()
        out = dobj.decompress(packed)
        trailing = len(dobj.unused_data) if dobj.eof else -1
    except zstandard.ZstdError as exc:
        raise r.fail(f"compressed hashes are corrupt ({exc})", at) from None
    if len(out) != want:
        raise r.fail(f"compressed hashes decoded to {len(out)} bytes, expected {want}", at)
    if trailing:
        raise r.fail("compressed hashes have bytes after their zstd frame" if trailing > 0
                     else "compressed hashes do not end their zstd frame", at)
    return out


def parse_text_ngrams(r: Any, budget: Any) -> TextNgrams:
    """Parse a TEXT_NGRAMS (sversion 1) body; ``r`` is the manifest reader bounded to it.

    Raises:
        ManifestError: any defect (names the field and offset).
    """
    at = r.pos
    tokenizer = r.text(1, "tokenizer id", 64, allow_empty=False)
    if not _ID_RE.fullmatch(tokenizer):
        raise r.fail(f"tokenizer id {tokenizer!r} is not 1-64 of [A-Za-z0-9._:+-]", at)
    documents = r.u32("document count")
    at = r.pos
    nsizes = r.u8("n count")
    if not 1 <= nsizes <= MAX_NGRAM_SIZES:
        raise r.fail(f"n count {nsizes} outside 1..{MAX_NGRAM_SIZES}", at)
    hashes: dict[int, np.ndarray] = {}
    prev = 0
    for _ in range(nsizes):
        at = r.pos
        n = r.u8("n")
        if n < 1 or n <= prev:
            raise r.fail(f"n values must be 1..{MAX_NGRAM_N} and strictly increasing (got {n} after {prev})",
                         at)
        prev = n
        at = r.pos
        count = r.u32(f"hash count for n={n}")
        want = 8 * count
        # Both checks come before anything is read or allocated for this n.
        if count > MAX_NGRAM_HASHES:
            raise r.fail(f"hash count {count} for n={n} exceeds the limit of {MAX_NGRAM_HASHES}", at)
        if want > budget.left:
            raise r.fail(f"{count} hashes for n={n} need {want} decoded bytes, over the remaining budget "
                         f"of {budget.left}", at)
        at = r.pos
        enc = r.u8("hash encoding")
        stored = r.u32("hash payload length")
        if enc == 0:
            if stored != want:
                raise r.fail(f"raw hashes are {stored} bytes, {count} hashes need {want}", at)
            raw = bytes(r.take(want, f"{count} hashes"))
        elif enc == 1:
            if count == 0:
                raise r.fail("an empty hash list must be stored raw", at)
            raw = _zstd_exact(r, bytes(r.take(stored, "compressed hashes")), want, at)
        else:
            raise r.fail(f"unknown hash encoding {enc}", at)
        budget.left -= want
        values = _unshuffle(raw, count) if count else np.zeros(0, dtype=np.uint64)
        # Strictly increasing after the running sum: a zero delta (a repeat) or a wrap past
        # 2^64 (which makes a value smaller than the one before it) are both refused.
        if count > 1 and not bool(np.all(values[1:] > values[:-1])):
            raise r.fail(f"hashes for n={n} are not strictly increasing (repeated, unsorted or "
                         "overflowing deltas)", at)
        hashes[n] = values
    if r.pos != r.end:
        raise r.fail(f"{r.end - r.pos} unexplained bytes at the end of the section")
    return TextNgrams(tokenizer=tokenizer, hashes=hashes, documents=documents)


# --------------------------------------------------------------------------- STREAM_EPISODES


def clean_episodes(episodes: Any, duration_s: float | None = None) -> list[tuple[int, float, float]]:
    """Episode spans from a reader's ``StreamInfo.extra["episodes"]`` in canonical form.

    Malformed entries are dropped, an open end (``inf``, as a one-episode-per-file dataset
    records it) is cut at ``duration_s``, and the spans are sorted and de-duplicated.
    """
    out: set[tuple[int, float, float]] = set()
    if not isinstance(episodes, (list, tuple)):
        return []
    limit = _MAX_DURATION_S if duration_s is None or not math.isfinite(duration_s) else float(duration_s)
    for ep in episodes[:MAX_EPISODES_PER_STREAM]:
        try:
            index, a, b = int(ep[0]), float(ep[1]), float(ep[2])
        except (TypeError, ValueError, IndexError, OverflowError):
            continue
        if not 0 <= index <= 0xFFFFFFFF or math.isnan(a) or math.isnan(b):
            continue
        a, b = max(0.0, min(a, limit, _MAX_DURATION_S)), max(0.0, min(b, limit, _MAX_DURATION_S))
        if b >= a:
            out.add((index, a, b))
    return sorted(out, key=lambda e: (e[1], e[2], e[0]))


def encode_stream_episodes(files: Sequence[ManifestFile]) -> bytes | None:
    """The STREAM_EPISODES body for the episodes carried by ``files``' streams, or ``None``
    when none has any. ``files`` must be in manifest order and streams in key order."""
    records: list[bytes] = []
    for fi, f in enumerate(files):
        for s in f.streams:
            eps = getattr(s, "episodes", None) or []
            if not eps:
                continue
            # Sorted here; anything the reader would refuse (malformed, repeated, negative or
            # past the stream's end) is refused rather than silently changed.
            canon = clean_episodes(eps, _MAX_DURATION_S)
            limit = float(s.fingerprints.duration_s)
            try:
                given = sorted((int(e[0]), float(e[1]), float(e[2])) for e in eps)
            except (TypeError, ValueError, IndexError, OverflowError):
                given = []
            if len(canon) != len(eps) or sorted(canon) != given or any(e[2] > limit for e in canon):
                raise ManifestError(f"cannot write manifest: file {f.name!r} stream {s.key!r}: episode spans "
                                    f"are malformed, repeated or outside 0..{limit:g} s")
            key = s.key.encode("utf-8")
            parts = [struct.pack("<IH", fi, len(key)), key, struct.pack("<I", len(canon))]
            parts += [struct.pack("<Idd", e, a, b) for e, a, b in canon]
            records.append(b"".join(parts))
    if not records:
        return None
    return struct.pack("<I", len(records)) + b"".join(records)


def parse_stream_episodes(r: Any, files: Sequence[ManifestFile]
                          ) -> dict[tuple[int, str], list[tuple[int, float, float]]]:
    """Parse a STREAM_EPISODES (sversion 1) body against the already-parsed ``files``.

    Returns:
        ``(file index, stream key) -> [(episode, start_s, end_s), ...]``.

    Raises:
        ManifestError: any defect, including a record naming a file or stream that does
            not exist, records out of order, or spans out of order or past the stream.
    """
    at = r.pos
    nrec = r.u32("record count")
    if nrec * 10 > r.end - r.pos:
        raise r.fail(f"{nrec} episode records need at least {nrec * 10} bytes but {r.end - r.pos} remain", at)
    out: dict[tuple[int, str], list[tuple[int, float, float]]] = {}
    prev: tuple[int, bytes] | None = None
    for i in range(nrec):
        at = r.pos
        fi = r.u32("file index")
        if fi >= len(files):
            raise r.fail(f"record {i + 1}: file index {fi} but the manifest has {len(files)} files", at)
        key = r.text(2, "stream key", 256, allow_empty=False)
        kb = key.encode("utf-8")
        if prev is not None and (fi, kb) <= prev:
            raise r.fail(f"record {i + 1}: records out of order or repeated at file {fi} stream {key!r}", at)
        prev = (fi, kb)
        stream = next((s for s in files[fi].streams if s.key == key), None)
        if stream is None:
            raise r.fail(f"record {i + 1}: file {files[fi].name!r} has no stream {key!r}", at)
        limit = float(stream.fingerprints.duration_s)
        at = r.pos
        count = r.u32("episode count")
        if count < 1 or count > MAX_EPISODES_PER_STREAM or count * _EPISODE_BYTES > r.end - r.pos:
            raise r.fail(f"record {i + 1}: episode count {count} outside 1..{MAX_EPISODES_PER_STREAM} or "
                         f"past the {r.end - r.pos} remaining bytes", at)
        raw = r.take(count * _EPISODE_BYTES, "episode spans")
        arr = np.frombuffer(raw, dtype=np.dtype([("e", "<u4"), ("a", "<f8"), ("b", "<f8")]), count=count)
        a, b = arr["a"], arr["b"]
        if not (np.isfinite(a).all() and np.isfinite(b).all()) or bool(np.any(a < 0)) or bool(np.any(b < a)) \
                or bool(np.any(b > limit)):
            raise r.fail(f"record {i + 1}: an episode span is not 0 <= start <= end <= stream duration "
                         f"({limit:g} s)", at)
        spans = list(zip(arr["e"].tolist(), a.tolist(), b.tolist()))
        if any((x[1], x[2], x[0]) >= (y[1], y[2], y[0]) for x, y in zip(spans, spans[1:])):
            raise r.fail(f"record {i + 1}: episode spans out of order or repeated", at)
        out[(fi, key)] = spans
    if r.pos != r.end:
        raise r.fail(f"{r.end - r.pos} unexplained bytes at the end of the section")
    return out


def describe_sections(text: TextNgrams | None, episodes: Mapping[tuple[int, str], Any]) -> dict[str, Any]:
    """Inspection facts for the understood sections (used by ``inspect``)."""
    return {
        "text_ngrams": None if text is None else {
            "tokenizer": text.tokenizer, "documents": text.documents, "ns": text.ns,
            "counts": {str(n): c for n, c in text.counts().items()}},
        "episodes": {"streams": len(episodes), "spans": sum(len(v) for v in episodes.values())},
    }


def stream_episode(s: ManifestStream) -> int | None:
    """The one episode a stream is a camera of (its only episode span), else ``None``."""
    return int(s.episodes[0][0]) if len(s.episodes) == 1 else None


def episode_seconds(f: ManifestFile) -> float:
    """A file's time counted as episode time, the unit vendors quote: the sum over its episodes
    (streams of different episodes never share a timeline) of each episode's longest camera; a
    file of one episode or one recording keeps its stated duration."""
    longest: dict[int | None, float] = {}
    for s in f.streams:
        e = stream_episode(s)
        longest[e] = max(longest.get(e, 0.0), float(s.fingerprints.duration_s))
    if len(longest) > 1:
        return sum(longest.values())
    return float(f.duration_s) if f.duration_s is not None else max(longest.values(), default=0.0)
