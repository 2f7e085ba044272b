"""Indexing benchmarks and the measurements behind the variant defaults.

Run from the repository root::

    python bench/bench_index.py                 # everything
    python bench/bench_index.py throughput      # decode vs decode+sample+prep+hash (ratio)
    python bench/bench_index.py size            # fingerprint bytes per footage hour per preset
    python bench/bench_index.py variants        # bit distances: crops vs nearest rung, unrelated
    python bench/bench_index.py scale           # serial vs --workers 2 vs a 2-worker Dask cluster

Figures are printed; docs/architecture.md and bench/RESULTS.md quote them. Nothing here
asserts a time (performance is not a test).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from overlap_desktop.core.ingest.fingerprint import (  # noqa: E402
    DEFAULT_EDGE_LADDER,
    PRESET_LADDERS,
    fingerprint_stream,
    prep_and_hash_image,
    variants_for,
)
from overlap_desktop.core.ingest.frames import scale_rgb  # noqa: E402
from overlap_desktop.core.ingest.pdq_batch import hamming  # noqa: E402
from overlap_desktop.core.ingest.readers.video import VideoReader  # noqa: E402
from overlap_desktop.core.types import Variant  # noqa: E402
from tests.footage import Scene, render_frames, write_video  # noqa: E402

CODE_BYTES = 32
#: Per-sample bytes besides the codes: int64 time + uint8 quality + bool usable.
SAMPLE_OVERHEAD = 10


# ----------------------------------------------------------------------------- throughput


def make_720p_clip(path: Path, seconds: float) -> Path:
    scene = Scene(7, canvas_hw=(1500, 6000), velocity=(120.0, 0.0))
    return write_video(path, render_frames(scene, duration=seconds, fps=30.0, size=(1280, 720)),
                       fps=30.0, options={"preset": "veryfast", "crf": "23"})


def _timed(fn) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """(wall seconds, CPU seconds of this process incl. decoder threads)."""
    w, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w, time.process_time() - c


def pure_decode(path: Path) -> None:
    reader = VideoReader()
    [info] = reader.streams(path)
    for _ in reader.frames(path, info):
        pass


def index_one(path: Path, variants: tuple[Variant, ...], fps: float = 4.0) -> None:
    reader = VideoReader()
    [info] = reader.streams(path)
    fingerprint_stream(reader.frames(path, info), fps=fps, variants=variants, duration_s=info.duration_s)


def bench_throughput(seconds: float = 60.0, repeats: int = 3) -> None:
    """Pure decode vs the whole indexing pipeline on the same file, interleaved.

    The CPU-time ratio is the stable figure on a shared machine (other processes
    stretch wall time of whichever run they overlap); both are printed.
    """
    with tempfile.TemporaryDirectory() as tmp:
        clip = make_720p_clip(Path(tmp) / "bench720.mp4", seconds)
        print(f"## Throughput: {seconds:.0f} s synthetic 1280x720 H.264 30 fps, 4 samples/s, "
              f"best of {repeats} interleaved runs")
        runs: dict[str, list[tuple[float, float]]] = {"decode": []}
        presets = ("fast", "balanced", "thorough")
        for _ in range(repeats):
            runs["decode"].append(_timed(lambda: pure_decode(clip)))
            for preset in presets:
                v = variants_for(preset=preset)
                runs.setdefault(preset, []).append(_timed(lambda v=v: index_one(clip, v)))
            # The whole `overlap index` job: sha256, SQLite commit and shard sealing included.
            runs.setdefault("index_paths", []).append(_timed(lambda: full_index(clip, Path(tmp))))
        dw = min(r[0] for r in runs["decode"])
        dc = min(r[1] for r in runs["decode"])
        print(f"pure decode                          : wall {dw:6.2f} s ({seconds / dw:5.1f}x realtime), "
              f"CPU {dc:6.2f} s")
        for preset in presets:
            w = min(r[0] for r in runs[preset])
            c = min(r[1] for r in runs[preset])
            n = len(variants_for(preset=preset))
            print(f"decode+sample+prep+hash {preset:9s}({n:2d}) : wall {w:6.2f} s ({seconds / w:5.1f}x realtime), "
                  f"CPU {c:6.2f} s; ratio to pure decode: wall {dw / w:.2f}x, CPU {dc / c:.2f}x")
        w = min(r[0] for r in runs["index_paths"])
        c = min(r[1] for r in runs["index_paths"])
        print(f"api.index_paths, fast preset (full job) : wall {w:6.2f} s ({seconds / w:5.1f}x realtime), "
              f"CPU {c:6.2f} s; ratio to pure decode: wall {dw / w:.2f}x, CPU {dc / c:.2f}x")


def full_index(clip: Path, tmp: Path) -> None:
    """Index ``clip`` into a fresh index folder with default settings, like `overlap index`."""
    import shutil

    from overlap_desktop import api

    idx = tmp / "bench-index"
    shutil.rmtree(idx, ignore_errors=True)
    summary = api.index_paths([clip], index=idx, config=api.load_config({"index.path": str(idx)}))
    assert summary.indexed == 1 and not summary.failed, summary.failed


# ----------------------------------------------------------------------------- scale-out


def make_scale_corpus(root: Path, files: int, seconds: float) -> Path:
    """``files`` 1280x720 H.264 clips of ``seconds`` each, the same for every engine.

    Rendering 720p scenes is slow, so two sources are made (2 s of rendered motion looped to
    ``seconds``) and copied under ``files`` names: every file is decoded in full all the same.
    """
    import shutil

    root.mkdir(parents=True, exist_ok=True)
    sources = []
    for k in range(min(2, files)):
        scene = Scene(100 + k, canvas_hw=(1500, 6000), velocity=(120.0, 0.0))
        frames = list(render_frames(scene, duration=2.0, fps=30.0, size=(1280, 720)))
        loop = [frames[i % len(frames)] for i in range(int(seconds * 30))]
        sources.append(write_video(root / f"clip{k:02d}.mp4", loop, fps=30.0,
                                   options={"preset": "veryfast", "crf": "23"}))
    for i in range(len(sources), files):
        shutil.copy(sources[i % len(sources)], root / f"clip{i:02d}.mp4")
    return root


def _index_with(corpus: Path, tmp: Path, name: str, *flags: str) -> tuple[float, float]:
    """Run `overlap index corpus FLAGS` in a fresh process and index: (wall, CPU seconds).

    CPU counts the `overlap` process and its worker processes (reaped children), not a
    Dask cluster's workers (see :func:`_cluster_cpu`).

    A separate `overlap` process, as a user runs it: worker processes start from the
    small CLI entry point, not from this script (which imports the footage generator).
    """
    import json
    import os
    import shutil
    import subprocess

    idx = tmp / f"ix-{name}"
    shutil.rmtree(idx, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    import resource

    t = time.perf_counter()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, "-m", "overlap_desktop", "index", str(corpus), "--index", str(idx), "--json",
                          *flags], capture_output=True, text=True, env=env, check=False)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter() - t
    summary = json.loads(out.stdout or "{}")
    assert out.returncode == 0 and summary.get("indexed") == len(list(corpus.glob("*.mp4"))), out.stderr[-2000:]
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def _cluster_cpu(client) -> float:  # type: ignore[no-untyped-def]
    """CPU seconds used so far by the cluster's worker processes (and this process: the scheduler)."""
    import resource

    def cpu() -> float:
        import psutil

        t = psutil.Process().cpu_times()
        return float(t.user + t.system)

    me = resource.getrusage(resource.RUSAGE_SELF)
    return sum(client.run(cpu).values()) + me.ru_utime + me.ru_stime


def _round_trip(engine, tmp: Path, n: int = 40) -> float:  # type: ignore[no-untyped-def]
    """Mean seconds for one file to go through ``engine`` and back when the file costs nothing.

    The job names a file that does not exist, so the worker only stats it and answers:
    what is left is dispatch, transport of job and answer, and the writer's polling.
    """
    from overlap_desktop.config import load_config
    from overlap_desktop.core.index.fingerprinting import FileJob

    config = load_config({"index.path": str(tmp / "unused")})
    job = FileJob(str(tmp / "no-such-file.mp4"), "video", 0, 0, config, (Variant(),))
    t = time.perf_counter()
    for _ in range(n):
        engine.submit(job)
        while not engine.wait(1.0):
            pass
    return (time.perf_counter() - t) / n


def bench_scale(files: int = 16, seconds: float = 60.0, rounds: int = 2, corpus_dir: Path | None = None) -> None:
    """Serial vs --workers 2 vs a LocalCluster of 2 single-threaded worker processes, same files.

    Each run is a separate `overlap index` process indexing the same files into a fresh
    index (start-up, sha256, commits and shard sealing included), so the speed-ups are of
    the whole job as a user sees it. Every run uses the default settings: serial lets FFmpeg
    pick its decoder threads (about 1.1 cores of work), each of N pool workers gets 1/N of
    the cores. Rounds are interleaved; each round's speed-ups are ratios of runs made
    seconds apart, so the spread over rounds shows how much other load on a shared machine
    moved them, and the best wall time of each kind is reported too. The Dask cluster is
    started once and not timed: a cluster is long-lived; the per-run cost of using it
    (connecting, shipping jobs and results) is in the figure. ``corpus_dir`` reuses (or
    keeps) the generated clips between invocations.
    """
    import os

    import distributed

    from overlap_desktop.core.index.parallel import ProcessEngine, cluster_engine

    def load() -> str:
        return f"{os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "n/a"

    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        t = time.perf_counter()
        corpus = corpus_dir or tmp / "corpus"
        if len(list(corpus.glob("*.mp4"))) != files:
            make_scale_corpus(corpus, files, seconds)
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        print(f"## Scale-out: {files} files of {seconds:.0f} s 1280x720 H.264 30 fps (generated in "
              f"{time.perf_counter() - t:.0f} s), default preset, fresh index per run, best of {rounds} "
              f"interleaved rounds; {cores} cores")
        lc = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                      host="127.0.0.1", local_directory=str(tmp))
        try:
            runs = [("serial (--workers 1)", ("--workers", "1")),
                    ("--workers 2", ("--workers", "2")),
                    ("Dask LocalCluster, 2 workers", ("--cluster", lc.scheduler_address))]
            walls: dict[str, list[float]] = {name: [] for name, _ in runs}
            cpus: dict[str, list[float]] = {name: [] for name, _ in runs}
            client = distributed.Client(lc, set_as_default=False)
            for r in range(rounds):
                for name, flags in runs:
                    before = load()
                    c0 = _cluster_cpu(client) if "--cluster" in flags else 0.0
                    wall, cpu = _index_with(corpus, tmp, f"r{r}", *flags)
                    cpu += (_cluster_cpu(client) - c0) if "--cluster" in flags else 0.0
                    walls[name].append(wall)
                    cpus[name].append(cpu)
                    print(f"  round {r + 1}: {name:30s} wall {wall:6.1f} s, CPU {cpu:6.1f} s "
                          f"(1-min load {before} -> {load()})")
            client.close()
            serial = min(walls[runs[0][0]])
            serial_cpu = min(cpus[runs[0][0]])
            footage_s = files * seconds
            for name, _ in runs:
                w, c = min(walls[name]), min(cpus[name])
                per_round = sorted(s / x for s, x in zip(walls[runs[0][0]], walls[name]))
                ratios = ", ".join(f"{x:4.2f}" for x in per_round)
                print(f"{name:30s}: best wall {w:6.1f} s ({footage_s / w:5.1f}x realtime), speed-up over serial "
                      f"{serial / w:4.2f}x (best vs best); per round, sorted {ratios} "
                      f"(median {float(np.median(per_round)):4.2f}x); CPU {c:6.1f} s ({c / serial_cpu:4.2f}x serial's)")
            pool = ProcessEngine(2)
            try:
                _round_trip(pool, tmp, 4)  # start the processes first
                pool_rt = _round_trip(pool, tmp)
            finally:
                pool.close()
            dask = cluster_engine(lc.scheduler_address)
            try:
                _round_trip(dask, tmp, 4)
                dask_rt = _round_trip(dask, tmp)
            finally:
                dask.close()
            per_file = serial / files
            print(f"scheduler overhead per file (round trip of a file that costs nothing): worker processes "
                  f"{pool_rt * 1e3:.1f} ms, Dask {dask_rt * 1e3:.1f} ms; {per_file:.1f} s of work per file here "
                  f"(Dask: {100 * dask_rt / per_file:.1f}% of it)")
        finally:
            lc.close()


# ----------------------------------------------------------------------------- size


def bench_size() -> None:
    print("## Fingerprint bytes per footage hour (4 samples/s; codes + 10 B/sample of time/quality)")
    configs = [
        ("identity only", variants_for(crop_ladder=(), dihedral="none", default_edge=False)),
        ("fast (default)", variants_for(preset="fast")),
        ("fast, no mirror", variants_for(preset="fast", dihedral="none")),
        ("fast + --crop-edges bottom", variants_for(preset="fast", crop_edges=("bottom",),
                                                    edge_ladder=EDGE_LADDER)),
        ("fast + --dihedral all", variants_for(preset="fast", dihedral="all")),
        ("balanced", variants_for(preset="balanced")),
        ("balanced + --crop-edges bottom,top", variants_for(preset="balanced", crop_edges=("bottom", "top"),
                                                            edge_ladder=EDGE_LADDER)),
        ("thorough", variants_for(preset="thorough")),
    ]
    for name, v in configs:
        per_hour = 4 * 3600 * (len(v) * CODE_BYTES + SAMPLE_OVERHEAD)
        print(f"{name:38s}: {len(v):3d} codes/sample -> {per_hour / 1e6:6.2f} MB/hour")
    print(f"manifest (identity at 1 sample/s)     : {3600 * (CODE_BYTES + SAMPLE_OVERHEAD) / 1e3:6.1f} kB/hour")


# ----------------------------------------------------------------------------- variants


def _crop_centre(img: np.ndarray, keep: float) -> np.ndarray:
    h, w = img.shape[:2]
    ch, cw = round(h * keep), round(w * keep)
    y0, x0 = (h - ch) // 2, (w - cw) // 2
    return scale_rgb(np.ascontiguousarray(img[y0:y0 + ch, x0:x0 + cw]), w, h)


def _crop_edge(img: np.ndarray, side: str, depth: float) -> np.ndarray:
    h, w = img.shape[:2]
    n = round((h if side in ("top", "bottom") else w) * depth)
    sl = {"top": img[n:], "bottom": img[: h - n], "left": img[:, n:], "right": img[:, : w - n]}[side]
    return scale_rgb(np.ascontiguousarray(sl), w, h)


def _crop_window(img: np.ndarray, keep: float, anchor: tuple[float, float]) -> np.ndarray:
    """Keep ``keep`` of each dimension at ``anchor`` (fractions of the slack), scaled back up."""
    h, w = img.shape[:2]
    ch, cw = round(h * keep), round(w * keep)
    y0, x0 = round((h - ch) * anchor[1]), round((w - cw) * anchor[0])
    return scale_rgb(np.ascontiguousarray(img[y0:y0 + ch, x0:x0 + cw]), w, h)


def _letterbox(img: np.ndarray, frac: float) -> np.ndarray:
    h, w = img.shape[:2]
    n = round(h * frac)
    out = np.zeros_like(img)
    out[n:h - n] = scale_rgb(img, w, h - 2 * n)
    return out


#: The index.edge_ladder default.
EDGE_LADDER = DEFAULT_EDGE_LADDER


def bench_variants(n_scenes: int = 4, per_scene: int = 10) -> None:
    size = (640, 360)
    frames = []
    for seed in range(1, n_scenes + 1):
        scene = Scene(seed, canvas_hw=(900, 2400))
        frames += [scene.frame(float(t), size) for t in np.linspace(0.0, 19.0, per_scene)]
    centre = sorted(set(PRESET_LADDERS["thorough"]) | {0.97, 0.95, 0.90, 0.80, 0.60})
    variants = variants_for(preset="thorough", crop_ladder=tuple(centre), crop_edges=("bottom", "top"),
                            edge_ladder=EDGE_LADDER, dihedral="mirror")
    corpus = np.stack([prep_and_hash_image(f, variants)[0] for f in frames])  # (F, V, 32)
    ident = corpus[:, 0]

    def report(name: str, fn, allowed) -> None:  # type: ignore[no-untyped-def]
        q = np.stack([prep_and_hash_image(fn(f))[0][0] for f in frames])
        idx = [i for i, v in enumerate(variants) if allowed(v)]
        d = hamming(corpus[:, idx], q[:, None])  # (F, len(idx))
        best = d.min(axis=1)
        d_id = hamming(ident, q)
        print(f"{name:28s} | vs original {np.median(d_id):5.0f} | nearest allowed rung median {np.median(best):4.0f}"
              f"  p90 {np.percentile(best, 90):4.0f}  max {best.max():4.0f}")

    print(f"## Bit distances ({len(frames)} frames of {n_scenes} synthetic scenes, 640x360); "
          "'nearest allowed rung' = min over the rungs listed")
    print("manipulation                 | median       | ")
    report("re-encode-like identity", lambda x: x, lambda v: v == Variant())
    report("downscale to 426x240", lambda x: scale_rgb(scale_rgb(x, 426, 240), 640, 360),
           lambda v: v == Variant())
    report("letterbox 15% bars", lambda x: _letterbox(x, 0.15), lambda v: v == Variant())
    gray = np.array([0.299, 0.587, 0.114], np.float32)
    report("grayscale", lambda x: np.repeat((x.astype(np.float32) @ gray).astype(np.uint8)[:, :, None], 3, 2),
           lambda v: v == Variant())
    report("hflip vs mirrored variant", lambda x: np.ascontiguousarray(x[:, ::-1]),
           lambda v: v == Variant(mirrored=True))
    for ladder_name, ladder in (("fast", PRESET_LADDERS["fast"]), ("balanced", PRESET_LADDERS["balanced"]),
                                ("thorough", PRESET_LADDERS["thorough"])):
        allowed_c = set(ladder) | {1.0}
        for keep in (0.97, 0.95, 0.92, 0.90, 0.85, 0.80, 0.75, 0.70, 0.65, 0.60):
            report(f"centre keep {keep:.2f} [{ladder_name}]", (lambda k: lambda x: _crop_centre(x, k))(keep),
                   lambda v, a=allowed_c: v.edge is None and v.offset is None and not v.mirrored and v.crop in a)
    thorough = set(variants_for(preset="thorough"))
    for anchor in ((0.1, 0.15), (0.0, 0.0), (0.3, 0.7), (0.6, 0.4)):
        report(f"off-centre 0.85 @ {anchor} [thorough]", (lambda a: lambda x: _crop_window(x, 0.85, a))(anchor),
               lambda v: v in thorough and not v.mirrored)
    for ladder_name, ladder in (("default b0.08", ()), ("edges 0.06..0.24/6", (0.06, 0.12, 0.18, 0.24)),
                                ("edges default 3% steps", EDGE_LADDER)):
        for side, depth in (("bottom", 0.05), ("bottom", 0.08), ("bottom", 0.10), ("bottom", 0.15),
                            ("bottom", 0.18), ("top", 0.10), ("top", 0.13)):
            ok = set(ladder) | ({0.08} if side == "bottom" else set())
            report(f"{side} {depth:.2f} [{ladder_name}]", (lambda s, d: lambda x: _crop_edge(x, s, d))(side, depth),
                   lambda v, s=side, a=ok: (v.edge == s and v.edge_depth in a and not v.mirrored) or v == Variant())
    # Unrelated footage: nearest code over every variant of every other scene's frames.
    per = per_scene
    un, same = [], []
    for i in range(len(frames)):
        for j in range(len(frames)):
            if i == j:
                continue
            dmin = int(hamming(corpus[j], ident[i]).min())
            (same if i // per == j // per else un).append(dmin)
    print(f"unrelated scenes (min over {len(variants)} variants): p1 {np.percentile(un, 1):.0f}  min {min(un)}  "
          f"median {np.median(un):.0f}")
    print(f"same scene, other view       : p1 {np.percentile(same, 1):.0f}  min {min(same)}  "
          f"median {np.median(same):.0f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", nargs="*", default=["throughput", "size", "variants"],
                    choices=["throughput", "size", "variants", "scale"])
    ap.add_argument("--seconds", type=float, default=60.0, help="length of the 720p throughput clip")
    # 16 x 60 s by default: worker start-up is paid once per run, so a job of minutes measures the
    # engines rather than the start-up (an 8 x 20 s job gave 1.49-1.61x; bench/RESULTS.md).
    ap.add_argument("--files", type=int, default=16, help="clips in the scale-out corpus")
    ap.add_argument("--clip-seconds", type=float, default=60.0, help="length of each scale-out clip")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds of the scale-out runs")
    ap.add_argument("--corpus", type=Path, default=None, help="folder for the scale-out clips (kept and reused)")
    args = ap.parse_args(argv)
    if "size" in args.what:
        bench_size()
    if "variants" in args.what:
        bench_variants()
    if "throughput" in args.what:
        bench_throughput(args.seconds)
    if "scale" in args.what:
        bench_scale(args.files, args.clip_seconds, args.rounds, args.corpus)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
