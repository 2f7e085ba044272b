"""How fingerprints are stored in the index database's ``streams`` rows.

Each stream's arrays become four blobs: frame times (delta-coded int64), quality
(uint8), codes (``n x variants x 32`` bytes) and the usable flags (bit-packed). Every
blob starts with a one-byte tag:

* ``0`` raw bytes; ``1`` zstd-compressed bytes (used when that saves at least 5 %:
  times and flags compress well). Both still read for every blob.
* ``2`` (codes only, written since schema 2): *bit planes*. PDQ codes are near-random
  one by one, so zstd alone cannot shrink them, but they are not independent. A code
  differs from the previous sample's code of the same variant in about a tenth of its
  bits, and a mirrored variant's code is its upright sibling's code with a fixed set of
  bits inverted (the odd DCT columns, see :mod:`overlap_desktop.core.ingest.orient`)
  except for 2-3 % of the bits. So each variant is XORed with a prediction, either the
  previous sample (*temporal*) or, for a mirrored variant, its unmirrored sibling in the
  same sample XOR a per-stream 32-byte mask (the bits that differ in most samples,
  stored in the blob, so decoding does not depend on orientation code). The residuals
  are sparse; each of a variant's 256 bit positions is written as its bits over time
  (``np.packbits``), which puts the sparse bits next to each other, and the whole is one
  zstd frame with a content checksum. About 0.38 of the raw size on generated footage
  (bench/RESULTS.md, "Index size").

Layout of a tag-2 blob's decompressed payload, for ``n`` samples, ``V`` variants and
``nb = ceil(n / 8)``: ``n`` and ``V`` (little-endian uint64 and uint32, checked against
the row), ``V`` reference bytes (255 = temporal, else the index of the temporally coded
sibling it is XORed with), ``V x 32`` mask bytes (zero for temporal variants), then
``V x 256 x nb`` bit-plane bytes (padding bits zero), variant by variant, in the order of
the ``variants`` column. Every decoded blob's size is checked against ``n`` and
the variants, and a zstd frame against its checksum, so a damaged blob is reported as
an :class:`~overlap_desktop.errors.IndexError_` instead of decoding to wrong codes (with
deltas, one flipped bit would spoil every later sample).

The reader's :class:`StreamInfo` is stored as JSON text. This module is the whole blob
format: changing it means a new schema version (:mod:`overlap_desktop.core.index.schema`).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from overlap_desktop.core.types import CODE_BYTES, Span, StreamFingerprints, StreamInfo, Variant
from overlap_desktop.errors import IndexError_

__all__ = ["decode_codes", "decode_fingerprints", "encode_codes", "encode_fingerprints", "episode_time",
           "info_from_json", "info_to_json"]

_RAW, _ZSTD, _PLANES = b"\x00", b"\x01", b"\x02"
_TEMPORAL = 255  # reference byte of a variant predicted from the previous sample
_BITS = CODE_BYTES * 8
_HEAD = struct.Struct("<QI")  # n, V at the start of a tag-2 payload
# zstd level: 15-19 would save another 8-9 % of the codes but compress 30-90x slower, and
# encoding runs in the one writer process that commits every worker's files.
_LEVEL = 3


def _zstd(data: bytes) -> bytes:
    import zstandard

    # The checksum (4 bytes) makes a damaged frame fail to decode instead of decoding to
    # wrong values, which delta coding would carry into every later sample.
    return zstandard.ZstdCompressor(level=_LEVEL, write_checksum=True).compress(data)


def _unzstd(body: bytes, size: int, what: str) -> bytes:
    """Decompress a zstd frame that must hold exactly ``size`` bytes."""
    import zstandard

    try:
        declared = zstandard.frame_content_size(body)
        if declared not in (-1, size):  # checked before allocating what a damaged header claims
            raise IndexError_(f"damaged {what} blob: it holds {declared} bytes, {size} expected")
        out = zstandard.ZstdDecompressor().decompress(body, max_output_size=size)
    except zstandard.ZstdError as exc:
        raise IndexError_(f"damaged {what} blob: {exc}") from exc
    if len(out) != size:
        raise IndexError_(f"damaged {what} blob: it holds {len(out)} bytes, {size} expected")
    return out


def _pack(data: bytes) -> bytes:
    """Compress with zstd when that saves space (times and flags; not quality or raw codes)."""
    z = _zstd(data)
    if len(z) < len(data) * 0.95:
        return _ZSTD + z
    return _RAW + data


def _unpack(blob: bytes, size: int, what: str) -> bytes:
    """The ``size`` bytes stored by :func:`_pack` (tags raw and zstd)."""
    tag, body = bytes(blob[:1]), blob[1:]
    if tag == _RAW:
        if len(body) != size:
            raise IndexError_(f"damaged {what} blob: it holds {len(body)} bytes, {size} expected")
        return bytes(body)
    if tag == _ZSTD:
        return _unzstd(body, size, what)
    raise IndexError_(f"unknown {what} blob encoding {tag!r}; the index may be damaged or made by a newer "
                      "overlap")


def _references(variants: tuple[Variant, ...]) -> list[int]:
    """Per variant: its unmirrored sibling's index (mirrored variants that have one), else temporal."""
    where = {v: k for k, v in enumerate(variants)}
    refs = []
    for v in variants:
        j = where.get(replace(v, mirrored=False), _TEMPORAL) if v.mirrored else _TEMPORAL
        refs.append(j if j < _TEMPORAL else _TEMPORAL)
    return refs


def _to_planes(r: np.ndarray) -> np.ndarray:
    """``(n, 32)`` codes -> ``(256, nb)``: bit ``b`` of every sample, packed over time."""
    bits = np.unpackbits(np.ascontiguousarray(r.T), axis=0)  # (256, n), row 8*i + j = bit j of byte i
    return np.packbits(bits, axis=1)


def _from_planes(p: np.ndarray, n: int) -> np.ndarray:
    """Inverse of :func:`_to_planes`."""
    bits = np.ascontiguousarray(np.unpackbits(p, axis=1, count=n).T)  # (n, 256)
    return np.packbits(bits, axis=1)


def encode_codes(codes: np.ndarray, variants: tuple[Variant, ...]) -> bytes:
    """The tag-2 (bit-plane) blob of ``uint8 (n, V, 32)`` codes; see the module docstring."""
    n, nv = codes.shape[0], len(variants)
    refs = _references(variants)
    masks = np.zeros((nv, CODE_BYTES), dtype=np.uint8)
    planes = np.empty((nv, _BITS, (n + 7) // 8), dtype=np.uint8)
    for k in range(nv):  # one variant at a time: scratch memory is n x 256 bytes, not x V
        c = codes[:, k]
        if refs[k] == _TEMPORAL:
            r = c.copy()
            r[1:] ^= c[:-1]
        else:
            r = c ^ codes[:, refs[k]]
            # The bits that differ in most samples: the sibling's inverted DCT columns.
            masks[k] = np.packbits(np.unpackbits(r, axis=1).sum(axis=0, dtype=np.int64) * 2 > n)
            r ^= masks[k]
        planes[k] = _to_planes(r)
    payload = _HEAD.pack(n, nv) + bytes(refs) + masks.tobytes() + planes.tobytes()
    return _PLANES + _zstd(payload)


def _decode_planes(body: bytes, n: int, nv: int) -> np.ndarray:
    nb = (n + 7) // 8
    payload = _unzstd(body, _HEAD.size + nv * (1 + CODE_BYTES + _BITS * nb), "fingerprint codes")
    if _HEAD.unpack_from(payload) != (n, nv):
        held = "{} samples x {} variants".format(*_HEAD.unpack_from(payload))
        raise IndexError_(f"damaged fingerprint codes blob: it holds {held}, {n} x {nv} expected")
    a = np.frombuffer(payload, dtype=np.uint8, offset=_HEAD.size)
    refs = [int(j) for j in a[:nv]]
    masks = a[nv:nv + nv * CODE_BYTES].reshape(nv, CODE_BYTES)
    planes = a[nv + nv * CODE_BYTES:].reshape(nv, _BITS, nb)
    for k, j in enumerate(refs):
        if j != _TEMPORAL and (j >= nv or refs[j] != _TEMPORAL):
            raise IndexError_(f"damaged fingerprint codes blob: variant {k} refers to variant {j}")
    out = np.empty((n, nv, CODE_BYTES), dtype=np.uint8)
    for k, j in enumerate(refs):  # temporal variants first: the others are XORed with them
        if j == _TEMPORAL:
            out[:, k] = np.bitwise_xor.accumulate(_from_planes(planes[k], n), axis=0)
    for k, j in enumerate(refs):
        if j != _TEMPORAL:
            out[:, k] = _from_planes(planes[k], n) ^ masks[k] ^ out[:, j]
    return out


def decode_codes(blob: bytes, n: int, nv: int) -> np.ndarray:
    """``uint8 (n, nv, 32)`` codes from a codes blob of any tag (raw, zstd, bit planes).

    Raises:
        IndexError_: the blob is damaged, does not hold ``n x nv`` codes, or has an unknown tag.
    """
    if n < 0 or nv < 0:
        raise IndexError_(f"damaged stream row: {n} samples, {nv} variants")
    if bytes(blob[:1]) == _PLANES:
        return _decode_planes(blob[1:], n, nv)
    raw = _unpack(blob, n * nv * CODE_BYTES, "fingerprint codes")
    return np.frombuffer(raw, dtype=np.uint8).reshape(n, nv, CODE_BYTES).copy()


def encode_fingerprints(fp: StreamFingerprints) -> dict[str, Any]:
    """Column values for one stream's fingerprints (times delta-coded, usable bit-packed)."""
    n = len(fp)
    times = np.asarray(fp.times_ns, dtype=np.int64)
    codes = np.ascontiguousarray(fp.codes, dtype=np.uint8)
    if codes.shape != (n, len(fp.variants), CODE_BYTES):
        raise ValueError(f"codes shape {codes.shape} does not match {n} frames x {len(fp.variants)} variants")
    deltas = np.diff(times, prepend=np.int64(0)).astype("<i8")
    usable = np.asarray(fp.usable, dtype=bool)
    return {
        "n": n,
        "times": _pack(deltas.tobytes()),
        "quality": _pack(np.asarray(fp.quality, dtype=np.uint8).tobytes()),
        "codes": encode_codes(codes, tuple(fp.variants)),
        "usable": _pack(np.packbits(usable).tobytes()),
        "variants": json.dumps([v.to_dict() for v in fp.variants]),
        "indeterminate": json.dumps([[s.start_s, s.end_s, s.reason] for s in fp.indeterminate]),
        "indeterminate_s": float(sum(s.duration_s for s in fp.indeterminate)),
        "fps": float(fp.fps),
        "duration_s": float(fp.duration_s),
        "n_usable": int(usable.sum()),
        "n_codes": int(usable.sum()) * len(fp.variants),
    }


def decode_fingerprints(n: int, times: bytes, quality: bytes, codes: bytes, usable: bytes,
                        variants: str, indeterminate: str, fps: float,
                        duration_s: float) -> StreamFingerprints:
    """Inverse of :func:`encode_fingerprints`; reads every blob tag of schema 1 and 2.

    Raises:
        IndexError_: a blob is damaged or its size does not match ``n`` (see :func:`decode_codes`).
    """
    vs = tuple(Variant.from_dict(d) for d in json.loads(variants))
    c = decode_codes(codes, n, len(vs))
    t = np.cumsum(np.frombuffer(_unpack(times, 8 * n, "frame times"), dtype="<i8")).astype(np.int64)
    q = np.frombuffer(_unpack(quality, n, "quality"), dtype=np.uint8).copy()
    u = np.unpackbits(np.frombuffer(_unpack(usable, (n + 7) // 8, "usable flags"), dtype=np.uint8),
                      count=n).astype(bool)
    spans = [Span(float(a), float(b), str(r)) for a, b, r in json.loads(indeterminate)]
    return StreamFingerprints(times_ns=t, quality=q, codes=c, variants=vs, usable=u,
                              indeterminate=spans, fps=float(fps), duration_s=float(duration_s))


def info_to_json(info: StreamInfo) -> str:
    def safe(v: Any) -> Any:
        try:
            json.dumps(v)
            return v
        except (TypeError, ValueError):
            return str(v)

    return json.dumps({
        "key": info.key, "width": info.width, "height": info.height, "duration_s": info.duration_s,
        "codec": info.codec, "rate_hint": info.rate_hint, "rotation": info.rotation,
        "extra": {str(k): safe(v) for k, v in (info.extra or {}).items()},
    })


def info_from_json(text: str) -> StreamInfo:
    d = json.loads(text)
    return StreamInfo(key=d["key"], width=d.get("width"), height=d.get("height"),
                      duration_s=d.get("duration_s"), codec=d.get("codec"), rate_hint=d.get("rate_hint"),
                      rotation=int(d.get("rotation") or 0), extra=dict(d.get("extra") or {}))


def episode_time(streams: Sequence[tuple[StreamInfo, StreamFingerprints]]) -> float:
    """A file's time counted as episode time, the unit vendors quote: streams of different
    episodes (each with one episode span, as robot-dataset readers give them) never share a
    timeline, so the file's time is the sum over its episodes of each one's longest stream; a file
    of one recording or episode is as long as its longest stream."""
    longest: dict[int | None, float] = {}
    for info, fp in streams:
        spans = (info.extra or {}).get("episodes") or []
        episode = None
        if isinstance(spans, (list, tuple)) and len(spans) == 1 and isinstance(spans[0], (list, tuple)):
            try:
                episode = int(spans[0][0])
            except (TypeError, ValueError, IndexError):
                episode = None
        longest[episode] = max(longest.get(episode, 0.0), float(fp.duration_s))
    return sum(longest.values()) if len(longest) > 1 else max(longest.values(), default=0.0)
