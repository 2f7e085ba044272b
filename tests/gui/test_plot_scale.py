"""The app's match plot colours each frame match with the core's one distance scale, so a
dot has the colour the HTML report gives the same distance (tests/unit/test_report_scale.py)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from overlap_desktop import api
from overlap_desktop.core.types import Segment, Variant


def test_plot_dots_have_the_html_colour_of_their_distance(qtbot: Any) -> None:
    from overlap_desktop.gui.plot import MatchPlot

    dists = [d for lv in api.DISTANCE_SCALE for d in (lv.upper - 0.5, lv.upper, lv.upper + 0.01)]
    dists += [0.0, 999.0, math.nan]
    q = np.arange(len(dists), dtype=np.float64)
    pairs = np.c_[q, q + 5.0, np.array(dists)]
    s = Segment("offer.mp4", "v:0", 0.0, float(len(dists)), "owned.mp4", "v:0", 5.0, 5.0 + len(dists), 1.0,
                Variant(), len(dists), 10.0, 0.9, pairs)
    plot = MatchPlot()
    qtbot.addWidget(plot)
    plot.set_file(api.FileResult("offer.mp4", float(len(dists)), matched_seconds=float(len(dists)), segments=[s]))
    assert plot.point_count == len(dists)
    shown = [(float(d), brush.color().name()) for (_, d), brush in zip(plot.scatter.data["data"],
                                                                       plot.scatter.data["brush"])]
    assert len(shown) == len(dists)
    for d, colour in shown:
        assert colour == api.distance_colour(d), d
    assert [c for c, _ in plot.legend_entries()[:-1]] == [lv.colour for lv in api.DISTANCE_SCALE]
