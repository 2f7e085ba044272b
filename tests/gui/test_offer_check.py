"""The questions the window asks the api: is there a library yet, can this offer be compared?

``api.library_status``/``api.library_files`` answer the first for the library page and
``overlap files``; ``api.check_offer`` answers the second for "Screen an offer". Each
answer is checked on real files, then as the window shows it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw
import pytest

from overlap_desktop import api
from overlap_desktop.gui.main_window import MainWindow
from overlap_desktop.gui.state import AppState
from tests.gui.conftest import copy_tree


def test_library_status_before_and_after_indexing(tmp_path: Path, lab_index: Path) -> None:
    missing = api.library_status(tmp_path / "nowhere")
    assert missing.empty and not missing.ready and not missing.has_index
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("not an index")
    assert api.library_status(tmp_path / "other").empty  # a folder of other things holds no library
    (tmp_path / "a-file").write_text("x")
    on_file = api.library_status(tmp_path / "a-file")
    assert not on_file.empty and not on_file.ready and "is a file" in on_file.problem
    ready = api.library_status(lab_index)
    assert ready.ready and not ready.empty and ready.path == lab_index.resolve()
    assert api.library_status(config=api.load_config({"index.path": str(lab_index)})).ready


def test_library_files_filters_like_overlap_files(tmp_path: Path, lab_index: Path,
                                                  footage: dict[str, Path]) -> None:
    assert api.library_files(tmp_path / "nowhere") == []
    every = api.library_files(lab_index)
    assert sorted(Path(f.path).name for f in every) == ["owned-a.mp4", "owned-b.mp4"]
    assert api.library_files(lab_index, status="ok") == every
    assert api.library_files(lab_index, status="error") == []
    one = api.library_files(lab_index, under=[footage["owned"] / "owned-b.mp4"])
    assert [Path(f.path).name for f in one] == ["owned-b.mp4"]
    assert api.library_files(lab_index, under=[footage["offer"]]) == []
    with pytest.raises(ValueError, match="status must be one of"):
        api.library_files(lab_index, status="done")


def _with_other_fingerprints(lab_index: Path, dst: Path) -> Path:
    """A copy of the lab's index that claims another hash (as a library from another version would)."""
    idx = copy_tree(lab_index, dst)
    db = apsw.Connection(str(idx / "index.sqlite3"))
    with db:
        db.execute("UPDATE meta SET value = 'pdq-other' WHERE key = 'algo_id'")
    db.close()
    return idx


def test_check_offer_answers_every_case(tmp_path: Path, lab_index: Path, offer_manifest: Path) -> None:
    ok = api.check_offer(offer_manifest, lab_index)
    assert ok.compatible is True and ok.why == "" and ok.library_files == 2
    assert ok.info["label"] == "Test offer"

    empty = api.check_offer(offer_manifest, tmp_path / "no-library-yet")
    assert empty.compatible is None and empty.library_empty and empty.info["label"] == "Test offer"

    other = api.check_offer(offer_manifest, _with_other_fingerprints(lab_index, tmp_path / "other"))
    assert other.compatible is False and not other.library_empty
    assert "pdq-other" in other.why and ok.info["algo_id"] in other.why

    (tmp_path / "a-file").write_text("x")
    unreadable = api.check_offer(offer_manifest, tmp_path / "a-file")
    assert unreadable.compatible is None and not unreadable.library_empty
    assert "cannot be read" in unreadable.why and "is a file" in unreadable.why


def test_check_offer_refuses_a_bad_manifest(tmp_path: Path, lab_index: Path) -> None:
    bad = tmp_path / "bad.ovlm"
    bad.write_bytes(b"not a manifest at all")
    with pytest.raises(api.ManifestError):
        api.check_offer(bad, lab_index)


def _open(qtbot: Any, state: AppState, manifest: Path) -> tuple[MainWindow, Any]:
    w = MainWindow(state)
    qtbot.addWidget(w)
    w.show()
    with qtbot.waitSignal(w.screen.inspected, timeout=120_000) as got:
        w.open_manifest(manifest)
    return w, got.args[0]


def test_the_window_says_why_an_offer_cannot_be_compared(qtbot: Any, tmp_path: Path, lab_index: Path,
                                                         offer_manifest: Path) -> None:
    other = _with_other_fingerprints(lab_index, tmp_path / "other")
    w, check = _open(qtbot, AppState({"index.path": str(other)}), offer_manifest)
    text = w.screen.fields["compat"].text()
    assert check.compatible is False
    assert text.startswith("No: ") and "pdq-other" in text and "Ask the seller" in text
    assert not w.screen.compare_button.isEnabled()
    assert not w.screen.library_button.isVisibleTo(w)  # the library is there: no "add footage" step


def test_the_window_says_when_the_library_cannot_be_read(qtbot: Any, tmp_path: Path,
                                                         offer_manifest: Path) -> None:
    (tmp_path / "a-file").write_text("x")
    w, check = _open(qtbot, AppState({"index.path": str(tmp_path / "a-file")}), offer_manifest)
    assert check.compatible is None and not check.library_empty
    assert w.screen.fields["compat"].text().startswith("Not now: the library cannot be read")
    assert not w.screen.compare_button.isEnabled()
