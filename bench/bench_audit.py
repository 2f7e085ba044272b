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
* ``audit + add``: ``overlap verify --audit --add --no-crops --no-pixels`` (one decode: bytes check,
  fingerprint check, the quote and the delivered footage screened against the library, then added);
* the same with the pixel check (``--no-crops``): can't tell settled, and owned matches second-checked,
  with both sides' frames (it reads the owned library files matched);
* and with the crop search of the delivered frames too (``overlap verify --audit --add``, the default).

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


def _timed(fn: Any) -> tuple[float, float, Any]:
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    return time.process_time() - c0, time.perf_counter() - w0, out


def cpu(clips: list[Path], owned: list[Path], rounds: int) -> dict[str, Any]:
    """Each way ``rounds`` times, interleaved (a loaded machine slows them alike); the least CPU of each."""
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

        def conf(ix: Path) -> Any:
            return load_config({**one, "index.path": str(ix)}, environ={})

        index_paths([lab_src], index=base / "lab", config=conf(base / "lab"))
        index_paths([delivery], index=base / "vendor", config=conf(base / "vendor"))
        with open_index(base / "vendor", config=conf(base / "vendor")) as v:
            export_manifest(v, base / "quote.ovlm", config=conf(base / "vendor"), sign=False)
        runs: dict[str, list[tuple[float, float]]] = {"index": [], "audit+add": [], "audit+add, pixels": [],
                                                       "audit+add, pixels, crops": []}
        r: Any = None
        for k in range(rounds):
            alone = base / f"alone-{k}"
            c, w, _ = _timed(lambda: index_paths([delivery], index=alone, config=conf(alone)))  # noqa: B023
            runs["index"].append((c, w))
            for name, pixels, crops in (("audit+add", False, False), ("audit+add, pixels", True, False),
                                        ("audit+add, pixels, crops", True, True)):
                lab = shutil.copytree(base / "lab", base / f"lab-{name}-{k}")

                def audit(lab: Path = lab, crops: bool = crops, pixels: bool = pixels, k: int = k) -> Any:
                    with open_index(lab, config=conf(lab)) as idx:
                        return audit_delivery(base / "quote.ovlm", delivery, index=idx, config=conf(lab), add=True,
                                              crops=crops, pixels=pixels, state_dir=base / f"state-{k}-{lab.name}")

                c, w, r = _timed(audit)
                runs[name].append((c, w))
    best = {name: min(v) for name, v in runs.items()}
    return {"delivery": [c.name for c in clips], "owned": [c.name for c in owned], "rounds": rounds,
            "audit ok": bool(r.ok), "added": r.added, "same_as_quote": r.same_as_quote,
            **{f"{name} cpu s": round(b[0], 2) for name, b in best.items()},
            "ratio cpu": round(best["audit+add"][0] / best["index"][0], 3),
            "ratio cpu with pixels": round(best["audit+add, pixels"][0] / best["index"][0], 3),
            "ratio cpu with pixels and crops": round(best["audit+add, pixels, crops"][0] / best["index"][0], 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=("tolerance", "cpu", "both"), default="both")
    ap.add_argument("--clips", type=Path, default=REALDATA, help="folder of video clips")
    ap.add_argument("--rounds", type=int, default=3, help="cpu part: runs of each way (the least CPU counts)")
    ap.add_argument("--generate", type=float, default=0.0, metavar="SECONDS",
                    help="for the cpu part: generate 6 clips of this many seconds (320x240, 24 fps) instead")
    ap.add_argument("--owned-reencoded", action="store_true",
                    help="with --generate: the library owns the delivered owned clip re-encoded (other bytes), "
                         "not the same file (the pixel check then decodes both sides)")
    args = ap.parse_args()
    clips = [args.clips / n for n in CLIPS if (args.clips / n).exists()] or sorted(args.clips.glob("*.mp4"))
    gen = None
    owned_first = Path()
    if args.generate > 0:
        from tests.footage import make_clip

        gen = tempfile.TemporaryDirectory(prefix="bench-audit-clips-")
        clips = [make_clip(Path(gen.name) / f"take-{i:02d}.mp4", 40 + i, duration=args.generate, fps=24.0,
                           size=(320, 240)) for i in range(6)]
        if args.owned_reencoded:
            from tests.footage import Scene, render_frames, write_video

            (Path(gen.name) / "lib").mkdir()
            owned_first = write_video(Path(gen.name) / "lib" / "take-00.mp4",
                                      render_frames(Scene(40), duration=args.generate, fps=24.0, size=(320, 240)),
                                      fps=24.0, bit_rate=300_000)
    out: dict[str, Any] = {}
    if args.part in ("tolerance", "both"):
        out["tolerance"] = tolerance(clips)
    if args.part in ("cpu", "both"):
        # The delivery holds one owned file (the lab owns it and one file not delivered).
        delivered = clips[: max(2, len(clips) - 2)]
        first = owned_first if gen is not None and args.owned_reencoded else delivered[0]
        out["cpu"] = cpu(delivered, [first, clips[-1]], args.rounds)
    print(json.dumps(out, indent=2))
    if gen is not None:
        gen.cleanup()


if __name__ == "__main__":
    main()
