"""The results view shows the stretches that match several owned episodes (issue 33 item 5): the
file's row says so instead of "no match", the plot draws them as not counted, and the stretches
table names each with why it is not counted. Beside it, a true copy of one of those episodes is
still shown owned.

Footage: the rendered MuJoCo rig (tests/data/mujoco): the library holds two episodes replaying one
arm motion with the blocks in different places; the offer holds a third such episode, trimmed half
a second, and a re-encoded copy of one owned episode.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from overlap_desktop import api
from tests.footage import read_video, write_video
from tests.gui.conftest import isolated_config

MJ = Path(__file__).resolve().parents[1] / "data" / "mujoco"


def _reencode(src: Path, dst: Path, skip: int = 0) -> None:
    frames, fps = read_video(src)
    write_video(dst, frames[skip:], fps=fps, options={"crf": "23"})


@pytest.fixture(scope="module")
def twin_report(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("twins")
    (root / "owned").mkdir()
    for name in ("t1-l1", "t1-l2"):
        shutil.copy(MJ / f"{name}.mp4", root / "owned" / f"{name}.mp4")
    _reencode(MJ / "t1-l3.mp4", root / "offer" / "new-repeat.mp4", skip=5)
    _reencode(MJ / "t1-l1.mp4", root / "offer" / "copy-of-l1.mp4")
    for name in ("lab", "vendor"):
        ix = root / name
        src = root / ("owned" if name == "lab" else "offer")
        assert not api.index_paths([src], index=ix, config=isolated_config(ix, root)).failed
    with api.open_index(root / "vendor") as v:
        api.export_manifest(v, root / "offer.ovlm", label="scripted repeats")
    return api.compare(root / "offer.ovlm", root / "lab", config=isolated_config(root / "lab", root))


def test_the_same_motion_as_several_owned_episodes_is_shown_not_counted(qtbot: Any, twin_report: Any) -> None:
    from overlap_desktop.gui.results import ResultsView

    files = {Path(f.query_file).stem: f for f in twin_report.files}
    repeat, copy = files["new-repeat"], files["copy-of-l1"]
    assert repeat.matched_seconds == 0.0 and repeat.ambiguous and repeat.cant_tell_seconds > 5.0
    # Its resting pose (the first 2 s, the same in every episode) proves nothing; the motion does.
    assert copy.matched_seconds >= 7.5 and {Path(s.corpus_file).stem for s in copy.segments} == {"t1-l1"}

    view = ResultsView()
    qtbot.addWidget(view)
    view.resize(1366, 768)
    view.show()
    view.set_report(twin_report)
    names = [view.file_table.item(r, 0).text() for r in range(view.file_table.rowCount())]
    row = names.index(repeat.query_file)
    assert view.file_table.item(row, 7).text() == ("the same motion as 2 owned episodes: can't tell which, "
                                                   "if any, was copied (not counted)")
    assert view.file_table.item(names.index(copy.query_file), 7).text() != "no match"

    view.file_table.selectRow(row)
    assert view.selected_file() is repeat
    assert view.plot_title.text().startswith("Where ")
    assert view.plot.segments and all(not_counted for _s, not_counted in view.plot.segments)
    kinds = [kind for _s, kind in view.segment_rows(repeat)]
    assert kinds.count("ambiguous") == len(repeat.ambiguous) >= 2
    counted = {view.seg_table.item(r, 6).text() for r in range(view.seg_table.rowCount())}
    assert counted == {"no: the same motion as several owned episodes (can't tell which)"}
    owned = {view.seg_table.item(r, 1).text().removeprefix("yours: ") for r in range(view.seg_table.rowCount())}
    assert owned == {"t1-l1.mp4", "t1-l2.mp4"}

    view.file_table.selectRow(names.index(copy.query_file))
    assert any(view.seg_table.item(r, 6).text().startswith("yes") for r in range(view.seg_table.rowCount()))
