"""The one colour scale of match plots: one definition (core/report/scale.py), one rule for
which level a distance falls in, used by the HTML report, the app (tests/gui/test_plot_scale.py)
and documented in docs/glossary.md."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from overlap_desktop import api
from overlap_desktop.core.report import scale
from overlap_desktop.core.report.html import render_report_html
from overlap_desktop.core.report.svgplot import plot_view
from tests.unit.test_report import sample_report, seg

#: Every boundary, just either side of it, far outside the range and not-a-number.
PROBES = [x for lv in scale.DISTANCE_SCALE for x in (lv.upper - 0.5, lv.upper, lv.upper + 0.01)] + [
    -3.0, 0.0, 1000.0, math.nan, math.inf, -math.inf]


def test_vectorised_levels_follow_the_scalar_rule() -> None:
    idx = scale.distance_level_indices(np.array(PROBES))
    assert idx.shape == (len(PROBES),)
    for d, i in zip(PROBES, idx.tolist()):
        assert scale.DISTANCE_SCALE[i] == scale.distance_level(d), d
    assert scale.distance_level_indices(np.zeros((2, 3))).shape == (2, 3)


def test_the_api_exposes_the_one_scale() -> None:
    assert api.DISTANCE_SCALE is scale.DISTANCE_SCALE
    assert api.distance_level_indices is scale.distance_level_indices
    assert api.distance_colour is scale.distance_colour and api.distance_words is scale.distance_words


def test_html_dots_use_the_scale_for_each_frame_match() -> None:
    s = seg(0, 30, 10)
    assert s.pairs is not None
    view = plot_view("a.mp4", "b.mp4", 30.0, [(s, False)])
    assert [c for _, _, c, _ in view.dots] == [scale.distance_colour(d) for d in s.pairs[:, 2]]
    html = render_report_html(sample_report())
    dots = set(re.findall(r'<circle [^>]*fill="(#[0-9a-f]{6})"', html))
    assert dots and dots <= {lv.colour for lv in scale.DISTANCE_SCALE}


def test_glossary_doc_shows_the_same_scale() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "glossary.md").read_text(encoding="utf-8")
    table = doc[doc.index("## The colour scale for how alike"):]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "`#" in line]
    assert len(rows) == len(scale.DISTANCE_SCALE)
    for row, level in zip(rows, scale.DISTANCE_SCALE):
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[0] == level.words and f"`{level.colour}`" in cells[1]
        expected = "more" if level is scale.DISTANCE_SCALE[-1] else f"{level.upper:g}"
        assert cells[2].split()[0] == expected
