"""The ``.ovlm`` writer: encode manifest entries into canonical bytes.

Canonical means one byte sequence per content: files sorted by name, streams by key,
timestamps as runs of equal deltas, payloads zstd-compressed only when that saves at
least 3 %. Everything the strict reader (:mod:`~overlap_desktop.core.manifest.parse`)
would refuse is refused here first, with a ``cannot write manifest`` error.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence

import numpy as np

from overlap_desktop import __version__
from overlap_desktop.core.manifest.format import (
    CONTROL_RE,
    CREATED_RE,
    CROWDED_SAMPLES,
    FLAG_CRITICAL,
    FORMAT_VERSION,
    ID_RE,
    MAGIC,
    MAX_DURATION_S,
    MAX_FILE_SIZE,
    MAX_FILES,
    MAX_FILES_WITHOUT_SAMPLES,
    MAX_FPS,
    MAX_STREAMS,
    MAX_TIME_NS,
    META_FLAG_ANONYMIZED,
    PREAMBLE,
    RUN_DTYPE,
    SEC_FILES,
    SEC_META,
    SEC_ROOT,
    SEC_STREAM_EPISODES,
    SEC_TEXT_NGRAMS,
    SECTION,
    ZSTD_LEVEL,
    ZSTD_MIN_SAVING,
    ManifestFile,
    ManifestStream,
    OptionalSection,
    TextNgrams,
    crowded_second,
    name_problem,
)
from overlap_desktop.core.manifest.merkle import leaf_hash, root_from_leaf_hashes
from overlap_desktop.core.manifest.parse import decoded_budget
from overlap_desktop.core.manifest.sections import (
    EPISODES_SVERSION,
    NGRAMS_SVERSION,
    encode_stream_episodes,
    encode_text_ngrams,
)
from overlap_desktop.core.manifest.signature import SEC_SIGNATURE, SIGNATURE_SVERSION
from overlap_desktop.core.types import StreamFingerprints
from overlap_desktop.errors import ManifestError

__all__ = ["encode_manifest"]


def _check_text(value: str, what: str, max_bytes: int, *, allow_empty: bool = True) -> bytes:
    """Encode a string for the writer, refusing what the reader would refuse."""
    try:
        raw = value.encode("utf-8", "strict")
    except UnicodeEncodeError:
        raise ManifestError(f"cannot write manifest: {what} is not valid Unicode text") from None
    if not allow_empty and not raw:
        raise ManifestError(f"cannot write manifest: {what} is empty")
    if len(raw) > max_bytes:
        raise ManifestError(f"cannot write manifest: {what} is {len(raw)} bytes (limit {max_bytes})")
    if CONTROL_RE.search(value):
        raise ManifestError(f"cannot write manifest: {what} contains control characters")
    return raw


def _encode_times(times: np.ndarray, where: str) -> bytes:
    """Timestamps as t0 + runs of equal deltas (exact, one run for a regular grid)."""
    times = np.asarray(times, dtype=np.int64)
    n = int(times.shape[0])
    if n == 0:
        return struct.pack("<QI", 0, 0)
    t0 = int(times[0])
    if t0 < 0 or int(times[-1]) > MAX_TIME_NS:
        raise ManifestError(f"cannot write manifest: {where}: timestamps outside 0..2^53 ns")
    deltas = np.diff(times)
    if n > 1 and int(deltas.min()) <= 0:
        raise ManifestError(f"cannot write manifest: {where}: timestamps are not strictly increasing")
    if n == 1:
        return struct.pack("<QI", t0, 0)
    change = np.flatnonzero(deltas[1:] != deltas[:-1]) + 1
    starts = np.concatenate(([0], change))
    counts = np.diff(np.concatenate((starts, [deltas.shape[0]])))
    runs = np.empty(starts.shape[0], dtype=RUN_DTYPE)
    runs["delta"] = deltas[starts]
    runs["count"] = counts
    return struct.pack("<QI", t0, runs.shape[0]) + runs.tobytes()


def _encode_payload(fp: StreamFingerprints, compress: str, where: str) -> bytes:
    n = len(fp)
    codes = np.asarray(fp.codes, dtype=np.uint8)
    if codes.ndim == 3:
        codes = codes[:, 0, :]
    if codes.shape != (n, 32):
        raise ManifestError(f"cannot write manifest: {where}: codes have shape {codes.shape}, "
                            f"expected ({n}, 32)")
    quality = np.asarray(fp.quality, dtype=np.uint8).reshape(n)
    if n and int(quality.max()) > 100:
        raise ManifestError(f"cannot write manifest: {where}: quality over 100")
    usable = np.asarray(fp.usable, dtype=bool).reshape(n)
    raw = (np.ascontiguousarray(codes).tobytes() + quality.tobytes()
           + np.packbits(usable, bitorder="little").tobytes())
    if compress != "never" and n:
        import zstandard

        packed = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_content_size=True,
                                          write_checksum=False, write_dict_id=False).compress(raw)
        if compress == "always" or len(packed) <= len(raw) * (1.0 - ZSTD_MIN_SAVING):
            return struct.pack("<BI", 1, len(packed)) + packed
    return struct.pack("<BI", 0, len(raw)) + raw


def _encode_stream(s: ManifestStream, compress: str, where: str) -> bytes:
    fp = s.fingerprints
    key = _check_text(s.key, f"{where}: stream key", 256, allow_empty=False)
    if not (math.isfinite(s.fps) and 0 < s.fps <= MAX_FPS):
        raise ManifestError(f"cannot write manifest: {where}: fps {s.fps} outside (0, {MAX_FPS}]")
    dur = float(fp.duration_s)
    if not (math.isfinite(dur) and 0 <= dur <= MAX_DURATION_S):
        raise ManifestError(f"cannot write manifest: {where}: duration {dur} out of range")
    out = [struct.pack("<H", len(key)), key, struct.pack("<ddII", float(s.fps), dur, len(fp),
                                                         len(fp.indeterminate))]
    for sp in fp.indeterminate:
        start, end = float(sp.start_s), float(sp.end_s)
        if not (math.isfinite(start) and math.isfinite(end) and 0 <= start <= end <= MAX_DURATION_S):
            raise ManifestError(f"cannot write manifest: {where}: bad indeterminate span {sp}")
        reason = _check_text(sp.reason, f"{where}: span reason", 255)
        out += [struct.pack("<ddB", start, end, len(reason)), reason]
    crowded = crowded_second(np.asarray(fp.times_ns))
    if crowded is not None:
        raise ManifestError(f"cannot write manifest: {where}: more than {CROWDED_SAMPLES} samples within one "
                            f"second (from {crowded / 1e9:.6f} s); export at a lower --fps")
    out.append(_encode_times(fp.times_ns, where))
    out.append(_encode_payload(fp, compress, where))
    return b"".join(out)


def _encode_entry(f: ManifestFile, compress: str) -> bytes:
    name = _check_text(f.name, "file name", 4096, allow_empty=False)
    problem = name_problem(f.name)
    if problem:
        raise ManifestError(f"cannot write manifest: file name {f.name!r} {problem}")
    where = f"file {f.name!r}"
    if not 0 <= int(f.size) <= MAX_FILE_SIZE:
        raise ManifestError(f"cannot write manifest: {where}: size {f.size} out of range")
    try:
        digest = bytes.fromhex(f.sha256)
    except (ValueError, TypeError):
        digest = b""
    if len(digest) != 32:
        raise ManifestError(f"cannot write manifest: {where}: sha256 {f.sha256!r} is not 64 hex digits")
    dur = float(f.duration_s)
    if not (math.isfinite(dur) and 0 <= dur <= MAX_DURATION_S):
        raise ManifestError(f"cannot write manifest: {where}: duration {dur} out of range")
    streams = sorted(f.streams, key=lambda s: s.key.encode("utf-8"))
    keys = [s.key for s in streams]
    if len(set(keys)) != len(keys):
        raise ManifestError(f"cannot write manifest: {where}: duplicate stream keys")
    if len(streams) > MAX_STREAMS:
        raise ManifestError(f"cannot write manifest: {where}: more than {MAX_STREAMS} streams")
    out = [struct.pack("<H", len(name)), name, struct.pack("<Q", int(f.size)), digest,
           struct.pack("<dH", dur, len(streams))]
    out += [_encode_stream(s, compress, f"{where} stream {s.key!r}") for s in streams]
    return b"".join(out)


def encode_manifest(files: Sequence[ManifestFile], *, label: str = "", algo_id: str, prep_id: str,
                    creator: str | None = None, created: str | None = None, anonymized: bool = False,
                    optional_sections: Sequence[OptionalSection] = (),
                    compress: str = "auto", text_ngrams: TextNgrams | None = None,
                    signer: Callable[[bytes, str], bytes] | None = None) -> tuple[bytes, str]:
    """Encode a manifest in canonical form.

    Args:
        files: The file entries (sorted here by name, streams by key).
        label: Free text, at most 4096 UTF-8 bytes, no control characters.
        algo_id: Hash function id.
        prep_id: Frame normalisation id.
        creator: Tool and version (default ``overlap-desktop <version>``).
        created: ``YYYY-MM-DDTHH:MM:SSZ`` or ``None`` (not recorded: deterministic output).
        anonymized: Sets the META flag saying names are pseudonyms.
        optional_sections: Non-critical sections to carry (Merkle-bound).
        compress: ``"auto"`` (zstd when it saves >= 3 %), ``"never"`` or ``"always"``.
        text_ngrams: Annotation n-gram hashes to carry in a TEXT_NGRAMS section. Stream
            ``episodes`` are carried in a STREAM_EPISODES section automatically.
        signer: Called with the content root (the root without a signature) and the label;
            returns a SIGNATURE body (:func:`~overlap_desktop.core.manifest.signature.sign_section`)
            that is added as an optional section. ``None``: unsigned.

    Returns:
        ``(encoded bytes, Merkle root hex)``.

    Raises:
        ManifestError: an input value cannot be represented (names, sizes, timestamps...).
    """
    if compress not in ("auto", "never", "always"):
        raise ValueError(f"compress must be auto, never or always, not {compress!r}")
    creator = f"overlap-desktop {__version__}" if creator is None else creator
    meta_text = _meta_text(algo_id, prep_id, creator, created, label)
    ordered = _ordered_files(files)
    entries = [_encode_entry(f, compress) for f in ordered]
    meta = struct.pack("<II", META_FLAG_ANONYMIZED if anonymized else 0, len(entries)) + meta_text
    extras = _extra_sections(optional_sections, text_ngrams, ordered, compress)
    data, root = _assemble(meta, entries, extras)
    decoded = sum(33 * len(s.fingerprints) + (len(s.fingerprints) + 7) // 8 for f in ordered for s in f.streams)
    decoded += text_ngrams.decoded_bytes() if text_ngrams is not None else 0
    if compress != "never" and decoded > decoded_budget(len(data)):
        # Extremely repetitive footage would compress beyond what readers accept from a
        # file this small; raw encoding is always within the budget.
        return encode_manifest(files, label=label, algo_id=algo_id, prep_id=prep_id, creator=creator,
                               created=created, anonymized=anonymized, optional_sections=optional_sections,
                               compress="never", text_ngrams=text_ngrams, signer=signer)
    if signer is not None:
        # The signature signs the unsigned manifest's root; the stored root then covers it too.
        signed = OptionalSection(SEC_SIGNATURE, SIGNATURE_SVERSION, signer(root, label or ""))
        data, root = _assemble(meta, entries, sorted([*extras, signed], key=lambda s: s.type))
    return data, root.hex()


def _meta_text(algo_id: str, prep_id: str, creator: str, created: str | None, label: str) -> bytes:
    """The META fields after the flags and file count, each checked as the reader will."""
    for what, value in (("algo_id", algo_id), ("prep_id", prep_id)):
        if not ID_RE.fullmatch(value or ""):
            raise ManifestError(f"cannot write manifest: {what} {value!r} is not 1-64 of [A-Za-z0-9._:+-]")
    creator_b = _check_text(creator, "creator", 128)
    created_b = b"" if not created else created.encode("ascii", "replace")
    if created and not CREATED_RE.fullmatch(created):
        raise ManifestError(f"cannot write manifest: created {created!r} is not YYYY-MM-DDTHH:MM:SSZ")
    label_b = _check_text(label or "", "label", 4096)
    return b"".join([
        struct.pack("<B", len(algo_id)), algo_id.encode("ascii"),
        struct.pack("<B", len(prep_id)), prep_id.encode("ascii"),
        struct.pack("<B", len(creator_b)), creator_b,
        struct.pack("<B", len(created_b)), created_b,
        struct.pack("<H", len(label_b)), label_b,
    ])


def _ordered_files(files: Sequence[ManifestFile]) -> list[ManifestFile]:
    """The files in canonical (UTF-8 name) order, refusing what readers would refuse."""
    ordered = sorted(files, key=lambda f: f.name.encode("utf-8", "surrogatepass"))
    names = [f.name for f in ordered]
    if len(set(names)) != len(names):
        raise ManifestError("cannot write manifest: duplicate file names")
    if sum(1 for f in ordered if not any(len(st.fingerprints) for st in f.streams)) > MAX_FILES_WITHOUT_SAMPLES:
        raise ManifestError(f"cannot write manifest: more than {MAX_FILES_WITHOUT_SAMPLES} files carry no "
                            "fingerprint (readers refuse that many)")
    if len(ordered) > MAX_FILES:
        raise ManifestError(f"cannot write manifest: more than {MAX_FILES} files; split the export")
    return ordered


def _extra_sections(optional_sections: Sequence[OptionalSection], text_ngrams: TextNgrams | None,
                    ordered: Sequence[ManifestFile], compress: str) -> list[OptionalSection]:
    """The optional sections in type order: given ones, TEXT_NGRAMS, STREAM_EPISODES."""
    extras = list(optional_sections)
    if text_ngrams is not None:
        extras.append(OptionalSection(SEC_TEXT_NGRAMS, NGRAMS_SVERSION,
                                      encode_text_ngrams(text_ngrams, compress)))
    episodes_body = encode_stream_episodes(ordered)
    if episodes_body is not None:
        extras.append(OptionalSection(SEC_STREAM_EPISODES, EPISODES_SVERSION, episodes_body))
    extras.sort(key=lambda s: s.type)
    for s in extras:
        if not SEC_FILES < s.type < SEC_ROOT or s.type in (x.type for x in extras if x is not s):
            raise ManifestError(f"cannot write manifest: optional section type {s.type:#06x} is invalid "
                                "or repeated")
    return extras


def _assemble(meta: bytes, entries: Sequence[bytes], extras: Sequence[OptionalSection]) -> tuple[bytes, bytes]:
    """Preamble, section table, sections and Merkle root: ``(manifest bytes, root)``."""
    files_body = b"".join(struct.pack("<I", len(e)) + e for e in entries)
    table = [(SEC_META, 1, FLAG_CRITICAL, len(meta)), (SEC_FILES, 1, FLAG_CRITICAL, len(files_body))]
    table += [(s.type, s.sversion, 0, len(s.body)) for s in extras]
    table.append((SEC_ROOT, 1, FLAG_CRITICAL, 32))
    head = PREAMBLE.pack(MAGIC, FORMAT_VERSION, 0, len(table))
    head += b"".join(SECTION.pack(t, v, fl, 0, ln) for t, v, fl, ln in table)
    header_leaf = head + meta
    leaves = [leaf_hash(header_leaf)] + [leaf_hash(e) for e in entries] + [leaf_hash(s.body) for s in extras]
    root = root_from_leaf_hashes(leaves)
    return b"".join([header_leaf, files_body] + [s.body for s in extras] + [root]), root
