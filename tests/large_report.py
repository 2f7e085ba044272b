"""A comparison report of many offered files, built in memory (no footage, no index).

The results view's tests and ``bench/bench_results_ui.py`` need what the app receives when a
robot lab screens an offer of tens of thousands of short episodes: files copied as is, slowed
or mirrored, files repeated inside the offer, files with "can't tell" evidence (below the
floor, weak, ambiguous), static time that could not be judged, and new files. Making 10,000
real clips and a real comparison of them would take hours; the view only reads the report's
objects, so they are made here with the same types the comparison returns
(``api.Report``, ``api.FileResult``, ``api.Segment``, ``Span``), deterministic per seed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from overlap_desktop import api
from overlap_desktop.core.types import Span

__all__ = ["KINDS", "large_report"]

#: What each offered file is, cycled with a per-seed shuffle: about 40% owned, 10% repeats of
#: other offered files, 15% can't tell, 35% new.
KINDS = ("owned", "owned-slow", "owned-mirror", "owned-splice", "repeat", "cant-tell", "new", "new", "new",
         "owned-static", "cant-tell-amb", "new-static", "owned", "new", "owned-weak", "cant-tell", "new",
         "owned", "repeat", "new")

#: Matched frame pairs per second of offered footage (the manifest's default sampling).
PAIRS_PER_S = 1.0


def _segment(q: str, qs: float, qe: float, c: str, cs: float, ce: float, rng: np.random.Generator, *,
             speed: float = 1.0, variant: Any = None, chance: float | None = 1e-9) -> Any:
    n = max(2, int((qe - qs) * PAIRS_PER_S))
    qt = np.linspace(qs, qe, n)
    pairs = np.column_stack([qt, cs + (qt - qs) * (ce - cs) / max(qe - qs, 1e-9),
                             rng.uniform(2.0, 40.0, n)])
    return api.Segment(q, "v:0", qs, qe, c, "v:0", cs, ce, speed, variant or api.Variant(), n,
                       float(pairs[:, 2].mean()), 0.9, pairs=pairs, chance=chance,
                       speed_low=speed * 0.97, speed_high=speed * 1.03)


def _file(i: int, kind: str, names: list[str], rng: np.random.Generator) -> Any:
    """One offered file of kind ``kind`` (the ``i``-th of ``names``)."""
    name = names[i]
    dur = float(rng.uniform(20.0, 60.0))
    owned = f"/lab/robot-{i % 7}/2025-{1 + i % 12:02d}/episode_{i:06d}.mp4"
    f = api.FileResult(name, dur)
    if kind.startswith("owned"):
        end = dur if kind != "owned-splice" else dur / 2
        speed = 0.5 if kind == "owned-slow" else 1.0
        variant = api.Variant(mirrored=True) if kind == "owned-mirror" else None
        seg = _segment(name, 0.0, end, owned, 3.0, 3.0 + end * speed, rng, speed=speed, variant=variant)
        f.segments.append(seg)
        if kind == "owned-splice":
            other = f"/lab/robot-{(i + 3) % 7}/2025-01/episode_{(i * 7919) % 100_000:06d}.mp4"
            f.segments.append(_segment(name, end, dur, other, 10.0, 10.0 + dur - end, rng))
            f.flags.append("splice")
        if kind == "owned-slow":
            f.flags.append("slowdown")
        if kind == "owned-mirror":
            f.flags.append("mirror")
        if kind == "owned-weak":
            f.segments[0] = _segment(name, 0.0, dur - 6.0, owned, 0.0, dur - 6.0, rng)
            f.weak.append(_segment(name, dur - 6.0, dur, owned + ".b", 0.0, 6.0, rng, chance=0.3))
            f.cant_tell.append(Span(dur - 6.0, dur, "weak evidence"))
        if kind == "owned-static":
            f.indeterminate.append(Span(dur - 4.0, dur, "static"))
        f.matched_seconds = sum(s.query_duration for s in f.segments)
        f.real_footage_seconds = sum(abs(s.corpus_end - s.corpus_start) for s in f.segments)
    elif kind == "repeat":
        other = names[(i * 31 + 1) % len(names)]
        f.repeats.append(_segment(name, 0.0, dur, other, 0.0, dur, rng))
        f.repeated_seconds = dur
    elif kind.startswith("cant-tell"):
        below = _segment(name, 2.0, 4.5, owned, 12.0, 14.5, rng)
        f.below_floor.append(below)
        if kind == "cant-tell-amb":
            f.ambiguous.append(_segment(name, 8.0, 16.0, owned, 0.0, 8.0, rng))
            f.cant_tell.append(Span(8.0, 16.0, "ambiguous"))
        f.cant_tell.append(Span(2.0, 4.5, "below the evidence floor"))
    elif kind == "new-static":
        f.indeterminate.append(Span(0.0, 5.0, "static"))
    unjudged = f.indeterminate_seconds + f.cant_tell_seconds
    f.new_seconds = max(0.0, dur - f.matched_seconds - f.repeated_seconds - unjudged)
    return f


def large_report(n_files: int = 10_000, seed: int = 38) -> Any:
    """A ``compare`` report of ``n_files`` offered files of every kind in :data:`KINDS`."""
    rng = np.random.default_rng(seed)
    kinds = [KINDS[k % len(KINDS)] for k in rng.permutation(n_files)]
    names = [f"site-{i % 3}/day-{(i // 500) % 30:02d}/episode_{i:06d}.mp4" for i in range(n_files)]
    files = [_file(i, kind, names, rng) for i, kind in enumerate(kinds)]
    offered = sum(f.duration_s for f in files)
    return api.Report(
        "compare", offered, sum(f.matched_seconds for f in files), sum(f.real_footage_seconds for f in files),
        indeterminate_seconds=sum(f.indeterminate_seconds for f in files), files=files,
        manifest={"label": f"Bench offer of {n_files} episodes", "files": n_files, "hours": offered / 3600},
        settings={"offer_repeats": {"checked": True}, "floor_seconds": 4.0},
        repeated_seconds=sum(f.repeated_seconds for f in files), new_seconds=sum(f.new_seconds for f in files),
        cant_tell_seconds=sum(f.cant_tell_seconds for f in files))
