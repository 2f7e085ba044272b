"""One hostile item never stops a library: its failure is that item's listed error.

About 100 KB of nested ``[`` in a LeRobot ``meta/info.json`` or a zarr ``zarr.json`` made the
JSON parser raise ``RecursionError`` during the folder scan, and ``overlap index`` exited
"internal error" having indexed nothing, not even the good clip beside it. Metadata is now
parsed with depth and size limits, and any failure of a reader looking at an item is that
item's error.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from overlap_desktop.cli.main import main
from overlap_desktop.core.fsutil import loads_json_limited
from overlap_desktop.core.index.store import open_index
from overlap_desktop.core.index.walk import walk_candidates
from overlap_desktop.errors import ExitCode
from tests.footage import make_clip

NESTED = "[" * 100_000


def _library(root: Path) -> Path:
    make_clip(root / "good.mp4", 31, duration=4, fps=8, size=(96, 72))
    lerobot = root / "lerobot_images"  # cameras as images in parquet: can_open reads info.json
    (lerobot / "meta").mkdir(parents=True)
    (lerobot / "data").mkdir()
    (lerobot / "meta" / "info.json").write_text(NESTED)
    lerobot_v = root / "lerobot_videos"  # cameras as videos: info.json is read when indexing
    (lerobot_v / "meta").mkdir(parents=True)
    (lerobot_v / "videos").mkdir()
    (lerobot_v / "meta" / "info.json").write_text('{"fps": 10, "features": ' + NESTED)
    zarr_root = root / "replay.zarr"
    (zarr_root / "data").mkdir(parents=True)
    (zarr_root / "meta" / "episode_ends").mkdir(parents=True)
    (zarr_root / "zarr.json").write_text(NESTED)
    (zarr_root / "data" / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group", "attributes": '
                                                  + NESTED)
    rlds = root / "rlds_set"
    rlds.mkdir()
    (rlds / "features.json").write_text(NESTED)
    (rlds / "dataset_info.json").write_text(NESTED)
    return root


def test_limited_json_refuses_depth_with_a_value_error() -> None:
    with pytest.raises(ValueError, match="nested more than 64 levels"):
        loads_json_limited(NESTED + "]" * 100_000)
    with pytest.raises(ValueError, match="nested more than 64 levels"):
        loads_json_limited("[" * 65 + "]" * 65)
    assert loads_json_limited("[" * 64 + "]" * 64) is not None


def test_nested_metadata_never_stops_the_library(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lib = _library(tmp_path / "lib")
    code = main(["index", str(lib), "--index", str(tmp_path / "idx"), "-q"])
    out, err = capsys.readouterr()
    assert "internal error" not in out + err
    assert code != ExitCode.INTERNAL, err
    idx = open_index(tmp_path / "idx", create=False, readonly=True)
    try:
        files = {Path(f.path).name: f for f in idx.files()}
    finally:
        idx.close()
    assert files["good.mp4"].status == "ok"  # the good clip beside them is indexed
    assert files["lerobot_videos"].status != "ok" and "info.json" in (files["lerobot_videos"].error or "")
    for name in ("lerobot_images", "lerobot_videos"):  # each its own listed error, named
        assert files[name].status == "error" and "info.json" in (files[name].error or ""), name
        assert name in out + err


def test_a_reader_that_fails_while_looking_lists_that_item_and_the_walk_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from overlap_desktop.core.ingest.readers.video import VideoReader

    make_clip(tmp_path / "a.mp4", 32, duration=2, fps=8, size=(96, 72))
    make_clip(tmp_path / "b.mp4", 33, duration=2, fps=8, size=(96, 72))
    real = VideoReader.can_open

    def flaky(self: VideoReader, path: Path) -> bool:
        if Path(path).name == "a.mp4":
            raise RecursionError("maximum recursion depth exceeded")
        return real(self, path)

    monkeypatch.setattr(VideoReader, "can_open", flaky)
    unlisted: list[tuple[Path, str]] = []
    items = [p.name for p, _r in walk_candidates([tmp_path], unlisted=unlisted)]
    assert items == ["b.mp4"]
    assert [(p.name, "RecursionError" in why) for p, why in unlisted] == [("a.mp4", True)]
