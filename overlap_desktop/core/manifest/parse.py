"""The strict ``.ovlm`` reader.

A manifest comes from a counterparty, so :func:`parse_manifest` treats it as hostile:
every count and length is checked against the bytes that remain before it is used,
nothing is allocated from an unchecked number, decoded sizes are held to a budget
(:func:`decoded_budget`), the Merkle root is recomputed, and any defect raises
:class:`~overlap_desktop.errors.ManifestError` (never another exception type) naming
the section, entry and byte offset. The layout is docs/manifest-spec.md, version 1.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import numpy as np

from overlap_desktop.core.ingest.prep import comparable_prep
from overlap_desktop.core.manifest.cursor import ByteCursor, DecodedBudget
from overlap_desktop.core.manifest.format import (
    CREATED_RE,
    CROWDED_SAMPLES,
    FLAG_CRITICAL,
    FORMAT_VERSION,
    ID_RE,
    MAGIC,
    MAX_DECODED_BYTES,
    MAX_DURATION_S,
    MAX_FILE_SIZE,
    MAX_FILES,
    MAX_FILES_WITHOUT_SAMPLES,
    MAX_FPS,
    MAX_MANIFEST_BYTES,
    MAX_SAMPLES_PER_SECOND,
    MAX_SECTIONS,
    MAX_STREAMS,
    MAX_TIME_NS,
    META_FLAG_ANONYMIZED,
    MIN_ENTRY,
    PREAMBLE,
    RUN_DTYPE,
    SEC_FILES,
    SEC_META,
    SEC_ROOT,
    SEC_STREAM_EPISODES,
    SEC_TEXT_NGRAMS,
    SECTION,
    SECTION_NAMES,
    Manifest,
    ManifestFile,
    ManifestStream,
    OptionalSection,
    TextNgrams,
    crowded_second,
    name_problem,
)
from overlap_desktop.core.manifest.merkle import leaf_hash, root_from_leaf_hashes
from overlap_desktop.core.manifest.sections import (
    EPISODES_SVERSION,
    NGRAMS_SVERSION,
    parse_stream_episodes,
    parse_text_ngrams,
)
from overlap_desktop.core.manifest.signature import (
    SEC_SIGNATURE,
    SIGNATURE_SVERSION,
    Signature,
    content_root,
    parse_signature,
    verify_signature,
)
from overlap_desktop.core.types import Span, StreamFingerprints, Variant
from overlap_desktop.errors import ManifestError, OverlapError

__all__ = ["decoded_budget", "parse_manifest", "read_manifest"]

#: Default decoded budget: this floor plus :data:`DECODED_RATIO` times the file size (so a
#: small hostile file cannot make the reader allocate gigabytes); writers stay within it.
DECODED_FLOOR = 64 << 20
DECODED_RATIO = 32


def _parse_times(r: ByteCursor, n: int) -> tuple[int, np.ndarray, np.ndarray]:
    """Read and check the timestamp runs; the times are materialised later by
    :func:`_expand_times`, only once the payload has proved the samples exist."""
    at = r.pos
    t0 = r.u64("first timestamp")
    nruns = r.u32("timestamp run count")
    empty = np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.uint32)
    if n == 0:
        if t0 or nruns:
            raise r.fail("a stream without samples must have t0 = 0 and no timestamp runs", at)
        return 0, *empty
    if t0 > MAX_TIME_NS:
        raise r.fail(f"first timestamp {t0} ns exceeds 2^53", at)
    if nruns > n - 1:
        raise r.fail(f"{nruns} timestamp runs for {n} samples", at)
    raw = r.take(nruns * RUN_DTYPE.itemsize, f"{nruns} timestamp runs")
    runs = np.frombuffer(raw, dtype=RUN_DTYPE, count=nruns)
    deltas = runs["delta"]
    counts = runs["count"]
    if nruns:
        if int(deltas.min()) < 1 or int(deltas.max()) > MAX_TIME_NS:
            raise r.fail("a timestamp delta is outside 1..2^53 ns", at)
        if int(counts.min()) < 1:
            raise r.fail("a timestamp run has count 0", at)
        if nruns > 1 and bool(np.any(deltas[1:] == deltas[:-1])):
            raise r.fail("adjacent timestamp runs have equal deltas (non-canonical)", at)
    covered = int(counts.sum(dtype=np.int64))
    if covered != n - 1:
        raise r.fail(f"timestamp runs cover {covered + 1} samples, the stream has {n}", at)
    # A float estimate first, so the exact int64 sums later cannot overflow.
    approx = float(t0) + float(np.dot(deltas.astype(np.float64), counts.astype(np.float64)))
    if approx > MAX_TIME_NS * 1.001:
        raise r.fail("timestamps run past 2^53 ns", at)
    return t0, deltas, counts


def _expand_times(r: ByteCursor, n: int, t0: int, deltas: np.ndarray, counts: np.ndarray, at: int) -> np.ndarray:
    times = np.empty(n, dtype=np.int64)
    if n == 0:
        return times
    times[0] = t0
    if n > 1:
        np.cumsum(np.repeat(deltas.astype(np.int64), counts.astype(np.int64)), out=times[1:])
        times[1:] += t0
    if int(times[-1]) > MAX_TIME_NS:
        raise r.fail("timestamps run past 2^53 ns", at)
    return times


def decoded_budget(size: int) -> int:
    """The default decoded-payload budget for a manifest of ``size`` bytes."""
    return min(MAX_DECODED_BYTES, DECODED_FLOOR + DECODED_RATIO * size)


def _parse_payload(r: ByteCursor, n: int, budget: DecodedBudget) -> bytes:
    at = r.pos
    enc = r.u8("payload encoding")
    stored = r.u32("payload length")
    want = 33 * n + (n + 7) // 8
    if enc == 0:
        if stored != want:
            raise r.fail(f"raw payload is {stored} bytes, {n} samples need {want}", at)
        r.need(want, f"payload of {n} samples")
        if want > budget.left:
            raise r.fail(f"decoded payloads exceed the {budget.left}-byte budget", at)
        budget.left -= want
        return bytes(r.take(want, "payload"))
    if enc != 1:
        raise r.fail(f"unknown payload encoding {enc}", at)
    if want > budget.left:
        raise r.fail(f"{n} samples need {want} decoded bytes, over the remaining budget of "
                     f"{budget.left}", at)
    packed = bytes(r.take(stored, "compressed payload"))
    import zstandard

    # The frame must declare its size and it must be the one we expect: the library
    # ignores max_output_size when a frame declares a (possibly huge) size.
    try:
        params = zstandard.get_frame_parameters(packed)
    except zstandard.ZstdError as exc:
        raise r.fail(f"compressed payload is not a zstd frame ({exc})", at) from None
    if params.content_size != want:
        raise r.fail(f"compressed payload declares {params.content_size} bytes, {n} samples need {want}",
                     at)
    if params.window_size > (1 << 27):
        raise r.fail(f"compressed payload asks for a {params.window_size}-byte window", at)
    try:
        out = zstandard.ZstdDecompressor().decompress(packed, max_output_size=want)
    except zstandard.ZstdError as exc:
        raise r.fail(f"compressed payload is corrupt ({exc})", at) from None
    if len(out) != want:
        raise r.fail(f"compressed payload decoded to {len(out)} bytes, expected {want}", at)
    # The one-shot call ignores bytes after the frame; a streaming pass over the frame just
    # validated (so bounded by it) reports them. No unparsed bytes may hide in a payload.
    try:
        dobj = zstandard.ZstdDecompressor().decompressobj()
        dobj.decompress(packed)
        trailing = len(dobj.unused_data) if dobj.eof else -1
    except zstandard.ZstdError as exc:
        raise r.fail(f"compressed payload is corrupt ({exc})", at) from None
    if trailing:
        raise r.fail("compressed payload has bytes after its zstd frame" if trailing > 0
                     else "compressed payload does not end its zstd frame", at)
    budget.left -= want
    return out


def _parse_stream(r: ByteCursor, budget: DecodedBudget) -> ManifestStream:
    key = r.text(2, "stream key", 256, allow_empty=False)
    r.where += f" stream {key!r}"
    at = r.pos
    fps = r.f64("fps", 0.0, MAX_FPS)
    if fps <= 0:
        raise r.fail("fps must be positive", at)
    duration = r.f64("stream duration", 0.0, MAX_DURATION_S)
    at = r.pos
    n = r.u32("sample count")
    # Cheapest possible bound before anything else: a compressed payload may be small, but
    # its decoded size must still fit the budget.
    if 33 * n + (n + 7) // 8 > budget.left:
        raise r.fail(f"sample count {n} needs {33 * n + (n + 7) // 8} decoded bytes, over the "
                     f"remaining budget of {budget.left}", at)
    at = r.pos
    nspans = r.u32("indeterminate span count")
    if nspans * 17 > r.end - r.pos:
        raise r.fail(f"{nspans} indeterminate spans need at least {nspans * 17} bytes but "
                     f"{r.end - r.pos} remain", at)
    spans: list[Span] = []
    for _ in range(nspans):
        sat = r.pos
        start = r.f64("span start", 0.0, MAX_DURATION_S)
        end = r.f64("span end", 0.0, MAX_DURATION_S)
        if end < start:
            raise r.fail(f"span ends ({end}) before it starts ({start})", sat)
        reason = r.text(1, "span reason", 255)
        spans.append(Span(start, end, reason))
    tat = r.pos
    t0, deltas, counts = _parse_times(r, n)
    payload = _parse_payload(r, n, budget)
    times = _expand_times(r, n, t0, deltas, counts, tat)
    crowded = crowded_second(times)
    if crowded is not None:
        raise r.fail(f"more than {CROWDED_SAMPLES} samples within one second of footage (from "
                     f"{crowded / 1e9:.6f} s); at most {MAX_SAMPLES_PER_SECOND} per second are accepted, so the "
                     "memory a comparison needs stays proportional to footage", tat)
    codes = np.frombuffer(payload, dtype=np.uint8, count=32 * n).reshape(n, 1, 32).copy()
    quality = np.frombuffer(payload, dtype=np.uint8, count=n, offset=32 * n).copy()
    if n and int(quality.max()) > 100:
        raise r.fail("a quality value is over 100")
    bits = np.frombuffer(payload, dtype=np.uint8, count=(n + 7) // 8, offset=33 * n)
    unpacked = np.unpackbits(bits, bitorder="little")
    if unpacked[n:].any():
        raise r.fail("usable bitmap has padding bits set")
    usable = unpacked[:n].astype(bool)
    fp = StreamFingerprints(times_ns=times, quality=quality, codes=codes, variants=(Variant(),),
                            usable=usable, indeterminate=spans, fps=fps, duration_s=duration)
    return ManifestStream(key=key, fps=fps, fingerprints=fp)


def _parse_entry(r: ByteCursor, budget: DecodedBudget) -> ManifestFile:
    base = r.where
    name = r.text(2, "file name", 4096, allow_empty=False)
    problem = name_problem(name)
    if problem:
        raise r.fail(f"file name {name!r} {problem}")
    r.where = f"{base} ({name})"
    size = r.u64("file size")
    if size > MAX_FILE_SIZE:
        raise r.fail(f"file size {size} exceeds 2^62")
    digest = bytes(r.take(32, "sha256")).hex()
    duration = r.f64("duration", 0.0, MAX_DURATION_S)
    at = r.pos
    nstreams = r.u16("stream count")
    if nstreams > MAX_STREAMS:
        raise r.fail(f"stream count {nstreams} exceeds {MAX_STREAMS}", at)
    if nstreams * 44 > r.end - r.pos:
        raise r.fail(f"{nstreams} streams need at least {nstreams * 44} bytes but "
                     f"{r.end - r.pos} remain", at)
    streams: list[ManifestStream] = []
    prev: bytes | None = None
    head = r.where
    for _ in range(nstreams):
        sat = r.pos
        r.where = head
        s = _parse_stream(r, budget)
        kb = s.key.encode("utf-8")
        if prev is not None and kb <= prev:
            r.where = head
            raise r.fail(f"stream keys out of order or repeated at {s.key!r}", sat)
        prev = kb
        streams.append(s)
    r.where = head
    return ManifestFile(name=name, size=size, sha256=digest, duration_s=duration, streams=streams)


def parse_manifest(data: bytes | bytearray | memoryview, *, source: str | os.PathLike[str] | None = None,
                   expect_algo: str | None = None, expect_prep: str | None = None,
                   max_decoded: int | None = None) -> Manifest:
    """Parse and verify an encoded manifest held in memory.

    Args:
        data: The whole manifest.
        source: Named in error messages (a path).
        expect_algo: Refuse a manifest whose ``algo_id`` differs.
        expect_prep: Refuse a manifest whose ``prep_id`` cannot be compared with this one
            (``prep.comparable_prep``); one of an earlier, comparable normalisation is read
            as ``expect_prep`` (``Manifest.prep_id_written`` keeps what it says).
        max_decoded: Budget for decoded fingerprint payloads, bytes (default
            :func:`decoded_budget` of the input size).

    Returns:
        The verified :class:`Manifest`.

    Raises:
        ManifestError: on any defect, with the section, entry and offset in the message.
    """
    src = os.fspath(source) if source is not None else None
    if max_decoded is None:
        max_decoded = decoded_budget(len(data))
    try:
        return _parse(memoryview(data).cast("B"), src, expect_algo, expect_prep, max_decoded)
    except ManifestError:
        raise
    except OverlapError as exc:  # e.g. Cancelled is not expected here; keep the type contract
        raise ManifestError(str(exc), path=src) from exc
    except (MemoryError, RecursionError) as exc:
        raise ManifestError(f"manifest too large to load ({type(exc).__name__})", path=src) from None
    except Exception as exc:  # a parser bug must still not escape as a foreign type
        raise ManifestError(f"manifest could not be parsed ({type(exc).__name__}: {exc})",
                            path=src) from exc


def _parse(buf: memoryview, src: str | None, expect_algo: str | None, expect_prep: str | None,
           max_decoded: int) -> Manifest:
    r = ByteCursor(buf, src)
    table = _parse_table(r)
    r.where = "META"
    meta_end = r.pos + table[0].length
    r.end = meta_end
    meta = _parse_meta(r, table[1].length)
    leaves = [leaf_hash(buf[:meta_end])]
    budget = DecodedBudget(max_decoded)
    files = _parse_files(r, meta_end + table[1].length, meta.nfiles, budget, leaves)
    optional, text_ngrams, signed = _parse_optional(r, table[2:-1], files, budget, leaves)
    r.where = "ROOT"
    r.end = len(buf)
    stored = bytes(r.take(32, "Merkle root"))
    signature = None
    if signed is not None:
        # The signature is checked before the stored root: a tampered signed manifest is
        # refused for what matters to the buyer (it is not what the vendor signed).
        signature, index, leaf = signed
        verify_signature(signature, meta.label, content_root(buf, len(table), index, meta_end, leaves, leaf),
                         src)
    computed = root_from_leaf_hashes(leaves)
    if stored != computed:
        raise ManifestError(f"Merkle root mismatch: the file was altered or damaged (stored "
                            f"{stored.hex()}, computed {computed.hex()})", path=src)
    if expect_algo is not None and meta.algo_id != expect_algo:
        raise ManifestError(f"hash function mismatch: manifest uses algo_id {meta.algo_id!r}, this side uses "
                            f"{expect_algo!r}; comparisons need the same hash function", path=src)
    prep_id = meta.prep_id
    if expect_prep is not None and meta.prep_id != expect_prep:
        why = comparable_prep(meta.prep_id, expect_prep)
        if why is not None:
            raise ManifestError(f"normalisation mismatch: manifest uses prep_id {meta.prep_id!r}, this side uses "
                                f"{expect_prep!r}: {why}", path=src)
        # An earlier, comparable normalisation: its usable codes are this one's (prep.PREP_PREDECESSORS).
        prep_id = expect_prep
    return Manifest(label=meta.label, algo_id=meta.algo_id, prep_id=prep_id, created=meta.created or None,
                    creator=meta.creator, root=computed.hex(), files=files,
                    anonymized=bool(meta.flags & META_FLAG_ANONYMIZED), version=FORMAT_VERSION,
                    prep_id_written=meta.prep_id,
                    optional_sections=optional, size_bytes=len(buf), text_ngrams=text_ngrams,
                    signature=signature)


class _Section(NamedTuple):
    """One section-table record, and where it sits in the table (for messages)."""

    type: int
    sversion: int
    flags: int
    length: int
    at: int


class _Meta(NamedTuple):
    flags: int
    nfiles: int
    algo_id: str
    prep_id: str
    creator: str
    created: str
    label: str


def _parse_table(r: ByteCursor) -> list[_Section]:
    """Preamble and section table, checked against the file's length and the v1 rules."""
    buf, src = r.buf, r.source
    if len(buf) < PREAMBLE.size or bytes(buf[:8]) != MAGIC:
        if len(buf) >= 8 and bytes(buf[:8]) == MAGIC:
            raise r.fail("file ends inside the preamble")
        raise ManifestError("not an overlap manifest (bad magic bytes)", path=src)
    _, version, flags, nsect = r.unpack(PREAMBLE, "preamble")
    if version != FORMAT_VERSION:
        newer = " (written by a newer overlap; upgrade to read it)" if version > FORMAT_VERSION else ""
        raise r.fail(f"unsupported format version {version}, this reader reads {FORMAT_VERSION}{newer}", 8)
    if flags:
        raise r.fail(f"unknown preamble flags {flags:#06x}", 10)
    if not 3 <= nsect <= MAX_SECTIONS:
        raise r.fail(f"section count {nsect} outside 3..{MAX_SECTIONS}", 12)
    r.where = "section table"
    table: list[_Section] = []
    for i in range(nsect):
        at = r.pos
        t, v, fl, res, ln = r.unpack(SECTION, f"section table record {i}")
        if res:
            raise r.fail(f"record {i}: reserved field is {res}, must be 0", at)
        if fl & ~FLAG_CRITICAL:
            raise r.fail(f"record {i}: unknown section flags {fl:#06x}", at)
        if table and t <= table[-1].type:
            raise r.fail(f"record {i}: section type {t:#06x} out of order or repeated", at)
        table.append(_Section(t, v, fl, ln, at))
    _check_table(r, table)
    return table


def _check_table(r: ByteCursor, table: list[_Section]) -> None:
    """Section lengths add up to the body; META, FILES, ROOT in place; no unknown critical."""
    body_bytes = r.end - r.pos
    total = 0
    for sec in table:
        total += sec.length
        if total > body_bytes:
            raise r.fail(f"section {SECTION_NAMES.get(sec.type, hex(sec.type))} length {sec.length} runs past "
                         f"the end of the file ({body_bytes} body bytes)", sec.at)
    if total != body_bytes:
        raise r.fail(f"sections cover {total} bytes but {body_bytes} follow the table "
                     "(trailing or missing bytes)")
    for pos, (want, name) in ((0, (SEC_META, "META")), (1, (SEC_FILES, "FILES")),
                              (len(table) - 1, (SEC_ROOT, "ROOT"))):
        t, v, fl, _ln, at = table[pos]
        if t != want:
            raise r.fail(f"section {pos} is type {t:#06x}, expected {name}", at)
        if v != 1:
            raise r.fail(f"{name} section version {v} is not supported (this reader knows 1)", at)
        if not fl & FLAG_CRITICAL:
            raise r.fail(f"{name} section is not marked critical", at)
    if table[-1].length != 32:
        raise r.fail(f"ROOT section is {table[-1].length} bytes, must be 32", table[-1].at)
    for t, v, fl, _ln, at in table[2:-1]:
        if fl & FLAG_CRITICAL:
            raise r.fail(f"critical section type {t:#06x} version {v} is not understood by this "
                         "reader (written by a newer overlap?)", at)


def _parse_meta(r: ByteCursor, files_len: int) -> _Meta:
    """The META section (``r`` bounded to it); the file count must fit ``files_len`` bytes."""
    meta_end = r.end
    at = r.pos
    mflags = r.u32("flags")
    if mflags & ~META_FLAG_ANONYMIZED:
        raise r.fail(f"unknown META flags {mflags:#010x}", at)
    at = r.pos
    nfiles = r.u32("file count")
    if nfiles > MAX_FILES or nfiles * (4 + MIN_ENTRY) > files_len:
        raise r.fail(f"file count {nfiles} cannot fit the {files_len}-byte FILES section "
                     f"(limit {MAX_FILES})", at)
    ids: list[str] = []
    for what in ("algo_id", "prep_id"):
        at = r.pos
        s = r.text(1, what, 64, allow_empty=False)
        if not ID_RE.fullmatch(s):
            raise r.fail(f"{what} {s!r} is not 1-64 of [A-Za-z0-9._:+-]", at)
        ids.append(s)
    creator = r.text(1, "creator", 128)
    at = r.pos
    created = r.text(1, "created", 64)
    if created and not CREATED_RE.fullmatch(created):
        raise r.fail(f"created {created!r} is not YYYY-MM-DDTHH:MM:SSZ", at)
    label = r.text(2, "label", 4096)
    if r.pos != meta_end:
        raise r.fail(f"{meta_end - r.pos} unexplained bytes at the end of META")
    return _Meta(mflags, nfiles, ids[0], ids[1], creator, created, label)


def _parse_files(r: ByteCursor, files_end: int, nfiles: int, budget: DecodedBudget,
                 leaves: list[bytes]) -> list[ManifestFile]:
    """The FILES section's entries, in strict name order; appends each entry's leaf hash."""
    r.end = files_end
    files: list[ManifestFile] = []
    prev: bytes | None = None
    empty = 0
    for i in range(nfiles):
        r.where = f"FILES entry {i + 1}"
        at = r.pos
        elen = r.u32("entry length")
        if elen < MIN_ENTRY:
            raise r.fail(f"entry length {elen} is below the minimum {MIN_ENTRY}", at)
        r.need(elen, "entry")
        start = r.pos
        r.end = start + elen
        f = _parse_entry(r, budget)
        if r.pos != r.end:
            raise r.fail(f"{r.end - r.pos} unexplained bytes at the end of the entry")
        r.end = files_end
        nb = f.name.encode("utf-8")
        if prev is not None and nb <= prev:
            raise r.fail(f"file names out of order or repeated at {f.name!r}", start)
        prev = nb
        leaves.append(leaf_hash(r.buf[start:start + elen]))
        files.append(f)
        if not any(len(st.fingerprints) for st in f.streams):
            empty += 1
            if empty > MAX_FILES_WITHOUT_SAMPLES:
                raise r.fail(f"more than {MAX_FILES_WITHOUT_SAMPLES} file entries carry no fingerprint; such "
                             "entries cannot match anything and are refused beyond that many", start)
    r.where = "FILES"
    if r.pos != files_end:
        raise r.fail(f"{files_end - r.pos} bytes after the last file entry")
    return files


def _parse_optional(r: ByteCursor, sections: list[_Section], files: list[ManifestFile], budget: DecodedBudget,
                    leaves: list[bytes]
                    ) -> tuple[list[OptionalSection], TextNgrams | None, tuple[Signature, int, int] | None]:
    """The optional sections: understood ones parsed, others kept verbatim; all leaf-hashed.
    A SIGNATURE v1 comes back with its table position and leaf position (for the content root)."""
    optional: list[OptionalSection] = []
    text_ngrams: TextNgrams | None = None
    signed: tuple[Signature, int, int] | None = None
    for i, (t, v, _fl, ln, _at) in enumerate(sections):
        body = bytes(r.buf[r.pos:r.pos + ln])
        leaves.append(leaf_hash(body))
        if (t, v) == (SEC_SIGNATURE, SIGNATURE_SVERSION):
            signed = (parse_signature(body, r.pos, r.source), i + 2, len(leaves) - 1)
            r.pos += ln
            continue
        # Sections this version understands are parsed as strictly as FILES (bounded to
        # their own length); other versions of them, and unknown types, are kept verbatim.
        if (t, v) in ((SEC_TEXT_NGRAMS, NGRAMS_SVERSION), (SEC_STREAM_EPISODES, EPISODES_SVERSION)):
            r.where, r.end = SECTION_NAMES[t], r.pos + ln
            if t == SEC_TEXT_NGRAMS:
                text_ngrams = parse_text_ngrams(r, budget)
            else:
                for (fi, key), spans in parse_stream_episodes(r, files).items():
                    next(s for s in files[fi].streams if s.key == key).episodes = spans
            r.end = len(r.buf)
        else:
            r.pos += ln
            optional.append(OptionalSection(type=t, sversion=v, body=body))
    return optional, text_ngrams, signed


def read_manifest(path: str | os.PathLike[str], *, expect_algo: str | None = None,
                  expect_prep: str | None = None, max_bytes: int = MAX_MANIFEST_BYTES,
                  max_decoded: int | None = None) -> Manifest:
    """Read, parse and verify a manifest file.

    Args:
        path: The ``.ovlm`` file.
        expect_algo: Refuse a manifest whose ``algo_id`` differs (message names both).
        expect_prep: Refuse a manifest whose ``prep_id`` differs (message names both).
        max_bytes: Refuse files larger than this before reading them.
        max_decoded: Budget for decoded fingerprint payloads (default :func:`decoded_budget`).

    Returns:
        The verified :class:`Manifest`.

    Raises:
        ManifestError: unreadable, oversized, malformed, tampered or incompatible.
    """
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > max_bytes:
                raise ManifestError(f"manifest is {size} bytes, over the {max_bytes}-byte limit", path=p)
            # One byte more than expected: a file that grew while being read is refused.
            data = fh.read(size + 1)
    except ManifestError:
        raise
    except IsADirectoryError:
        raise ManifestError("is a folder, not a manifest", path=p) from None
    except FileNotFoundError:
        raise ManifestError("no such file", path=p) from None
    except OSError as exc:
        raise ManifestError(f"cannot read: {exc.strerror or exc}", path=p) from None
    if len(data) != size:
        raise ManifestError("file changed while being read", path=p)
    m = parse_manifest(data, source=p, expect_algo=expect_algo, expect_prep=expect_prep,
                       max_decoded=max_decoded)
    m.path = p
    return m
