"""Margins of the evidence model on the same-rig suite (figures for docs/detection-matrix.md).

Builds the footage of tests/integration/test_same_rig.py (a library of ten episodes of one rig
plus fixed-camera recordings; twenty-odd look-alike offers and five true copies), then runs the
comparison engine with *nothing* filtered by chance (``list_chance`` = infinity) and prints, for
every candidate line the matcher verified, its expected chance count (E-value) and whether it is a
true copy. The figure that matters is the gap: the largest chance count of a true copy against the
smallest of a false line, and where the counting threshold (``MatchParams.max_chance``) sits
between them. Also prints the time the evidence step adds to the comparison.

Usage::

    python bench/bench_evidence.py [--keep DIR]

No assertions: the tests assert the outcome; this prints the margins.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

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
from tests import manipulations as m  # noqa: E402
from tests.integration import test_same_rig as suite  # noqa: E402


def build(root: Path) -> tuple[Path, Path]:
    lib, offer = root / "library", root / "offer"
    if not (root / "offer.ovlm").exists():
        for name, ep in suite.LIB.items():
            m.write_edit(lib / f"{name}.mp4", [suite.Piece(ep, 0.0, suite.DUR, master_fps=suite.FPS)],
                         out_fps=suite.FPS, size=suite.SIZE)
        for name, rec in suite.LONG.items():
            m.write_edit(lib / f"{name}.mp4", [suite.Piece(rec, 0.0, suite.DUR, master_fps=suite.FPS)],
                         out_fps=suite.FPS, size=suite.SIZE)
        for name, pieces in suite.NEGATIVES.items():
            m.write_edit(offer / f"{name}.mp4", pieces, out_fps=suite.FPS, size=suite.SIZE)
        for name, ctl in suite.CONTROLS.items():
            m.write_edit(offer / f"{name}.mp4", ctl.pieces, out_fps=suite.FPS, size=suite.SIZE,
                         transform=ctl.transform)
        for src in sorted(suite.FIXEDCAM.glob("*")) if suite.FIXEDCAM.is_dir() else []:
            if src.suffix.lower() in (".mp4", ".avi", ".mkv", ".webm", ".mov"):
                suite._real_fixedcam(src, lib, offer)
        for d, src in ((root / "lab-index", lib), (root / "vendor-index", offer)):
            cfg = api.load_config({"index.path": str(d)})
            api.index_paths([src], index=d, config=cfg)
        with api.open_index(root / "vendor-index") as v:
            api.export_manifest(v, root / "offer.ovlm", label="same-rig offer")
    return root / "offer.ovlm", root / "lab-index"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=Path, help="build (or reuse) the footage in this folder")
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="overlap-evidence-"))
    root.mkdir(parents=True, exist_ok=True)
    manifest, lab = build(root)
    man = read_manifest(manifest)
    queries = manifest_queries(man)
    import overlap_desktop.core.match.evidence as ev

    ridge = ev.RIDGE_RATIO
    for label, gate in (("without the ridge gate", 1e9), ("with the ridge gate (the product)", ridge)):
        ev.RIDGE_RATIO = gate
        print(f"--- {label}")
        report(queries, lab, root)
    ev.RIDGE_RATIO = ridge


def report(queries: list, lab: Path, root: Path) -> None:
    with open_index(lab, create=False) as idx:
        corpus = IndexCorpus(idx)
        t0 = time.process_time()
        found = compare_streams(queries, corpus, MatchParams(list_chance=math.inf))
        t_all = time.process_time() - t0
        rows = []
        for qi, sid, s in found:
            offered = Path(queries[qi].file).stem
            owned = Path(idx.stream_info(sid)[0].path).stem
            ctl = suite.CONTROLS.get(offered)
            true = (ctl is not None and ctl.master == owned) or (
                offered.startswith("ctl-real-") and owned == "real-" + offered[len("ctl-real-"):] + "-first")
            if s.chance is None:  # unjudged or rival (issue 33): no figure claimed
                continue
            rows.append((true, s.chance, offered, owned, s.query_start, s.query_end, s.speed))
    true_e = [r[1] for r in rows if r[0]]
    false_e = [r[1] for r in rows if not r[0]]
    thr = MatchParams().max_chance
    real_neg = sum(1 for q in queries if Path(q.file).stem.startswith("neg-real-"))
    real_ctl = sum(1 for q in queries if Path(q.file).stem.startswith("ctl-real-"))
    print(f"offers: {len(suite.NEGATIVES) + real_neg} look-alikes ({real_neg} real), "
          f"{len(suite.CONTROLS) + real_ctl} true copies ({real_ctl} real)")
    print(f"candidate lines verified: {len(rows)} ({len(true_e)} true, {len(false_e)} false)")
    print(f"largest chance count of a true copy : {max(true_e):.3g}" if true_e else "no true copy found")
    print(f"smallest chance count of a false line: {min(false_e):.3g}" if false_e else "no false line")
    print(f"threshold (counted at or below): {thr:g}; false lines at or below it: "
          f"{sum(e <= thr for e in false_e)}; true copies above it: {sum(e > thr for e in true_e)}")
    print(f"compare CPU (search + match + evidence): {t_all:.2f} s")
    for r in sorted(rows, key=lambda r: r[1])[:12]:
        print("  ", "TRUE " if r[0] else "false", f"E={r[1]:.3g}", r[2], "->", r[3],
              f"q {r[4]:.1f}-{r[5]:.1f} speed {r[6]:+.3f}")


if __name__ == "__main__":
    main()
