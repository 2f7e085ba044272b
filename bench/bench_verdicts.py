"""Verdicts on every suite, and whether the chance figure holds (issue 33).

Builds (or reuses, with ``--keep DIR``) the footage of the same-rig suite
(tests/integration/test_same_rig.py) and of the verdict suites (tests/verdict_suites.py:
scripted repeats, short real pieces, held-out real footage), compares each offer with its
library and prints

1. per suite: seconds falsely counted as owned (look-alikes), true copies found (attributed to
   their source only) and the new seconds left on them, "can't tell" seconds, and whether the
   report keeps the verdict rule (``verdict_problems``); near twins (``limit-*``, scripted repeats
   as close to an owned episode as a re-encode) are listed apart, as a measured limit;
2. the calibration table: every candidate line the matcher verified between look-alike offers
   and the library (unrelated or same-rig footage; nothing filtered by chance), and for chance
   thresholds 1e-3, 1e-6, 1e-9 how many of them fell at or under the threshold against how many
   the figure predicts (the figure is an expected count per offered stream searched, so the
   prediction is threshold x streams searched). Lines to a scripted twin (the same motion
   replayed) are counted apart: a replay is no coincidence, and the ambiguity rule, not the
   figure, keeps them from being owned. ``--before`` adds the same table under the evidence
   model before issue 33 (normal tail always, figure capped at 1e-15, no penalty for few moments or
   large distances).

Usage::

    python bench/bench_verdicts.py [--keep DIR] [--before] [--distances]

``--distances`` prints the mean PDQ distance between scripted layouts of one trajectory (the
figures quoted in tests/verdict_suites.py). No assertions: tests/integration/test_verdicts.py
and test_same_rig.py assert; this prints.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from overlap_desktop import api  # noqa: E402
from overlap_desktop.core.index.store import open_index  # noqa: E402
from overlap_desktop.core.manifest.parse import read_manifest  # noqa: E402
from overlap_desktop.core.match.corpora import IndexCorpus  # noqa: E402
from overlap_desktop.core.match.offer import manifest_queries  # noqa: E402
from overlap_desktop.core.match.pipeline import compare_streams  # noqa: E402
from overlap_desktop.core.match.segments import MatchParams  # noqa: E402
from overlap_desktop.core.match.verdicts import verdict_problems  # noqa: E402
from tests import manipulations as m  # noqa: E402
from tests import verdict_suites as vs  # noqa: E402

THRESHOLDS = (1e-3, 1e-6, 1e-9)


def same_rig(root: Path) -> tuple[Path, Path, dict[str, str | None]]:
    """The same-rig suite's footage (as tests/integration/test_same_rig.py writes it)."""
    from tests.integration import test_same_rig as sr

    lib, offer, manifest = root / "library", root / "offer", root / "offer.ovlm"
    truth: dict[str, str | None] = {n: None for n in sr.NEGATIVES}
    truth.update({n: c.master for n, c in sr.CONTROLS.items()})
    if not manifest.exists():
        m.write_recordings(lib, {**sr.LIB, **sr.LONG}, duration=sr.DUR, fps=sr.FPS, size=sr.SIZE, **sr.ENC)
        for name, pieces in sr.NEGATIVES.items():
            m.write_edit(offer / f"{name}.mp4", pieces, out_fps=sr.FPS, size=sr.SIZE, **sr.ENC)
        for name, ctl in sr.CONTROLS.items():
            m.write_edit(offer / f"{name}.mp4", ctl.pieces, out_fps=sr.FPS, size=sr.SIZE, transform=ctl.transform,
                         **sr.ENC)
        for src in sorted(sr.FIXEDCAM.glob("*.mp4")) if sr.FIXEDCAM.is_dir() else []:
            sr._real_fixedcam(src, lib, offer)
        for d, src in ((root / "lab-index", lib), (root / "vendor-index", offer)):
            api.index_paths([src], index=d, config=api.load_config({"index.path": str(d)}))
        with api.open_index(root / "vendor-index") as v:
            api.export_manifest(v, manifest, label="same-rig offer")
    for src in sorted(sr.FIXEDCAM.glob("*.mp4")) if sr.FIXEDCAM.is_dir() else []:
        truth[f"neg-real-{src.stem}-later"] = None
        truth[f"ctl-real-{src.stem}"] = f"real-{src.stem}-first"
    return manifest, root / "lab-index", truth


def verdict_table(name: str, report: Any, truth: dict[str, str | None]) -> dict[str, float]:
    negs = [f for f in report.files if truth.get(Path(f.query_file).stem, "?") is None
            and not Path(f.query_file).stem.startswith("limit-")]
    copies = [f for f in report.files if truth.get(Path(f.query_file).stem) not in (None, "?")]
    limits = [f for f in report.files if Path(f.query_file).stem.startswith("limit-")]
    false_s = sum(f.matched_seconds for f in negs)
    found = [f for f in copies if f.segments and {Path(s.corpus_file).stem for s in f.segments}
             == {truth[Path(f.query_file).stem]}]
    problems = verdict_problems(report)
    print(f"--- {name}: {len(negs)} look-alikes, {len(copies)} true copies")
    print(f"  falsely owned: {false_s:.1f} s; look-alikes: {sum(f.new_seconds for f in negs):.1f} s new, "
          f"{sum(f.cant_tell_seconds for f in negs):.1f} s can't tell, "
          f"{sum(f.indeterminate_seconds for f in negs):.1f} s not judged")
    print(f"  copies found: {len(found)}/{len(copies)}; on copies: {sum(f.matched_seconds for f in copies):.1f} s "
          f"owned, {sum(f.new_seconds for f in copies):.1f} s new, {sum(f.cant_tell_seconds for f in copies):.1f} s "
          f"can't tell, {sum(f.indeterminate_seconds for f in copies):.1f} s not judged")
    for f in negs:
        if f.matched_seconds > 0:
            print(f"    FALSELY OWNED {Path(f.query_file).stem}: {f.matched_seconds:.1f} s "
                  f"({', '.join(f'{Path(s.corpus_file).stem} at {s.mean_distance:.1f} bits' for s in f.segments)})")
    for f in copies:
        if f not in found or f.new_seconds > 0:
            print(f"    {Path(f.query_file).stem}: owned {f.matched_seconds:.1f} s, new {f.new_seconds:.1f} s, "
                  f"can't tell {f.cant_tell_seconds:.1f} s, sources {[Path(s.corpus_file).stem for s in f.segments]}")
    for f in limits:
        print(f"  limit {Path(f.query_file).stem}: owned {f.matched_seconds:.1f} s "
              f"({', '.join(f'{Path(s.corpus_file).stem} at {s.mean_distance:.1f} bits' for s in f.segments)})")
    print(f"  verdict rule kept: {'yes' if not problems else problems}")
    return {"false": false_s, "found": len(found), "copies": len(copies)}


def candidate_lines(manifest: Path, lab: Path, truth: dict[str, str | None]) -> tuple[list[float], list[float], int]:
    """Chance figures of every verified line from a look-alike offer: (different motion, scripted
    twin, look-alike streams searched)."""
    queries = [q for q in manifest_queries(read_manifest(manifest))
               if truth.get(Path(q.file).stem, "?") is None and not Path(q.file).stem.startswith("limit-")]
    other, twin = [], []
    with open_index(lab, create=False) as idx:
        found = compare_streams(queries, IndexCorpus(idx), MatchParams(list_chance=math.inf))
        for qi, sid, s in found:
            if s.chance is None:  # unjudged or rival: no figure claimed
                continue
            offered = Path(queries[qi].file).stem
            owned = Path(idx.stream_info(sid)[0].path).stem
            (twin if _trajectory(offered) and _trajectory(offered) == _trajectory(owned) else other).append(s.chance)
    return other, twin, len(queries)


def _trajectory(name: str) -> str | None:
    """The scripted trajectory a rig episode replays (``neg-mj-t1-l3`` -> ``t1``), if any."""
    found = re.search(r"(?:^|-)(t\d+)-l\d+", name)
    return found.group(1) if found else None


def calibration(rows: list[tuple[list[float], list[float], int]], label: str) -> None:
    other = [c for o, _, _ in rows for c in o]
    twin = [c for _, t, _ in rows for c in t]
    streams = sum(n for _, _, n in rows)
    print(f"--- calibration ({label}): {len(other)} lines from {streams} look-alike streams searched, "
          f"{len(twin)} more to scripted twins")
    print("  threshold   lines at or under   predicted (threshold x streams)   twin lines at or under")
    for t in THRESHOLDS:
        print(f"  {t:9.0e}   {sum(c <= t for c in other):17d}   {t * streams:31.3g}   {sum(c <= t for c in twin):22d}")


def distances() -> None:
    import numpy as np
    import pdqhash

    from tests.rig import RigEpisode

    for traj in (1, 2):
        codes = {}
        for lay in range(1, 10):
            ep = RigEpisode(5, traj, layout=lay, home_s=2.0)
            codes[lay] = np.array([np.asarray(pdqhash.compute(np.ascontiguousarray(ep.frame(t, vs.RIG_SIZE)))[0],
                                              np.uint8) for t in np.arange(2.0, 16.0, 0.5)])
        print(f"trajectory {traj}: mean PDQ distance between layouts 1-9 (after the home pose)")
        for a in range(1, 10):
            print(f"  l{a}", " ".join(f"{float((codes[a] != codes[b]).sum(1).mean()):5.1f}" for b in range(1, 10)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=Path, help="build (or reuse) the footage in this folder")
    ap.add_argument("--before", action="store_true", help="also the calibration of the model before issue 33")
    ap.add_argument("--distances", action="store_true", help="scripted layouts' distances only")
    args = ap.parse_args()
    if args.distances:
        distances()
        return
    root = args.keep or Path(tempfile.mkdtemp(prefix="overlap-verdicts-"))
    root.mkdir(parents=True, exist_ok=True)
    runs: list[tuple[str, Path, Path, dict[str, str | None]]] = []
    mf, lab, truth = same_rig(root / "same-rig")
    runs.append(("same-rig", mf, lab, truth))
    for name, make in vs.SUITES.items():
        suite = make()
        mf = vs.build(suite, root / name)
        runs.append((name, mf, root / name / "lab-index", {n: o.copy_of for n, o in suite.offers.items()}))
    totals = {"false": 0.0, "found": 0, "copies": 0}
    for name, mf, lab, truth in runs:
        report = api.compare(mf, lab, config=api.load_config({"index.path": str(lab)}))
        for k, v in verdict_table(name, report, truth).items():
            totals[k] += v
    print(f"=== all suites: {totals['false']:.1f} s falsely owned; copies found {totals['found']}/{totals['copies']}")
    import overlap_desktop.core.match.evidence as ev

    models = [("this model", {})]
    if args.before:
        models.append(("before issue 33: normal tail, no penalty for few moments or distance, capped at 1e-15",
                       {"FEW_STATES": 0, "DISTANCE_FREE_BITS": 1e9, "MIN_CHANCE": 1e-15, "CLOSE_BITS": 1e9}))
    # The ridge gate keeps most look-alike lines from getting a figure at all; with it off, every
    # verified line is scored, which is what tests the figure itself (bench_evidence.py does the same).
    for label, patch in models:
        for gate in (False, True):
            patch_all = {**patch, **({"RIDGE_RATIO": 1e9, "RIDGE_BITS": 0.0} if gate else {})}
            saved = {k: getattr(ev, k) for k in patch_all}
            for k, v in patch_all.items():
                setattr(ev, k, v)
            try:
                calibration([candidate_lines(mf, lab, truth) for _, mf, lab, truth in runs],
                            label + (", ridge gate off (the figure alone)" if gate else ""))
            finally:
                for k, v in saved.items():
                    setattr(ev, k, v)


if __name__ == "__main__":
    main()
