"""Where a cold comparison's bytes go: per shard table, the bytes read from storage and the pages
a search touches.

On a corpus built by ``bench/bench_compare.py --keep`` (its folder ``corpus-...``), this drops the
corpus's pages from the page cache, searches every shard with the codes ``compare()`` looks up for
the bench's 1-hour offer (upright and the three turned copies), and prints the wall and CPU time of
the search alone, the bytes read, and per table (``off``, ``low``, ``perm``, ``codes``,
``frame_idx``...) the bytes the page cache then holds (util-linux ``fincore``). For the first shard
it also counts the distinct 4 KiB pages and 2 MiB folios each table's gathers touch against the
table's size, and the bytes the search actually needs from it. Usage::

    python bench/bench_cold_pages.py DIR/corpus-2000h-v8-s8000000-f1

No timed assertions: this prints figures for bench/RESULTS.md.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import bench_compare as bc  # noqa: E402

from overlap_desktop.core.index.arrays import expand_ranges  # noqa: E402
from overlap_desktop.core.index.plan import QueryPlan  # noqa: E402
from overlap_desktop.core.index.shard_tables import perm_rows  # noqa: E402
from overlap_desktop.core.index.shards import Shard  # noqa: E402
from overlap_desktop.core.match.candidates import query_codes  # noqa: E402
from overlap_desktop.core.match.orientations import QUERY_ORIENTATIONS, turn_queries  # noqa: E402
from overlap_desktop.core.match.types import QueryStream  # noqa: E402


def offer_codes(corpus: Path) -> np.ndarray:
    """The codes a comparison with orientations looks up for the bench's 1-hour offer."""
    info = json.loads((corpus / "corpus.json").read_text())
    q, _ = bc.make_query(info["streams"], info["variants"])
    qs = [QueryStream("offer.mp4", 3600.0, "v:0", q)]
    parts = [query_codes(qs), query_codes(turn_queries(qs, QUERY_ORIENTATIONS))]
    return np.concatenate([p[0] for p in parts if p is not None])


def cached_by_table(dirs: list[Path]) -> dict[str, tuple[int, int]]:
    """Per table name: (bytes in the page cache, bytes on disk), summed over the shards."""
    out: dict[str, tuple[int, int]] = {}
    if not shutil.which("fincore"):
        return out
    for d in dirs:
        files = sorted(d.glob("*.npy"))
        res = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", *map(str, files)],
                             capture_output=True, text=True, check=False).stdout.split()
        for f, b in zip(files, res):
            c, t = out.get(f.stem, (0, 0))
            out[f.stem] = (c + int(b), t + f.stat().st_size)
    return out


def touched(shard: Shard, plan: QueryPlan) -> list[tuple[str, int, int, int, int, float, float]]:
    """Per table: pages touched / pages (4 KiB), folios touched / folios (2 MiB), MB needed, MB size.

    Follows the lookup of ``Shard.candidates``: every row of each probed bucket is counted as read
    from ``low`` (the binary search of larger buckets reads a few of them, on the same pages)."""
    width = shard.chunks[0][1]
    pbits = int(shard.meta["prefix_bits"])
    lbits = 8 * width - pbits
    off, low, perm = shard._table("off"), shard._table("low"), shard._table("perm")
    nperm = int(shard.meta.get("perm_bytes", 4))
    uchunk, _, _, _ = plan.unique_probes()
    pre, want = plan.bucket_keys(pbits, lbits, low.dtype)
    b0 = np.take(off, pre).astype(np.int64)
    cnt = np.take(off, pre + 1).astype(np.int64) - b0
    seg, pos = expand_ranges(b0 + uchunk * shard.count, cnt)
    matched = pos[np.take(low, pos) == np.take(want, seg)]
    rows = perm_rows(perm, matched, nperm)
    out = []
    for name, idx, item, size in (("off", np.r_[pre, pre + 1], 4, off.nbytes), ("low", pos, 1, low.nbytes),
                                  ("perm", matched, nperm, perm.nbytes), ("codes", rows, 32, shard.count * 32)):
        p4, p2 = (np.unique(idx * item // pg).size for pg in (4096, 2 << 20))
        out.append((name, p4, -(-size // 4096), p2, -(-size // (2 << 20)), idx.size * item / 1e6, size / 1e6))
    return out


def main(argv: list[str] | None = None) -> int:
    corpus = Path((argv or sys.argv[1:])[0])
    dirs = sorted(corpus.glob("shard-*"))
    codes = offer_codes(corpus)
    dropped = bc.drop_pages(corpus)
    r0 = bc._read_bytes()
    w0, c0 = time.perf_counter(), time.process_time()
    plan = QueryPlan.make(codes, Shard.open(dirs[0]).chunks)
    hits = 0
    for d in dirs:
        shard = Shard.open(d)
        hits += len(shard.search(plan, max_distance=bc.MatchParams().seed_distance))
        shard.close()
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    print(f"{corpus.name}: {len(dirs)} shards, {dropped['bytes'] / 1e9:.2f} GB dropped; cold search of "
          f"{codes.shape[0]} codes: wall {wall:.2f} s cpu {cpu:.2f} s, {hits} hits, read "
          f"{(bc._read_bytes() - r0) / 1e6:.0f} MB, peak RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB, load {os.getloadavg()[0]:.1f}")
    for name, (c, t) in sorted(cached_by_table(dirs).items(), key=lambda kv: -kv[1][1]):
        print(f"  {name:12s} read {c / 1e6:8.0f} MB of {t / 1e6:8.0f} MB")
    shard = Shard.open(dirs[0])
    print(f"first shard ({shard.count} rows, format {shard.version}): {plan.unique_probes()[0].size} distinct probes")
    for name, p4, n4, p2, n2, need, size in touched(shard, plan):
        print(f"  {name:6s} 4 KiB pages {p4:7d} of {n4:7d} ({p4 / n4:4.0%})  2 MiB folios {p2:4d} of {n2:4d} "
              f"({p2 / n2:4.0%})  needs {need:6.2f} MB of {size:6.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
