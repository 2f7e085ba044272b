"""Synthetic manifests and indexes for the manifest, export and verify tests.

Fingerprints here are random but shaped like real ones (a regular time grid, quality
mostly over the floor, a static span); nothing is decoded, so these tests stay fast.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from overlap_desktop.core.manifest.encode import encode_manifest
from overlap_desktop.core.manifest.format import ManifestFile, ManifestStream
from overlap_desktop.core.types import Span, StreamFingerprints, Variant

ALGO = "test-algo"
PREP = "test-prep"


def synthetic_fp(seed: int, n: int = 40, *, fps: float = 1.0, variants: int = 1, t0_ns: int = 0,
                 static_every: int = 0) -> StreamFingerprints:
    """Fingerprints on a regular grid (``static_every`` > 0 repeats codes in runs, like a
    still camera)."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 256, (n, variants, 32), dtype=np.uint8)
    if static_every > 1:
        codes = np.repeat(codes[::static_every], static_every, axis=0)[:n]
    usable = rng.random(n) > 0.1
    step = int(round(1e9 / fps))
    return StreamFingerprints(
        times_ns=t0_ns + np.arange(n, dtype=np.int64) * step,
        quality=rng.integers(30, 101, n).astype(np.uint8), codes=codes,
        variants=(Variant(), Variant(mirrored=True), Variant(crop=0.88))[:variants],
        usable=usable, indeterminate=[Span(2.0, 4.5, "static")] if n > 5 else [],
        fps=fps, duration_s=n / fps)


def synthetic_files(count: int = 3, n: int = 40, *, seed: int = 0, streams: int = 1) -> list[ManifestFile]:
    files = []
    for i in range(count):
        rng = np.random.default_rng(seed * 1000 + i)
        files.append(ManifestFile(
            name=f"episodes/ep_{i:03d}.mp4", size=1000 + i * 7, sha256=rng.bytes(32).hex(),
            duration_s=n + 0.5,
            streams=[ManifestStream(key=f"v:{k}", fps=1.0, fingerprints=synthetic_fp(seed + 31 * i + k, n))
                     for k in range(streams)]))
    return files


def synthetic_manifest(count: int = 3, n: int = 40, *, seed: int = 0, streams: int = 1, **kw: object) -> bytes:
    kw.setdefault("label", "Q3 kitchen teleop")
    data, _ = encode_manifest(synthetic_files(count, n, seed=seed, streams=streams),
                              algo_id=ALGO, prep_id=PREP, **kw)  # type: ignore[arg-type]
    return data


def sparse_file(path: Path, size: int, marks: dict[int, bytes]) -> Path:
    """A file of ``size`` bytes that is mostly a hole, with ``marks`` written at offsets."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.truncate(size)
        for off, data in marks.items():
            fh.seek(off)
            fh.write(data)
    return path


def layout(data: bytes) -> dict[str, object]:
    """Section boundaries of a well-formed manifest (test helper; trusts its input).

    Returns:
        ``{"table": [(type, offset, length)], "meta_end": int, "entries": [(offset, length)],
        "boundaries": sorted offsets where a section, record or entry starts or ends}``.
    """
    import struct

    (nsect,) = struct.unpack_from("<I", data, 12)
    table = []
    off = 16 + 16 * nsect
    bounds = {0, 8, 10, 12, 16}
    for i in range(nsect):
        t, _v, _f, _r, ln = struct.unpack_from("<HHHHQ", data, 16 + 16 * i)
        table.append((t, off, ln))
        bounds.update({16 + 16 * i, off, off + ln})
        off += ln
    meta_off, meta_len = table[0][1], table[0][2]
    (nfiles,) = struct.unpack_from("<I", data, meta_off + 4)
    entries = []
    pos = table[1][1]
    for _ in range(nfiles):
        (elen,) = struct.unpack_from("<I", data, pos)
        entries.append((pos + 4, elen))
        bounds.update({pos, pos + 4, pos + 4 + elen})
        pos += 4 + elen
    return {"table": table, "meta_end": meta_off + meta_len, "entries": entries,
            "boundaries": sorted(b for b in bounds if b <= len(data))}


def reroot(data: bytes) -> bytes:
    """Recompute the stored Merkle root of a (possibly edited) manifest, so a test can
    check that a semantic rule refuses it on its own, not just the root."""
    from overlap_desktop.core.manifest.merkle import leaf_hash, root_from_leaf_hashes

    lay = layout(data)
    leaves = [leaf_hash(data[:lay["meta_end"]])]  # type: ignore[index]
    leaves += [leaf_hash(data[o:o + ln]) for o, ln in lay["entries"]]  # type: ignore[attr-defined]
    leaves += [leaf_hash(data[o:o + ln]) for _t, o, ln in lay["table"][2:-1]]  # type: ignore[index]
    return data[:-32] + root_from_leaf_hashes(leaves)
