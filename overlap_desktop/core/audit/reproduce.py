"""Do the quoted fingerprints belong to the delivered footage?

The delivered file is decoded the way indexing decodes it (same readers, sampler,
normalisation and hash; :mod:`.decode`), and each quoted stream's fingerprints are compared,
sample by sample at the quoted times, with the delivered stream's own. A quoted sample
*holds* when its code is within :data:`REPRODUCE_BITS` of the delivered one at that time.

A lossless re-decode gives the same codes bit for bit (0 bits on every sample measured,
whatever the decoder's thread count; bench/bench_audit.py), and the PDQ codes of two
different moments sit about 128 bits apart, so the tolerance only has to absorb what another
platform's scaler may change. Samples whose delivered picture is featureless (PDQ quality
below the index's floor) are not counted either way: their bits are unstable under any
change, and the screen never matches them.

Per file the result is ``reproduced`` (every checked sample holds), ``not reproduced``
(none holds, or a quoted stream is not in the delivered file) or ``partly reproduced``
(the stretches that differ are listed in seconds).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from overlap_desktop.core.manifest.format import ManifestFile, ManifestStream
from overlap_desktop.core.types import NS_PER_S, StreamFingerprints, StreamInfo

__all__ = ["NOT_CHECKED", "NOT_REPRODUCED", "PARTLY", "REPRODUCE_BITS", "REPRODUCED", "FileCheck", "StreamCheck",
           "check_file", "check_stream", "hamming", "match_streams", "not_checked"]

#: Most Hamming bits between a quoted code and the delivered code at its time for the sample to
#: hold. Re-decodes measured 0 bits (bench/bench_audit.py, docs/capacity.md); two different
#: moments of one scene rarely come within 40, different footage sits near 128.
REPRODUCE_BITS = 16

REPRODUCED = "reproduced"
PARTLY = "partly reproduced"
NOT_REPRODUCED = "not reproduced"
#: The file could not be checked: not delivered, or it could not be decoded.
NOT_CHECKED = "not checked"


def hamming(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Bit distances between rows of two ``uint8 (n, 32)`` code arrays."""
    x = np.bitwise_xor(np.asarray(a, np.uint8), np.asarray(b, np.uint8))
    return np.unpackbits(x, axis=1).sum(axis=1).astype(np.int64)


@dataclass(slots=True)
class StreamCheck:
    """One quoted stream against the delivered stream of the same key.

    Attributes:
        key: The quoted stream key.
        delivered_key: The delivered stream it was compared with ("" when none).
        samples: Quoted samples.
        checked: Of which counted (the delivered picture has detail at that time).
        within: Of the counted, those within :data:`REPRODUCE_BITS`.
        differing: ``(start_s, end_s)`` stretches of quoted time whose samples do not hold.
        median_bits: Median distance over the counted samples (``None`` when none counted).
        missing: The delivered file has no such stream.
    """

    key: str
    delivered_key: str = ""
    samples: int = 0
    checked: int = 0
    within: int = 0
    differing: list[tuple[float, float]] = field(default_factory=list)
    median_bits: float | None = None
    missing: bool = False

    @property
    def verdict(self) -> str:
        if self.missing:
            return NOT_REPRODUCED
        if self.within == self.checked:
            return REPRODUCED
        return NOT_REPRODUCED if self.within == 0 else PARTLY

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "delivered_key": self.delivered_key, "samples": self.samples,
                "checked": self.checked, "within": self.within, "verdict": self.verdict,
                "differing": [[round(a, 3), round(b, 3)] for a, b in self.differing],
                "median_bits": self.median_bits, "missing": self.missing}


@dataclass(slots=True)
class FileCheck:
    """The fingerprint check of one quoted file.

    Attributes:
        name: The quoted name.
        fingerprints: :data:`REPRODUCED`, :data:`PARTLY`, :data:`NOT_REPRODUCED` or :data:`NOT_CHECKED`.
        streams: One check per quoted stream.
        words: The result in one plain sentence naming the file and the evidence.
    """

    name: str
    fingerprints: str
    streams: list[StreamCheck] = field(default_factory=list)
    words: str = ""

    @property
    def differing_seconds(self) -> float:
        return float(sum(b - a for s in self.streams for a, b in s.differing))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "fingerprints": self.fingerprints, "words": self.words,
                "streams": [s.to_dict() for s in self.streams]}


def _spans(times_s: np.ndarray, bad: np.ndarray, step_s: float, end_s: float) -> list[tuple[float, float]]:
    """Stretches of consecutive bad samples, each from its first sample to one step past its last."""
    out: list[tuple[float, float]] = []
    idx = np.flatnonzero(bad)
    if idx.size == 0:
        return out
    breaks = np.flatnonzero(np.diff(idx) > 1)
    starts = np.concatenate(([idx[0]], idx[breaks + 1]))
    stops = np.concatenate((idx[breaks], [idx[-1]]))
    for a, b in zip(starts, stops, strict=True):
        lo = float(times_s[a])
        hi = float(times_s[b]) + step_s
        if end_s > lo:
            hi = min(hi, end_s)
        out.append((round(lo, 3), round(hi, 3)))
    return out


def _bits_at(qt: np.ndarray, qcodes: np.ndarray, delivered: StreamFingerprints
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per quoted time: the bit distance to the delivered code at that time (256 when there is
    none), whether there is one, and its position."""
    dt = np.asarray(delivered.times_ns, np.int64)
    if len(dt) == 0:
        z = np.zeros(len(qt), np.int64)
        return np.full(len(qt), 256, np.int64), np.zeros(len(qt), bool), z
    pos = np.clip(np.searchsorted(dt, qt), 0, len(dt) - 1)
    found = dt[pos] == qt
    bits = np.full(len(qt), 256, np.int64)
    if found.any():
        bits[found] = hamming(qcodes[found, 0], np.asarray(delivered.codes)[pos[found], 0])
    return bits, found, pos


def check_stream(quoted: ManifestStream, delivered: StreamFingerprints | None, *, quality_floor: int,
                 delivered_key: str = "", second: StreamFingerprints | None = None) -> StreamCheck:
    """Compare one quoted stream with the delivered stream's fingerprints, sample by sample.

    A quoted time the delivered stream has no sample at (footage shorter than quoted, another
    sampling grid) counts as a sample that does not hold. ``second``: the same stream decoded
    exactly (no decoding shortcuts): a sample holds when either decode reproduces it, since a
    vendor's decoder may have taken the shortcuts or not (bench/bench_audit.py).
    """
    q = quoted.fingerprints
    out = StreamCheck(key=quoted.key, delivered_key=delivered_key, samples=len(q))
    if delivered is None:
        out.missing = True
        return out
    qt = np.asarray(q.times_ns, np.int64)
    qcodes = np.asarray(q.codes)
    bits, found, pos = _bits_at(qt, qcodes, delivered)
    if second is not None:
        bits = np.minimum(bits, _bits_at(qt, qcodes, second)[0])
    # Featureless delivered pictures: counted neither way (unstable bits, never matched).
    counted = np.ones(len(qt), bool)
    counted[found] = delivered.quality[pos[found]] >= quality_floor
    holds = bits <= REPRODUCE_BITS
    out.checked = int(counted.sum())
    out.within = int((holds & counted).sum())
    if out.checked:
        out.median_bits = float(np.median(bits[counted]))
    step = 1.0 / quoted.fps if quoted.fps > 0 else 1.0
    end = max(float(q.duration_s), float(delivered.duration_s))
    out.differing = _spans(qt[counted] / NS_PER_S, ~holds[counted], step, end)
    return out


def match_streams(quoted: ManifestFile, delivered: Sequence[tuple[StreamInfo, StreamFingerprints]], *,
                  anonymized: bool) -> list[tuple[ManifestStream, tuple[StreamInfo, StreamFingerprints] | None]]:
    """Pair each quoted stream with the delivered stream it describes: by key, or (anonymised
    manifests name streams ``stream-N``, numbered from 1 in the order of their real keys' UTF-8
    bytes, as the export numbers them) by that position."""
    by_key = {info.key: (info, fp) for info, fp in delivered}
    ordered = sorted(delivered, key=lambda pair: pair[0].key.encode("utf-8", "surrogateescape"))
    out: list[tuple[ManifestStream, tuple[StreamInfo, StreamFingerprints] | None]] = []
    for s in quoted.streams:
        hit = by_key.get(s.key)
        if hit is None and anonymized and s.key.startswith("stream-") and s.key[7:].isdigit():
            j = int(s.key[7:]) - 1
            hit = ordered[j] if 0 <= j < len(ordered) else None
        out.append((s, hit))
    return out


def _words(name: str, streams: Sequence[StreamCheck], verdict: str) -> str:
    checked = sum(s.checked for s in streams)
    within = sum(s.within for s in streams)
    missing = [s.key for s in streams if s.missing]
    if missing:
        return (f"the quoted fingerprints of {name} are not those of its bytes: the delivered file has no "
                f"stream {', '.join(missing)}")
    if verdict == REPRODUCED:
        if not checked:
            return (f"{name}: no quoted sample could be checked (the delivered pictures are featureless); "
                    "nothing in them can be matched either")
        return f"the quoted fingerprints of {name} are those of its bytes ({within} of {checked} samples within " \
               f"{REPRODUCE_BITS} bits)"
    named = len(streams) > 1  # a recording's cameras: say which one differs
    spans = [f"{s.key + ' ' if named else ''}{a:g}-{b:g} s" for s in streams for a, b in s.differing]
    shown = ", ".join(spans[:6]) + (f" and {len(spans) - 6} more" if len(spans) > 6 else "")
    if verdict == NOT_REPRODUCED:
        return (f"the quoted fingerprints of {name} are not those of its bytes: {within} of {checked} samples "
                f"within {REPRODUCE_BITS} bits")
    return (f"the quoted fingerprints of {name} are only partly those of its bytes: {within} of {checked} "
            f"samples within {REPRODUCE_BITS} bits; differing at {shown}")


def check_file(quoted: ManifestFile, delivered: Sequence[tuple[StreamInfo, StreamFingerprints]], *,
               quality_floor: int, anonymized: bool = False,
               exact: Sequence[tuple[StreamInfo, StreamFingerprints]] = ()) -> FileCheck:
    """Check every quoted stream of one file against the delivered streams (and, given ``exact``,
    the same streams decoded exactly: see :func:`check_stream`)."""
    second = {info.key: fp for info, fp in exact}
    checks = [check_stream(s, None if hit is None else hit[1], quality_floor=quality_floor,
                           delivered_key="" if hit is None else hit[0].key,
                           second=None if hit is None else second.get(hit[0].key))
              for s, hit in match_streams(quoted, delivered, anonymized=anonymized)]
    verdicts = {c.verdict for c in checks}
    if not checks or verdicts == {REPRODUCED}:
        verdict = REPRODUCED
    elif verdicts == {NOT_REPRODUCED}:
        verdict = NOT_REPRODUCED
    else:
        verdict = PARTLY
    return FileCheck(name=quoted.name, fingerprints=verdict, streams=checks,
                     words=_words(quoted.name, checks, verdict))


def not_checked(name: str, why: str) -> FileCheck:
    """A file whose fingerprints could not be checked, and why (plain words)."""
    return FileCheck(name=name, fingerprints=NOT_CHECKED, words=f"the quoted fingerprints of {name} could not "
                     f"be checked: {why}")
