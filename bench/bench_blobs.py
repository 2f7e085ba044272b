"""Size and speed of the index's codes blob encodings, on the streams of an existing index.

Reads every stream of the index at ``INDEX`` (read-only), then for each codes encoding
(schema 1's raw blob; schema 2's bit planes) measures the bytes per footage hour and the
CPU time to encode and to decode them, per footage hour (best of ``--repeat`` passes over
all streams; one core). Decoding is what `overlap compare` and shard sealing pay per
stream they load.

Usage::

    python bench/bench_size.py --dir /tmp/size     # makes /tmp/size/index-generated
    python bench/bench_blobs.py /tmp/size/index-generated

No assertions: this prints figures for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from overlap_desktop.core.index import blobs  # noqa: E402
from overlap_desktop.core.index.store import open_index  # noqa: E402
from overlap_desktop.core.types import Variant  # noqa: E402


def _raw(codes: np.ndarray, variants: tuple[Variant, ...]) -> bytes:
    return b"\x00" + np.ascontiguousarray(codes).tobytes()


def _best(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("index", type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args(argv)
    with open_index(a.index, create=False, readonly=True) as idx:
        streams = [(fp.codes, tuple(fp.variants), fp.duration_s) for _f, _k, fp in idx.streams()]
    hours = sum(d for _c, _v, d in streams) / 3600
    raw = sum(c.nbytes for c, _v, _d in streams)
    print(f"load average {os.getloadavg()[0]:.1f}; {len(streams)} streams, {hours * 3600:.0f} footage-s, "
          f"codes {raw / 1e6 / hours:.2f} MB/h raw")
    for name, enc in (("schema 1 raw", _raw), ("schema 2 bit planes", blobs.encode_codes)):
        encoded = [(enc(c, v), c.shape[0], len(v)) for c, v, _d in streams]
        for (b, n, nv), (c, _v, _d) in zip(encoded, streams):
            assert np.array_equal(blobs.decode_codes(b, n, nv), c), "round trip failed"
        size = sum(len(b) for b, _n, _nv in encoded)
        t_enc = _best(lambda enc=enc: [enc(c, v) for c, v, _d in streams], a.repeat)  # type: ignore[misc]
        t_dec = _best(lambda encoded=encoded: [blobs.decode_codes(*e) for e in encoded], a.repeat)  # type: ignore[misc]
        print(f"{name:20s}: {size / 1e6 / hours:.3f} MB/h ({size / raw:.3f} of raw), "
              f"encode {t_enc * 1e3 / hours:.0f} ms CPU per footage hour, decode {t_dec * 1e3 / hours:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
