"""How fingerprints are stored in the index database's ``streams`` rows.

Each stream's arrays become four blobs: frame times (delta-coded int64), quality
(uint8), codes (``n x variants x 32`` bytes) and the usable flags (bit-packed). Every
blob starts with a one-byte tag: raw, or zstd-compressed when that saves at least 5 %
(PDQ codes are near-random and stay raw; times and flags compress well). The reader's
:class:`StreamInfo` is stored as JSON text.

This module is the whole blob format: changing it means a new schema version
(:mod:`overlap_desktop.core.index.schema`).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from overlap_desktop.core.types import CODE_BYTES, Span, StreamFingerprints, StreamInfo, Variant
from overlap_desktop.errors import IndexError_

__all__ = ["decode_fingerprints", "encode_fingerprints", "info_from_json", "info_to_json"]

_RAW, _ZSTD = b"\x00", b"\x01"


def _pack(data: bytes) -> bytes:
    """Compress with zstd when that saves space (PDQ codes are near-random; times are not)."""
    import zstandard

    z = zstandard.ZstdCompressor(level=3).compress(data)
    if len(z) < len(data) * 0.95:
        return _ZSTD + z
    return _RAW + data


def _unpack(blob: bytes) -> bytes:
    tag, body = blob[:1], blob[1:]
    if tag == _RAW:
        return bytes(body)
    if tag == _ZSTD:
        import zstandard

        return zstandard.ZstdDecompressor().decompress(body)
    raise IndexError_(f"unknown fingerprint blob encoding {tag!r}; the index may be damaged")


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
        "codes": _pack(codes.tobytes()),
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
    """Inverse of :func:`encode_fingerprints`."""
    vs = tuple(Variant.from_dict(d) for d in json.loads(variants))
    t = np.cumsum(np.frombuffer(_unpack(times), dtype="<i8")).astype(np.int64)
    q = np.frombuffer(_unpack(quality), dtype=np.uint8).copy()
    c = np.frombuffer(_unpack(codes), dtype=np.uint8).reshape(n, len(vs), CODE_BYTES).copy()
    u = np.unpackbits(np.frombuffer(_unpack(usable), dtype=np.uint8), count=n).astype(bool)
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

