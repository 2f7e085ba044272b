"""Throughput fuzzing of the manifest reader, without Hypothesis's per-example overhead.

Uses the mutator of tests/reliability/test_hostile_manifests.py (bit flips, truncations,
inflated real count/length fields, wrong versions, swapped/duplicated sections,
splices...) in a plain ``random.Random`` loop for a fixed time, on real exports of a few
generated clips. Every case must raise ``ManifestError``; anything else is counted and
the first few are saved. Slow parses (> 50 ms CPU) are re-parsed to tell a slow input
from a garbage-collection or scheduling pause.

    python bench/bench_fuzz_manifest.py --seconds 120 --seed 1
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _bases(work: Path) -> list[bytes]:
    from overlap_desktop.config import load_config
    from overlap_desktop.core.index.indexer import index_paths
    from overlap_desktop.core.index.store import open_index
    from overlap_desktop.core.manifest.export import export_manifest
    from tests.footage import make_clip

    corpus = work / "corpus"
    for i in range(5):
        make_clip(corpus / f"clip_{i}.mp4", seed=100 + i, duration=6.0, fps=24.0, size=(160, 120),
                  canvas_hw=(600, 1800))
    index_paths([corpus], index=work / "index", config=load_config(environ={}))
    out = []
    with open_index(work / "index", create=False) as idx:
        for i, kw in enumerate([{"label": "Q3 kitchen teleop"}, {"label": "", "anonymize": True},
                                {"label": "Lieferung \u00e9t\u00e9 \u2014 \u6771\u4eac", "fps": 2.0},
                                {"label": "one file", "paths": [corpus / "clip_0.mp4"]}]):
            export_manifest(idx, work / f"base{i}.ovlm", **kw)  # type: ignore[arg-type]
            out.append((work / f"base{i}.ovlm").read_bytes())
    return out


def main() -> int:
    """Run the loop; print cases, outcomes and the slowest parses."""
    from overlap_desktop.core.manifest.parse import parse_manifest
    from overlap_desktop.errors import ManifestError
    from tests.reliability.test_hostile_manifests import mutate

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bases = _bases(Path(tmp))
    rng = random.Random(args.seed)
    cases = refused = unchanged = 0
    other: list[str] = []
    slow: list[tuple[float, str, bytes]] = []
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        kind, base, data = mutate(rng, bases)
        cases += 1
        if data == base:
            unchanged += 1
            continue
        c = time.process_time()
        try:
            parse_manifest(data)
            other.append(f"{kind}: accepted")
        except ManifestError:
            refused += 1
        except Exception:
            other.append(f"{kind}: {traceback.format_exc()}")
        dc = time.process_time() - c
        if dc > 0.05:
            slow.append((dc, kind, data))
    print(f"manifest fuzz loop: {cases} cases in {args.seconds:.0f} s ({cases / args.seconds:.0f}/s), "
          f"{refused} refused with ManifestError, {len(other)} other outcomes, {unchanged} unchanged")
    for dc, kind, data in sorted(slow, reverse=True)[:5]:
        again = []
        for _ in range(10):
            c = time.process_time()
            try:
                parse_manifest(data)
            except ManifestError:
                pass
            again.append(time.process_time() - c)
        print(f"  slow case ({kind}, {len(data)} bytes): {dc * 1000:.0f} ms CPU first, "
              f"{max(again) * 1000:.2f} ms max over 10 re-parses")
    for o in other[:3]:
        print("  OTHER OUTCOME:", o)
    return 1 if other else 0


if __name__ == "__main__":
    raise SystemExit(main())
