"""Short copies against the search's seed grid: one phase per second, or turned phases.

A manifest samples an offered copy once a second, at whatever phase its trim left. For each
source clip this cuts ten 12 s pieces starting 0.0, 0.1, ... 0.9 s into it (plain x264 re-encode,
CRF 26), exports them as one-file manifests, and compares each with a library holding the whole
clip, sealed twice: every seed at the start of its second (``--stagger 1``, the grid before
``shards.SEED_STAGGER``) and on the turned grid of this build. Per piece it prints ``F`` (owned),
``c`` (can't tell) or ``.`` (counted new), then the totals.

Sources: the test footage of this repository (fixed cameras, the rendered MuJoCo rig, the car
parks), NASA footage from ``../shared/realdata`` when present, a generated scene panning at 60
canvas pixels a second (tests/integration/test_seed_phase.py), and any clip given with
``--extra`` (footage not in the repository, for a measurement on material nobody tuned on).

Usage::

    python bench/bench_seed_phase.py [--extra CLIP ...]

No assertions.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from overlap_desktop import api  # noqa: E402
from overlap_desktop.cli.main import main as cli  # noqa: E402
from overlap_desktop.core.index.sealing import ShardSet  # noqa: E402
from overlap_desktop.core.index.shards import SEED_STAGGER  # noqa: E402
from tests.footage import Scene, read_video, render_frames, write_video  # noqa: E402

DATA = ROOT / "tests" / "data"
SOURCES = [DATA / "fixedcam" / "room-people.mp4", DATA / "fixedcam" / "table-bottles.mp4",
           DATA / "mujoco" / "t1-l1.mp4", DATA / "mujoco" / "t3-l1.mp4", DATA / "heldout" / "carpark.mp4",
           DATA / "hard" / "car-park-overhead.mp4", ROOT.parent / "shared" / "realdata" / "video" / "nasa_13013.mp4"]
PIECE_S, PHASES = 12.0, 10


def _quiet(*argv: str) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        cli(list(argv))


def make_offers(work: Path, sources: list[Path]) -> list[tuple[str, Path]]:
    """One-file manifests of every piece; the sources copied into ``work / "owned"``."""
    owned = work / "owned"
    owned.mkdir(parents=True)
    pan = owned / "generated-pan.mp4"
    write_video(pan, render_frames(Scene(31, velocity=(60.0, 0.0), canvas_hw=(720, 9000)), duration=24.0, fps=24.0),
                fps=24.0)
    out = []
    for src in [pan, *sources]:
        if src != pan:
            shutil.copy(src, owned / src.name)
        frames, fps = read_video(src)
        n = min(int(round(PIECE_S * fps)), len(frames) - int(fps) - 1)
        for k in range(PHASES):
            start = int(round(k * 0.1 * fps))
            d = work / f"{src.stem}-{k}"
            write_video(d / "piece.mp4", frames[start:start + n], fps=fps, options={"crf": "26"})
            _quiet("--index", str(d / "index"), "-q", "index", str(d / "piece.mp4"))
            _quiet("--index", str(d / "index"), "-q", "export", "--no-sign", "-o", str(d / "piece.ovlm"))
            out.append((src.stem, d / "piece.ovlm"))
    return out


def verdicts(work: Path, offers: list[tuple[str, Path]], stagger: int) -> dict[str, str]:
    ShardSet.seed_stagger = stagger
    lab = work / f"lab-{stagger}"
    _quiet("--index", str(lab), "-q", "index", str(work / "owned"))
    got: dict[str, str] = {}
    for name, manifest in offers:
        f = api.compare(manifest, lab).files[0]
        got[name] = got.get(name, "") + ("F" if f.matched_seconds > 0 else "c" if f.cant_tell_seconds > 0 else ".")
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--extra", nargs="*", type=Path, default=[], help="more clips to cut pieces from")
    args = ap.parse_args()
    sources = [p for p in SOURCES if p.exists()] + list(args.extra)
    with tempfile.TemporaryDirectory(prefix="bench-seed-phase-") as tmp:
        offers = make_offers(Path(tmp), sources)
        rows = {s: verdicts(Path(tmp), offers, s) for s in (1, SEED_STAGGER)}
    print(f"{len(offers)} pieces of {PIECE_S:.0f} s (phases 0.0-0.9 s); F owned, c can't tell, . new")
    for name in rows[1]:
        print(f"  {name:24s} one phase: {rows[1][name]}   turned ({SEED_STAGGER}): {rows[SEED_STAGGER][name]}")
    for s, r in rows.items():
        every = "".join(r.values())
        print(f"stagger {s}: owned {every.count('F')}, can't tell {every.count('c')}, new {every.count('.')}")


if __name__ == "__main__":
    main()
