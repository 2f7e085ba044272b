"""Ingest benchmarks (issue 19): decode only what is sampled, orientations from codes.

Run from the repository root::

    python bench/bench_ingest.py                 # everything
    python bench/bench_ingest.py throughput      # pure decode vs fingerprinting, 426x240 and 1280x720
    python bench/bench_ingest.py exact           # skipped decoding changes no code (every real file)
    python bench/bench_ingest.py orient          # bits lost by turning codes instead of pictures

All times are CPU seconds of this process (decoder threads included), never wall time:
the reference machine is shared, and CPU time is what another process cannot stretch.
Figures are printed; docs/scale.md quotes them. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import glob
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from overlap_desktop.core.ingest import orient, prep  # noqa: E402
from overlap_desktop.core.ingest.fingerprint import (  # noqa: E402
    _FrameHasher,
    fingerprint_stream,
    hamming,
    variants_for,
)
from overlap_desktop.core.ingest.readers.video import VideoReader  # noqa: E402
from overlap_desktop.core.types import Variant  # noqa: E402
from tests.footage import Scene, render_frames, write_video  # noqa: E402

REALDATA = ROOT.parent.parent / "shared" / "realdata"
SIZES = ((426, 240), (1280, 720))


def _cpu() -> float:
    """CPU seconds of this process, all threads (user + system)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _cpu_of(fn: Callable[[], object]) -> float:
    c = _cpu()
    fn()
    return _cpu() - c


def make_clips(root: Path, size: tuple[int, int], files: int, seconds: float) -> list[Path]:
    """``files`` H.264 clips (x264 veryfast, B-frames, 30 fps) of distinct panning scenes."""
    out = []
    for i in range(files):
        p = root / f"clip{size[1]}_{i}.mp4"
        scene = Scene(40 + i, canvas_hw=(1500, 6000), velocity=(120.0, 0.0))
        write_video(p, render_frames(scene, duration=seconds, fps=30.0, size=size), fps=30.0,
                    options={"preset": "veryfast", "crf": "23"})
        out.append(p)
    return out


def pure_decode(path: Path) -> None:
    """Every frame decoded (what a reader without a sampling rate does); no pixels converted."""
    reader = VideoReader()
    [info] = reader.streams(path)
    for _ in reader.frames(path, info):
        pass


def fingerprint(path: Path, *, skip: bool = True) -> None:
    """What `overlap index` does per file before writing: reader configured with the sampling
    rate (so unused frames are skipped), 4 samples/s, the default variants."""
    reader = VideoReader(sample_fps=4.0 if skip else None)
    [info] = reader.streams(path)
    fingerprint_stream(reader.frames(path, info), fps=4.0, variants=variants_for(), duration_s=info.duration_s)


def index_job(paths: list[Path], tmp: Path) -> None:
    """The whole `overlap index` job (sha256, SQLite, shards) into a fresh folder, default settings."""
    from overlap_desktop import api

    idx = tmp / "bench-index"
    shutil.rmtree(idx, ignore_errors=True)
    summary = api.index_paths(paths, index=idx, config=api.load_config({"index.path": str(idx),
                                                                        "index.workers": 1}))
    assert summary.indexed == len(paths) and not summary.failed, summary.failed


def bench_throughput(files: int, seconds: float, repeats: int) -> None:
    """Footage-seconds per CPU-second: pure decode vs fingerprinting, in one run on the same files."""
    print(f"## Throughput: {files} generated H.264 files of {seconds:.0f} s at 30 fps per size, "
          f"4 samples/s, default variants; CPU seconds, best of {repeats} interleaved runs")
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        for size in SIZES:
            clips = make_clips(tmp, size, files, seconds)
            footage = files * seconds
            jobs: dict[str, Callable[[], object]] = {
                "pure decode (every frame)": lambda c=clips: [pure_decode(x) for x in c],
                "fingerprint, full decode": lambda c=clips: [fingerprint(x, skip=False) for x in c],
                "fingerprint, sampled decode": lambda c=clips: [fingerprint(x) for x in c],
                "`overlap index` job (api.index_paths)": lambda c=clips: index_job(c, tmp),
            }
            best: dict[str, float] = {}
            for _ in range(repeats):
                for name, job in jobs.items():
                    best[name] = min(best.get(name, float("inf")), _cpu_of(job))
            base = footage / best["pure decode (every frame)"]
            print(f"### {size[0]}x{size[1]}: {footage:.0f} footage-seconds")
            for name, cpu in best.items():
                rate = footage / cpu
                print(f"{name:40s}: CPU {cpu:6.2f} s, {rate:7.1f} footage-s per CPU-s, "
                      f"ratio to pure decode {rate / base:.2f}x")


def _real_videos() -> list[Path]:
    pats = ("video/*", "vpdq/*.mp4")
    return [Path(p) for pat in pats for p in sorted(glob.glob(str(REALDATA / pat)))]


def bench_exact(extra: list[Path]) -> None:
    """Sampled decoding vs full decoding: the extra Hamming distance per sample (expected 0)."""
    print("## Sampled decoding changes no code: extra Hamming distance vs a full decode (4 samples/s, "
          "default variants)")
    worst = 0
    for p in _real_videos() + extra:
        fps = []
        for skip in (False, True):
            reader = VideoReader(sample_fps=4.0 if skip else None)
            try:
                [info] = reader.streams(p)
            except Exception as exc:  # a reference file this FFmpeg cannot open is reported, not fatal
                print(f"{p.name:36s}: not opened ({exc})")
                break
            fps.append((fingerprint_stream(reader.frames(p, info), fps=4.0, variants=variants_for(),
                                           duration_s=info.duration_s), info.extra.get("skippable_frames", 0)))
        if len(fps) < 2:
            continue
        (a, _), (b, skipped) = fps
        same = np.array_equal(a.times_ns, b.times_ns) and a.codes.shape == b.codes.shape
        d = int(hamming(a.codes, b.codes).max()) if same and len(a) else 0
        worst = max(worst, d if same else 256)
        print(f"{p.name:36s}: {len(a):4d} samples, same grid {same}, max extra bits {d}, "
              f"frames the decoder could skip {skipped}")
    print(f"worst extra distance: {worst} bits")


def _frames_for_orient() -> list[tuple[str, np.ndarray]]:
    """Working images: real photos and video frames from realdata, and generated footage."""
    from PIL import Image

    from tests.rig import RigEpisode

    out: list[tuple[str, np.ndarray]] = []
    for p in sorted(glob.glob(str(REALDATA / "pdq" / "*.jpg"))):
        out.append(("real", prep.to_work_image(np.asarray(Image.open(p).convert("RGB")))))
    for p in _real_videos():
        reader = VideoReader()
        try:
            [info] = reader.streams(p)
            for i, fr in enumerate(reader.frames(p, info)):
                if i % 12 == 0:
                    out.append(("real", fr.to_rgb(prep.WORK_SIZE, prep.WORK_SIZE)))
                if i > 96:
                    break
        except Exception:  # a reference file this FFmpeg cannot open
            continue
    for seed in range(1, 6):
        sc = Scene(seed)
        out += [("generated", prep.to_work_image(sc.frame(t, (320, 240)))) for t in (0.0, 4.0, 9.0)]
    for ep in (1, 2):
        rig = RigEpisode(7, ep)
        out += [("rig", prep.to_work_image(rig.frame(t, (320, 240)))) for t in (1.0, 5.0, 9.0)]
    return out


def bench_orient() -> None:
    """Hamming distance between turn(code(frame)) and code(turn(frame)) per orientation."""
    frames = _frames_for_orient()
    hasher = _FrameHasher([Variant()])
    print(f"## Orientations from codes: {len(frames)} frames; distance between the code turned on bits and "
          "the code of the turned picture (PDQ quality >= 50 only)")
    rows: dict[tuple[str, tuple[bool, int]], list[int]] = {}
    for kind, work in frames:
        base, q = hasher.hash_work(work)
        if q < 50:
            continue
        for o in orient.ORIENTATIONS[1:]:
            real = hasher.hash_work(np.ascontiguousarray(orient.apply_image(o, work)))[0]
            d = int(hamming(orient.orient_codes(base[0], o), real[0]))
            rows.setdefault((kind, o), []).append(d)
            rows.setdefault(("all", o), []).append(d)
    names = {(False, 90): "rotate 90 ccw", (False, 180): "rotate 180", (False, 270): "rotate 90 cw",
             (True, 0): "mirror (hflip)", (True, 90): "transpose", (True, 180): "vflip",
             (True, 270): "anti-transpose"}
    print("| orientation | frames | mean | median | p95 | max | (all / real / generated / rig means) |")
    print("|---|---|---|---|---|---|---|")
    for o in orient.ORIENTATIONS[1:]:
        a = np.array(rows[("all", o)])
        means = " / ".join(f"{np.mean(rows.get((k, o), [0])):.1f}" for k in ("all", "real", "generated", "rig"))
        print(f"| {names[o]} | {a.size} | {a.mean():.1f} | {np.median(a):.0f} | {np.percentile(a, 95):.0f} | "
              f"{a.max()} | {means} |")


def bench_mirror_variants() -> None:
    """Could the stored mirrored variants (half the default index) be turned from the upright ones?"""
    frames = _frames_for_orient()
    variants = variants_for()
    hasher = _FrameHasher(variants)
    pairs = [(i, variants.index(Variant(mirrored=True, crop=v.crop, edge=v.edge, edge_depth=v.edge_depth,
                                        offset=v.offset)))
             for i, v in enumerate(variants) if not v.mirrored]
    dist: dict[int, list[int]] = {i: [] for i, _ in pairs}
    for _, work in frames:
        codes, q = hasher.hash_work(work)
        if q < 50:
            continue
        for i, j in pairs:
            dist[i].append(int(hamming(orient.orient_codes(codes[i], (True, 0)), codes[j])))
    print("## Mirrored variants from the upright codes (bit-level mirror vs the stored mirrored code)")
    for i, _ in pairs:
        a = np.array(dist[i])
        v = variants[i]
        what = ("uncropped" if v.is_identity
                else f"crop {v.crop:g}" if v.crop < 1 else f"edge {v.edge} {v.edge_depth:g}")
        print(f"{what:18s}: {a.size} frames, mean {a.mean():.1f}, median {np.median(a):.0f}, "
              f"p95 {np.percentile(a, 95):.0f}, max {a.max()} bits")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", nargs="?", default="all", choices=("all", "throughput", "exact", "orient"))
    ap.add_argument("--files", type=int, default=4, help="generated files per size")
    ap.add_argument("--seconds", type=float, default=30.0, help="seconds per generated file")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    t = time.process_time()
    if args.what in ("all", "throughput"):
        bench_throughput(args.files, args.seconds, args.repeats)
    if args.what in ("all", "exact"):
        bench_exact([])
    if args.what in ("all", "orient"):
        bench_orient()
        bench_mirror_variants()
    print(f"(benchmark CPU time {time.process_time() - t:.0f} s)")


if __name__ == "__main__":
    main()
