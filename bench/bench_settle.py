"""How the pixel settle check (core/audit/settle.py) tells scripted twins from copies.

Two parts:

``pairs``: offered files written from the verdict suites' footage against the owned file they
look like, along the line that is true for a copy (identity, 0.5x, mirrored) or the line a
twin lines up on (the same motion, same time). Every pair goes through ``settle_stretches``
exactly as at delivery (digest check, decode, 64x64 luma, measures, decision), and the bench
prints the measures and the verdict. Pairs are split into a **tuning** set (the rendered
MuJoCo rig and the generated scripted rig, whose figures chose the thresholds) and a
**held-out** set nobody tuned on (real fixed cameras, the held-out car park and NASA
footage: later moments of the same view against copies).

``suites``: the verdict suites (tests/verdict_suites.py) compared as the quote does; every
stretch the report leaves open (ambiguous, weak, below the floor) is settled against its
owned candidates, and per offer the seconds the quote left can't tell that end owned / new /
can't tell are printed with whether that is true (a look-alike owned is a false owned).

Usage::

    python bench/bench_settle.py [pairs] [suites] [crops] [--keep DIR] [--suite NAME ...] [--realdata DIR]

``crops``: the query-side crop search (core/audit/crops.py) on real footage (a fixed camera and
the held-out car park): copies cut to a 95% corner window, an 85% corner window, 16:9 cut to 4:3
and shrunk into other footage, each with a later moment cut the same way; the quote's owned
seconds beside the crop search's, for a library indexed with the fast and the balanced ladder.

No assertions (tests/unit/audit/test_settle*.py and tests/integration/test_audit_settle*.py assert).
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from overlap_desktop import api  # noqa: E402
from overlap_desktop.core.audit.settle import (  # noqa: E402
    OpenStretch,
    Settlement,
    settle_offered,
    settle_stretches,
    stretch_from_segment,
)
from overlap_desktop.core.types import Variant  # noqa: E402
from tests import manipulations as m  # noqa: E402
from tests import verdict_suites as vs  # noqa: E402
from tests.manipulations import Piece  # noqa: E402

DATA = ROOT / "tests" / "data"
#: CPU seconds spent settling the suites' can't-tell stretches, stretches settled, offered seconds in them.
SETTLE_CPU = [0.0, 0, 0.0]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


#: (set, name, truth, owned scene, owned (start, secs), offered pieces, transform, line speed, owned start,
#:  variant, size, fps)
PairSpec = tuple[str, str, str, Any, tuple[float, float], list[Piece], Any, float, float, Variant,
                 tuple[int, int], float]


def pair_specs(realdata: Path | None = None) -> list[PairSpec]:
    """Tuning pairs (rendered and generated rigs) and held-out pairs (real footage); with ``realdata``
    (the shared real clips' folder, holding video/chaplin.mp4) a second held-out set measured only
    after every threshold was fixed."""
    specs: list[PairSpec] = []
    mj = {n: vs.RealClip(str(DATA / "mujoco" / f"{n}.mp4")) for n in
          ("t1-l1", "t1-l2", "t1-l3", "t1-l4", "t1-l11", "t1-l12", "t2-l1", "t2-l2", "t2-l11", "t3-l1")}
    size, fps, ident = (160, 120), 10.0, Variant()

    def mjp(name: str, truth: str, own: str, off: str, *, tf: Any = None, speed: float = 1.0, start: float = 0.0,
            secs: float = 12.0, var: Variant = ident) -> None:
        specs.append(("tuning", name, truth, mj[own], (0.0, 12.0),
                      [Piece(mj[off], start, secs, speed=speed, master_fps=fps)], tf, speed, start, var, size, fps))

    mjp("mj twin l11 (block moved 6 cm)", "new", "t1-l1", "t1-l11")
    mjp("mj twin l12 (block moved 5 cm)", "new", "t1-l1", "t1-l12")
    mjp("mj twin t2-l11", "new", "t2-l1", "t2-l11")
    mjp("mj twin t1-l3 (blocks elsewhere)", "new", "t1-l1", "t1-l3")
    mjp("mj twin t2-l2", "new", "t2-l1", "t2-l2")
    mjp("mj copy t1-l1", "owned", "t1-l1", "t1-l1")
    mjp("mj copy t1-l2 graded", "owned", "t1-l2", "t1-l2", tf=m.colorgrade(sat=1.0))
    mjp("mj copy t1-l1 saturated", "owned", "t1-l1", "t1-l1", tf=m.colorgrade())
    mjp("mj copy t2-l1 0.5x from 3 s", "owned", "t2-l1", "t2-l1", speed=0.5, start=3.0)
    mjp("mj copy t1-l1 mirrored", "owned", "t1-l1", "t1-l1", tf=m.hflip, var=Variant(mirrored=True))
    rig, rs, rf = vs._ep, vs.RIG_SIZE, vs.RIG_FPS
    for name, truth, own, off, tf, var in (
            ("rig twin l5", "new", (1, 1), (1, 5), None, ident), ("rig twin l7", "new", (1, 1), (1, 7), None, ident),
            ("rig twin l6", "new", (2, 1), (2, 6), None, ident), ("rig twin l8", "new", (1, 1), (1, 8), None, ident),
            ("rig copy graded", "owned", (1, 1), (1, 1), m.colorgrade(sat=1.0), ident),
            ("rig copy saturated", "owned", (1, 1), (1, 1), m.colorgrade(), ident),
            ("rig copy mirrored", "owned", (2, 1), (2, 1), m.hflip, Variant(mirrored=True))):
        specs.append(("tuning", name, truth, rig(*own), (0.0, vs.RIG_DUR),
                      [Piece(rig(*off), 0.0, vs.RIG_DUR, master_fps=rf)], tf, 1.0, 0.0, var, rs, rf))
    room = vs.RealClip(str(DATA / "fixedcam" / "room-people.mp4"))
    table = vs.RealClip(str(DATA / "fixedcam" / "table-bottles.mp4"))
    car = vs.RealClip(str(DATA / "heldout" / "carpark.mp4"))
    nasa = vs.RealClip(str(DATA / "video" / "nasa_13013.mp4"))
    for name, truth, scene, own, off_start, secs, tf, var, size_, fps_ in (
            ("room copy", "owned", room, (0.0, 40.0), 18.0, 12.0, None, ident, (384, 216), 10.0),
            ("room copy mirrored", "owned", room, (0.0, 40.0), 22.0, 9.6, m.hflip, Variant(mirrored=True),
             (384, 216), 10.0),
            ("room later moment", "not owned", room, (0.0, 40.0), 44.0, 12.0, None, ident, (384, 216), 10.0),
            ("table copy", "owned", table, (0.0, 20.0), 6.0, 12.0, None, ident, (320, 180), 15.0),
            ("table later moment", "not owned", table, (0.0, 20.0), 24.0, 12.0, None, ident, (320, 180), 15.0),
            ("carpark copy", "owned", car, (0.0, 15.0), 1.0, 12.0, None, ident, (384, 216), 12.5),
            ("carpark copy graded", "owned", car, (0.0, 15.0), 2.0, 12.0, m.colorgrade(sat=1.0), ident,
             (384, 216), 12.5),
            ("carpark later moment", "not owned", car, (0.0, 15.0), 16.0, 7.0, None, ident, (384, 216), 12.5),
            ("nasa copy", "owned", nasa, (0.0, 13.0), 0.5, 12.0, None, ident, (320, 180), 25.0),
            ("nasa copy mirrored", "owned", nasa, (0.0, 13.0), 2.0, 9.6, m.hflip, Variant(mirrored=True),
             (320, 180), 25.0)):
        # A later moment is laid on the owned file's line from 1 s (what a line through
        # near-identical frames would claim).
        line_start = off_start if truth == "owned" else 1.0
        specs.append(("held-out", name, truth, scene, own, [Piece(scene, off_start, secs, master_fps=fps_)], tf,
                      1.0, line_start, var, size_, fps_))
    # Copies cut a little and scaled back up (at the identity, as a match under a percent lands), and
    # cut between crop rungs (matched on the nearest rung): true copies that must never read new.
    room_ = vs.RealClip(str(DATA / "fixedcam" / "room-people.mp4"))
    table_ = vs.RealClip(str(DATA / "fixedcam" / "table-bottles.mp4"))
    for label, scene, own, start, size_, fps_ in (("mj", mj["t1-l1"], (0.0, 12.0), 0.0, size, fps),
                                                  ("room", room_, (0.0, 31.0), 18.0, (384, 216), 10.0),
                                                  ("table", table_, (0.0, 19.0), 6.0, (320, 180), 15.0)):
        for keep, rung in ((0.995, 1.0), (0.99, 1.0), (0.98, 1.0), (0.89, 0.89), (0.87, 0.89), (0.86, 0.89),
                           (0.91, 0.92), (0.80, 0.82)):
            var = Variant() if rung == 1.0 else Variant(crop=rung)
            specs.append(("cuts", f"{label} copy cut to {keep:.1%} on {rung:.0%}", "owned", scene, own,
                          [Piece(scene, start, 12.0, master_fps=fps_)], m.crop_centre(keep), 1.0, start, var, size_,
                          fps_))
    specs.append(("cuts", "mj twin l11 cut to 87.0% on 89%", "new", mj["t1-l1"], (0.0, 12.0),
                  [Piece(mj["t1-l11"], 0.0, 12.0, master_fps=fps)], m.crop_centre(0.87), 1.0, 0.0,
                  Variant(crop=0.89), size, fps))
    chaplin = realdata / "video" / "chaplin.mp4" if realdata is not None else None
    if chaplin is not None and chaplin.exists():
        film = vs.RealClip(str(chaplin))
        for name, truth, off_start, tf, var in (
                ("chaplin copy", "owned", 0.5, None, ident),
                ("chaplin copy graded", "owned", 0.5, m.colorgrade(), ident),
                ("chaplin copy mirrored", "owned", 0.5, m.hflip, Variant(mirrored=True)),
                ("chaplin later moment", "not owned", 5.0, None, ident)):
            line_start = off_start if truth == "owned" else 0.5
            specs.append(("held-out 2", name, truth, film, (0.0, 9.5), [Piece(film, off_start, 4.0, master_fps=25.0)],
                          tf, 1.0, line_start, var, (320, 180), 25.0))
    return specs


def run_pairs(root: Path, realdata: Path | None = None) -> list[tuple[PairSpec, Settlement]]:
    """Write every pair's two files and settle the offered one along its line."""
    out = []
    for i, spec in enumerate(pair_specs(realdata)):
        where, name, truth, scene, (own_start, own_secs), pieces, tf, speed, line_start, var, size, fps = spec
        owned, offered = root / f"owned-{i}.mp4", root / f"offered-{i}.mp4"
        if not owned.exists():
            m.write_edit(owned, [Piece(scene, own_start, own_secs, master_fps=fps)], out_fps=fps, size=size)
        if not offered.exists():
            m.write_edit(offered, pieces, out_fps=fps, size=size, transform=tf, **vs.COPY_ENC)
        dur = sum(p.duration for p in pieces)
        st = OpenStretch("v:0", 0.0, dur, owned, "v:0", digest(owned), line_start, speed, var, "bench")
        out.append((spec, settle_stretches(offered, [st])[0]))
    return out


def print_pairs(results: Sequence[tuple[PairSpec, Settlement]]) -> None:
    print(f"{'set':10s} {'pair':36s} {'truth':9s} {'bg max':>6s} {'2nd':>5s} {'>=14':>4s} {'unexpl':>6s} "
          f"{'px med':>6s} {'moving':>6s} {'agree':>5s}  verdict")
    for spec, st in results:
        f = st.figures
        print(f"{spec[0]:10s} {spec[1]:36s} {spec[2]:9s} {f.get('background_largest', 0):6.1f} "
              f"{f.get('background_second', 0):5.1f} {f.get('background_cells_over', 0):4.0f} "
              f"{f.get('background_unexplained', 0):6.0f} {f.get('pixel_median', 0):6.1f} "
              f"{f.get('moving_share', 0):6.3f} {f.get('motion_agree', 0):5.2f}  {st.verdict}")
    for where in ("tuning", "cuts", "held-out", "held-out 2"):
        rows = [(s, st) for s, st in results if s[0] == where]
        if not rows:
            continue
        right = sum(1 for s, st in rows if st.verdict == s[2] or (s[2] == "not owned" and st.verdict != "owned"))
        false_owned = sum(1 for s, st in rows if s[2] != "owned" and st.verdict == "owned")
        false_new = sum(1 for s, st in rows if s[2] == "owned" and st.verdict == "new")
        print(f"{where}: {right}/{len(rows)} settled as true; {false_owned} falsely owned; {false_new} copies "
              f"falsely new; {sum(1 for _, st in rows if st.verdict == 'cant_tell')} left can't tell")


def _moved(spans: Sequence[tuple[float, float]], rows: Sequence[tuple[str, float, float, str, str]]
           ) -> dict[str, float]:
    """Seconds of ``spans`` each settled verdict covers (a second once, the first verdict over it)."""
    ends = {"owned": 0.0, "new": 0.0, "cant_tell": 0.0}
    for a, b in spans:
        t = a
        for _s, x, y, verdict, _why in sorted(rows, key=lambda r: r[1]):
            lo, hi = max(t, x), min(b, y)
            if hi > lo:
                ends[verdict] += hi - lo
                t = hi
        ends["cant_tell"] += 0.0
    return ends


def run_suite(name: str, root: Path) -> list[tuple[str, str | None, dict[str, float], dict[str, float],
                                                   dict[str, float]]]:
    """Compare one verdict suite as the quote does; settle the seconds it leaves can't tell (every
    line behind them, core/audit/settle_lines.py), and, as a second opinion, its counted segments.

    Per offer: the quote's seconds, where its can't-tell seconds end, where its owned seconds end.
    """
    from overlap_desktop.core.audit.settle_lines import open_lines, open_stretches
    from overlap_desktop.core.index.store import open_index
    from overlap_desktop.core.manifest.parse import read_manifest

    suite = vs.SUITES[name]()
    report = vs.run(suite, root)
    cfg = api.load_config({"index.path": str(root / "lab-index")})
    rows = []
    with open_index(root / "lab-index", create=False) as index:
        needs = {f.query_file for f in report.files if f.cant_tell}
        lines = open_lines(read_manifest(root / "offer.ovlm"), index, config=cfg, names=needs)
        for f in report.files:
            offer = root / "offer" / Path(f.query_file).name
            quote = {"owned": f.matched_seconds, "new": f.new_seconds, "cant_tell": f.cant_tell_seconds}
            stretches = open_stretches(f, lines.get(f.query_file, []), index)
            cant = [(c.start_s, c.end_s) for c in f.cant_tell]
            t0 = time.process_time()
            ct_end = _moved(cant, settle_offered(settle_stretches(offer, stretches))) if stretches else {}
            SETTLE_CPU[0] += time.process_time() - t0
            SETTLE_CPU[1] += len(stretches)
            SETTLE_CPU[2] += sum(st.offered_end_s - st.offered_start_s for st in stretches)
            counted = [stretch_from_segment(s, owned_sha256=index.indexed_sha256(s.corpus_file), why_open="counted")
                       for s in f.segments]
            owned_spans = [(s.query_start, s.query_end) for s in f.segments]
            own_end = _moved(owned_spans, settle_offered(settle_stretches(offer, counted))) if counted else {}
            rows.append((Path(f.query_file).stem, suite.offers[Path(f.query_file).stem].copy_of, quote, ct_end,
                         own_end))
    return rows


def union_seconds(spans: Sequence[tuple[float, float]]) -> float:
    """Seconds covered by the union of ``spans`` (windows of one offer find overlapping lines)."""
    total, end = 0.0, -1e300
    for a, b in sorted(spans):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def run_crops(root: Path, preset: str) -> None:
    """Copies cut past the quote's reach, and look-alikes cut the same way: the quote's owned seconds
    against the crop search's (core/audit/crops.py), with the tap's CPU beside indexing the offers."""
    import numpy as np

    from overlap_desktop.core.audit.crops import crop_tap, search_crops
    from overlap_desktop.core.index.store import open_index
    from overlap_desktop.core.ingest.readers import reader_for

    room = vs.RealClip(str(DATA / "fixedcam" / "room-people.mp4"))
    car = vs.RealClip(str(DATA / "heldout" / "carpark.mp4"))
    nasa = vs.RealClip(str(DATA / "video" / "nasa_13013.mp4"))
    size = (384, 216)

    def cut43(img: np.ndarray) -> np.ndarray:
        h, w = img.shape[:2]
        cw = int(round(h * 4 / 3)) // 2 * 2
        return np.ascontiguousarray(img[:, (w - cw) // 2:(w - cw) // 2 + cw])

    edits: dict[str, Any] = {"corner 95%": m.crop_window(0.95, (0.0, 0.0)), "corner 85%": m.crop_window(0.85, (1, 1)),
                             "16:9 cut to 4:3": cut43, "picture in picture": "pip"}
    lib, off = root / "lib", root / "offer"
    if not (lib / "room.mp4").exists():
        m.write_edit(lib / "room.mp4", [Piece(room, 0.0, 40.0, master_fps=10.0)], out_fps=10.0, size=size)
        m.write_edit(lib / "car.mp4", [Piece(car, 0.0, 15.0, master_fps=12.5)], out_fps=12.5, size=size)
    offers: dict[str, tuple[str | None, Path]] = {}
    for edit, tf in edits.items():
        for what, scene, start, secs, fps, truth in (("room copy", room, 10.0, 20.0, 10.0, "room"),
                                                     ("room later", room, 45.0, 20.0, 10.0, None),
                                                     ("car park copy", car, 1.0, 13.0, 12.5, "car"),
                                                     ("car park later", car, 16.0, 13.0, 12.5, None)):
            name = f"{what}, {edit}"
            path = off / (name.replace(" ", "-").replace(",", "").replace(":", "x").replace("%", "") + ".mp4")
            if not path.exists():
                m.write_edit(path, [Piece(scene, start, secs, master_fps=fps)], out_fps=fps, size=size,
                             transform=m.picture_in_picture(nasa) if tf == "pip" else tf, options={"crf": "28"})
            offers[name] = (truth, path)
    idx, vendor = root / f"idx-{preset}", root / f"vendor-idx-{preset}"
    shutil.rmtree(vendor, ignore_errors=True)
    cfg = api.load_config({"index.path": str(idx), "index.preset": preset})
    if not idx.exists():
        api.index_paths([lib], index=idx, config=cfg)
    t0 = time.process_time()
    if not vendor.exists():
        api.index_paths([off], index=vendor, config=api.load_config({"index.path": str(vendor)}))
    index_cpu = time.process_time() - t0
    with api.open_index(vendor) as v:
        api.export_manifest(v, root / "offer.ovlm", label="crops")
    report = api.compare(root / "offer.ovlm", idx, config=cfg)
    quote = {Path(f.query_file).name: f.matched_seconds for f in report.files}
    tap = crop_tap(cfg)
    t0 = time.process_time()
    for _truth, path in offers.values():
        reader = reader_for(path)
        for info in reader.streams(path):
            tap.begin(path.name, path, info)
            for frame in reader.frames(path, info):
                tap.frame(frame)
            tap.end()
    tap_cpu = time.process_time() - t0
    t0 = time.process_time()
    for _truth, path in offers.values():  # the decode alone, which the audit's pass pays anyway
        reader = reader_for(path)
        for info in reader.streams(path):
            for _frame in reader.frames(path, info):
                pass
    tap_cpu -= time.process_time() - t0
    t0 = time.process_time()
    with open_index(idx, config=cfg, create=False) as ix:
        found = search_crops(tap, ix, config=cfg)
    search_cpu = time.process_time() - t0
    print(f"\ncrop search, library indexed with --preset {preset} ({len(tap.windows)} windows a sample)")
    print(f"{'offer':40s} {'truth':6s} {'quote owned s':>13s} {'crop search owned s':>19s}")
    for name, (truth, path) in offers.items():
        segs = found.get(path.name, [])
        secs = union_seconds([(x.query_start, x.query_end) for x in segs])
        wrong = [x for x in segs if truth is None or truth not in Path(x.corpus_file).stem]
        print(f"{name:40s} {truth or '-':6s} {quote.get(path.name, 0.0):13.1f} {secs:19.1f}"
              + ("  FALSE" if wrong else ""))
    print(f"CPU: tap beyond decoding {tap_cpu:.1f} s, search {search_cpu:.1f} s, indexing the same offers "
          f"{index_cpu:.1f} s (tap / indexing {tap_cpu / max(index_cpu, 1e-9):.2f})")


def run_crop_suites(root: Path, names: Sequence[str]) -> None:
    """The crop search over the verdict suites' offers: no look-alike may be found, a copy only in its source."""
    from overlap_desktop.core.audit.crops import crop_tap, search_crops
    from overlap_desktop.core.index.store import open_index
    from overlap_desktop.core.ingest.readers import reader_for

    for name in names:
        suite = vs.SUITES[name]()
        vs.build(suite, root / name)
        cfg = api.load_config({"index.path": str(root / name / "lab-index")})
        tap = crop_tap(cfg)
        for path in sorted((root / name / "offer").glob("*.mp4")):
            reader = reader_for(path)
            for info in reader.streams(path):
                tap.begin(path.stem, path, info)
                for frame in reader.frames(path, info):
                    tap.frame(frame)
                tap.end()
        with open_index(root / name / "lab-index", config=cfg, create=False) as index:
            found = search_crops(tap, index, config=cfg)
        false = [o for o, segs in found.items() if suite.offers[o].copy_of is None
                 or {Path(x.corpus_file).stem for x in segs} != {suite.offers[o].copy_of}]
        copies = [o for o in found if o not in false]
        print(f"crop search on suite {name}: {len(found)} offers with a crop found, {len(copies)} copies in their "
              f"source, {len(false)} false {sorted(false)}")


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("parts", nargs="*", default=["pairs", "suites", "crops"])
    ap.add_argument("--keep", type=Path)
    ap.add_argument("--suite", action="append", default=None)
    ap.add_argument("--realdata", type=Path, help="the shared real clips' folder (video/chaplin.mp4): a second "
                    "held-out set of pairs")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        if "pairs" in args.parts:
            (root / "pairs").mkdir(parents=True, exist_ok=True)
            print_pairs(run_pairs(root / "pairs", args.realdata))
        if "crops" in args.parts:
            for preset in ("fast", "balanced"):
                (root / "crops").mkdir(parents=True, exist_ok=True)
                run_crops(root / "crops", preset)
            run_crop_suites(root, args.suite or ["scripted", "mujoco", "short", "heldout"])
        if "suites" in args.parts:
            for name in args.suite or ["scripted", "mujoco", "short", "heldout"]:
                _print_suite(name, run_suite(name, root / name))


def _print_suite(name: str, rows: Sequence[tuple[str, str | None, dict[str, float], dict[str, float],
                                                  dict[str, float]]]) -> None:
    print(f"\nsuite {name}: the quote's owned / new / can't tell seconds; where its can't-tell seconds end "
          "after settling (owned / new / still can't tell); where its owned seconds end (second opinion)")
    false_owned = false_new = twins_new = twins_open = copies_owned = copies_open = 0.0
    for offer, copy_of, q, ct, own in rows:
        f = lambda d, k: d.get(k, 0.0)  # noqa: E731
        ct_open = q["cant_tell"] - f(ct, "owned") - f(ct, "new")
        flag = ""
        if copy_of is None:
            false_owned += f(ct, "owned")
            twins_new += f(ct, "new")
            twins_open += ct_open
            flag = "  FALSE OWNED" if f(ct, "owned") else ""
        else:
            false_new += f(ct, "new")
            copies_owned += f(ct, "owned")
            copies_open += ct_open
            flag = "  FALSE NEW" if f(ct, "new") else ""
        print(f"  {offer:30s} {'copy' if copy_of else 'look-alike':10s} quote {q['owned']:5.1f}/{q['new']:5.1f}/"
              f"{q['cant_tell']:5.1f}  can't tell -> {f(ct, 'owned'):5.1f}/{f(ct, 'new'):5.1f}/{ct_open:5.1f}  "
              f"owned -> {f(own, 'owned'):5.1f}/{f(own, 'new'):5.1f}/{f(own, 'cant_tell'):5.1f}{flag}")
    print(f"  settling so far: {SETTLE_CPU[0]:.1f} s CPU for {SETTLE_CPU[1]} stretches holding "
          f"{SETTLE_CPU[2]:.0f} offered seconds")
    print(f"  can't-tell seconds of look-alikes: {twins_new:.1f} s settled new, {twins_open:.1f} s left, "
          f"{false_owned:.1f} s falsely owned; of copies: {copies_owned:.1f} s settled owned, {copies_open:.1f} s "
          f"left, {false_new:.1f} s falsely new")


_: Callable[..., Any] = main
if __name__ == "__main__":
    main()
