"""The delivery audit: the tolerance of the fingerprint check, and the CPU of audit + add.

Run from the repository root::

    python bench/bench_audit.py                      # both parts, real clips from ../shared/realdata
    python bench/bench_audit.py --part tolerance
    python bench/bench_audit.py --part cpu --clips DIR

``tolerance``: each clip is fingerprinted the way indexing does (decoder threads automatic, the
sampler's approximations on: no loop filter, a neighbour for an unused non-reference frame, luma
from the scaler) and again with other decoders' settings: 1 and 2 decoder threads, and an exact
RGB decode (what another PyAV, or a reader without the approximations, gives). The identity codes
at the same grid times are compared bit by bit. Beside them: the distance between a sample and the
one 1 s later in the same clip, and between samples of different clips, which the tolerance must
stay far below.

``cpu``: the buyer's two ways to take in a delivery, in this process (one worker), CPU seconds
(``time.process_time``, every thread of the process):

* ``index``: ``overlap index`` of the delivery alone (the baseline);
* ``audit + add``: ``overlap verify --audit --add --no-crops`` (one decode: bytes check, fingerprint
  check, the quote and the delivered footage screened against the library, then added to it);
* the same with the crop search of the delivered frames (``overlap verify --audit --add``), which
  hashes windows of the delivered frames the library's fingerprints cannot stand for.

The figure is ``audit+add / index``, in one run. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from overlap_desktop.config import load_config  # noqa: E402
from overlap_desktop.core.audit.reproduce import REPRODUCE_BITS, hamming  # noqa: E402
from overlap_desktop.core.audit.run import audit_delivery  # noqa: E402
from overlap_desktop.core.index.fingerprinting import fingerprint_item  # noqa: E402
from overlap_desktop.core.index.indexer import index_paths  # noqa: E402
from overlap_desktop.core.index.store import open_index  # noqa: E402
from overlap_desktop.core.ingest.readers.video import VideoReader  # noqa: E402
from overlap_desktop.core.manifest.export import export_manifest  # noqa: E402
from overlap_desktop.core.types import Variant  # noqa: E402

REALDATA = ROOT.parent / "shared" / "realdata" / "video"
CLIPS = ("chaplin.mp4", "nasa_13013.mp4", "rotate-buck-bunny.mp4", "trim-buck-bunny.webm", "sample.avi",
         "bt601.mov", "h265_bframes.mp4", "sample_av1.mp4")


def _codes(path: Path, *, threads: int, exact: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    cfg = load_config({"index.threads": threads}, environ={})
    reader = VideoReader(threads=threads, exact=exact)
    (_, fp) = fingerprint_item(path, reader, config=cfg, variants=(Variant(),), on_fraction=None, cancel=None)[0]
    return fp.times_ns, fp.codes[:, 0], fp.quality


def tolerance(clips: list[Path]) -> dict[str, Any]:
    settings = {"1 thread": (1, False), "2 threads": (2, False), "exact RGB decode": (0, True)}
    per: dict[str, list[int]] = {k: [] for k in settings}
    later: list[int] = []
    across: list[int] = []
    firsts: list[np.ndarray] = []
    for clip in clips:
        t0, c0, q0 = _codes(clip, threads=0, exact=False)
        ok = q0 >= 50
        for name, (threads, exact) in settings.items():
            t, c, _ = _codes(clip, threads=threads, exact=exact)
            common, i0, i1 = np.intersect1d(t0, t, return_indices=True)
            keep = ok[i0]
            per[name] += hamming(c0[i0][keep], c[i1][keep]).tolist()
        step = 4  # 1 s later on the 4 fps grid
        if len(c0) > step:
            later += hamming(c0[:-step][ok[:-step]], c0[step:][ok[:-step]]).tolist()
        firsts.append(c0[ok][: 40])
    for i in range(len(firsts)):
        for j in range(i + 1, len(firsts)):
            n = min(len(firsts[i]), len(firsts[j]))
            across += hamming(firsts[i][:n], firsts[j][:n]).tolist()

    def stats(x: list[int]) -> dict[str, float]:
        a = np.asarray(x or [0])
        return {"samples": len(x), "max": int(a.max()), "p99": float(np.percentile(a, 99)),
                "p50": float(np.percentile(a, 50)), "min": int(a.min()),
                f"over {REPRODUCE_BITS}": int((a > REPRODUCE_BITS).sum())}

    return {"clips": [c.name for c in clips], "against default indexing": {k: stats(v) for k, v in per.items()},
            "same clip 1 s later": stats(later), "different clips": stats(across)}


def cpu(clips: list[Path], owned: list[Path]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-audit-") as tmp:
        base = Path(tmp)
        delivery, lab_src = base / "delivery", base / "owned"
        delivery.mkdir()
        lab_src.mkdir()
        for c in clips:
            shutil.copy(c, delivery / c.name)
        for c in owned:
            shutil.copy(c, lab_src / c.name)
        one = {"index.workers": 1}
        index_paths([lab_src], index=base / "lab", config=load_config({**one, "index.path": str(base / "lab")},
                                                                        environ={}))
        vcfg = load_config({**one, "index.path": str(base / "vendor")}, environ={})
        index_paths([delivery], index=base / "vendor", config=vcfg)
        with open_index(base / "vendor", config=vcfg) as v:
            export_manifest(v, base / "quote.ovlm", config=vcfg, sign=False)
        shutil.copytree(base / "lab", base / "lab-audit")
        shutil.copytree(base / "lab", base / "lab-crops")
        # Baseline: indexing the delivery alone (files not yet in the page cache for neither: both read them).
        c0, w0 = time.process_time(), time.perf_counter()
        icfg = load_config({**one, "index.path": str(base / "alone")}, environ={})
        index_paths([delivery], index=base / "alone", config=icfg)
        index_cpu, index_wall = time.process_time() - c0, time.perf_counter() - w0
        acfg = load_config({**one, "index.path": str(base / "lab-audit")}, environ={})
        c0, w0 = time.process_time(), time.perf_counter()
        with open_index(base / "lab-audit", config=acfg) as idx:
            r = audit_delivery(base / "quote.ovlm", delivery, index=idx, config=acfg, add=True, crops=False,
                               state_dir=base / "state")
        audit_cpu, audit_wall = time.process_time() - c0, time.perf_counter() - w0
        ccfg = load_config({**one, "index.path": str(base / "lab-crops")}, environ={})
        c0 = time.process_time()
        with open_index(base / "lab-crops", config=ccfg) as idx:
            audit_delivery(base / "quote.ovlm", delivery, index=idx, config=ccfg, add=True, crops=True,
                           state_dir=base / "state2")
        crops_cpu = time.process_time() - c0
    return {"delivery": [c.name for c in clips], "owned": [c.name for c in owned], "audit ok": r.ok,
            "added": r.added, "index cpu s": round(index_cpu, 2), "index wall s": round(index_wall, 2),
            "audit+add cpu s": round(audit_cpu, 2), "audit+add wall s": round(audit_wall, 2),
            "ratio cpu": round(audit_cpu / index_cpu, 3),
            "with the crop search: audit+add cpu s": round(crops_cpu, 2),
            "with the crop search: ratio cpu": round(crops_cpu / index_cpu, 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=("tolerance", "cpu", "both"), default="both")
    ap.add_argument("--clips", type=Path, default=REALDATA, help="folder of video clips")
    ap.add_argument("--generate", type=float, default=0.0, metavar="SECONDS",
                    help="for the cpu part: generate 6 clips of this many seconds (320x240, 24 fps) instead")
    args = ap.parse_args()
    clips = [args.clips / n for n in CLIPS if (args.clips / n).exists()] or sorted(args.clips.glob("*.mp4"))
    gen = None
    if args.generate > 0:
        from tests.footage import make_clip

        gen = tempfile.TemporaryDirectory(prefix="bench-audit-clips-")
        clips = [make_clip(Path(gen.name) / f"take-{i:02d}.mp4", 40 + i, duration=args.generate, fps=24.0,
                           size=(320, 240)) for i in range(6)]
    out: dict[str, Any] = {}
    if args.part in ("tolerance", "both"):
        out["tolerance"] = tolerance(clips)
    if args.part in ("cpu", "both"):
        out["cpu"] = cpu(clips[: max(2, len(clips) - 2)], clips[-2:])
    print(json.dumps(out, indent=2))
    if gen is not None:
        gen.cleanup()


if __name__ == "__main__":
    main()
