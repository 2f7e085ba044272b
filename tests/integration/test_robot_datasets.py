"""Robot datasets end to end (issue 32): a lab owning two 20 s camera clips as mp4 is offered the
same frames re-packed as ALOHA HDF5 (raw and JPEG-compressed), robomimic HDF5, RLDS, a zarr
ReplayBuffer and a LeRobot dataset with image cameras, each beside another episode of the same
rigs in the same container.

Every one of the 12 re-packed camera streams (the issue's 10, plus LeRobot's two) must be >= 85%
owned at speed 1.00 +- 3%; every other-episode stream must not be owned; the reverse (the lab owns
the containers, the offer is mp4) matches too; a wrong --frame-rate reads as the matching speed
change. Footage: generated same-rig episodes (tests/rig.py), two rigs standing for two cameras.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("h5py")
pytest.importorskip("zarr")
pytest.importorskip("google_crc32c")

from overlap_desktop import api
from overlap_desktop.cli.main import main
from overlap_desktop.config import load_config
from overlap_desktop.core.report.model import Report
from tests.footage import write_video
from tests.rig import RigEpisode
from tests.robotdata import write_aloha, write_lerobot_images, write_rlds, write_robomimic, write_zarr

FPS = 25.0
SECONDS = 20.0
SIZE = (128, 96)
CAMS = ("cam_high", "cam_wrist")
RIGS = {"cam_high": 71, "cam_wrist": 72}
OWNED_EPISODE, OTHER_EPISODE = 1, 2


def _frames(cam: str, episode: int) -> np.ndarray:
    ep = RigEpisode(RIGS[cam], episode)
    return np.stack([ep.frame(i / FPS, SIZE) for i in range(int(SECONDS * FPS))])


def run(argv: list[str]) -> tuple[int, str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main([*argv, "-q"])
    return code, buf.getvalue()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("robotdata")
    own, offer = root / "own", root / "offer"
    owned = {cam: _frames(cam, OWNED_EPISODE) for cam in CAMS}
    other = {cam: _frames(cam, OTHER_EPISODE) for cam in CAMS}
    for cam in CAMS:
        write_video(own / f"{cam}.mp4", list(owned[cam]), fps=FPS)
    write_aloha(offer / "aloha_raw" / "episode_1.hdf5", owned)
    write_aloha(offer / "aloha_raw" / "episode_2.hdf5", other)
    write_aloha(offer / "aloha_jpeg" / "episode_1.hdf5", owned, compress=True)
    write_aloha(offer / "aloha_jpeg" / "episode_2.hdf5", other, compress=True)
    write_robomimic(offer / "robomimic.hdf5", [owned, other], control_freq=FPS)
    write_rlds(offer / "rlds" / "1.0.0", [owned, other])
    write_zarr(offer / "buffer.zarr", [owned, other])
    # LeRobot with image cameras (PNG in the data parquet; the rate is info.json's fps).
    write_lerobot_images(offer / "lerobot", [owned, other], fps=FPS)
    config = load_config(overrides={"index.frame_rate": FPS})
    # The robomimic file states its rate; --frame-rate is for the others (a stored rate wins).
    assert not api.index_paths([own], index=root / "idx_own", config=config).failed
    summary = api.index_paths([offer], index=root / "idx_offer", config=config)
    assert not summary.failed, summary.failed
    api.export_manifest(root / "idx_offer", root / "offer.ovlm", config=config)
    api.export_manifest(root / "idx_own", root / "own.ovlm", config=config)
    return {"root": root, "config": config, "offer": offer,
            "report": api.compare(root / "offer.ovlm", root / "idx_own", config=config),
            "reverse": api.compare(root / "own.ovlm", root / "idx_offer", config=config)}


def _owned_fraction(segments: list[Any], seconds: float) -> float:
    spans = sorted((s.query_start, s.query_end) for s in segments)
    covered, end = 0.0, -1.0
    for a, b in spans:
        a = max(a, end)
        if b > a:
            covered += b - a
            end = b
    return covered / seconds


#: The 10 re-packed camera streams: (file under the offer, stream key).
OWNED_STREAMS = [(f, f"observations/images/{c}") for f in ("aloha_raw/episode_1.hdf5", "aloha_jpeg/episode_1.hdf5")
                 for c in CAMS] + [("robomimic.hdf5", f"data/demo_0/obs/{c}") for c in CAMS] + [
    ("rlds/1.0.0", f"train/episode_0/steps/observation/{c}") for c in CAMS] + [
    ("buffer.zarr", f"episode_0/{c}") for c in CAMS] + [
    ("lerobot", f"data/chunk-000/file-000.parquet/episode_0/{c}") for c in CAMS]
OTHER_STREAMS = [(f, f"observations/images/{c}") for f in ("aloha_raw/episode_2.hdf5", "aloha_jpeg/episode_2.hdf5")
                 for c in CAMS] + [("robomimic.hdf5", f"data/demo_1/obs/{c}") for c in CAMS] + [
    ("rlds/1.0.0", f"train/episode_1/steps/observation/{c}") for c in CAMS] + [
    ("buffer.zarr", f"episode_1/{c}") for c in CAMS] + [
    ("lerobot", f"data/chunk-000/file-000.parquet/episode_1/{c}") for c in CAMS]


def _segments(report: Report, file: str, key: str) -> list[Any]:
    return [s for f in report.files if f.query_file.replace("\\", "/").endswith(file)
            for s in f.segments if s.query_stream == key]


@pytest.mark.parametrize(("file", "key"), OWNED_STREAMS)
def test_every_repacked_camera_stream_is_owned_at_speed_one(world: dict[str, Any], file: str, key: str) -> None:
    segs = _segments(world["report"], file, key)
    assert segs, f"{file} {key}: not found"
    cam = key.rsplit("/", 1)[-1]
    assert {Path(s.corpus_file).name for s in segs} == {f"{cam}.mp4"}
    assert _owned_fraction(segs, SECONDS) >= 0.85
    for s in segs:
        assert s.speed == pytest.approx(1.0, abs=0.03)


@pytest.mark.parametrize(("file", "key"), OTHER_STREAMS)
def test_another_episode_of_the_same_rig_in_the_same_container_is_not_owned(world: dict[str, Any], file: str,
                                                                            key: str) -> None:
    report = world["report"]
    offered = [f for f in report.files if f.query_file.replace("\\", "/").endswith(file)]
    assert offered, f"{file} is not in the offer"  # judged, not missing
    assert _segments(report, file, key) == []
    assert not [s for f in offered for s in f.below_floor + f.weak if s.query_stream == key]


def test_the_reverse_mp4_offered_against_owned_containers(world: dict[str, Any]) -> None:
    rev = world["reverse"]
    for cam in CAMS:
        segs = [s for f in rev.files if Path(f.query_file).name == f"{cam}.mp4" for s in f.segments]
        assert _owned_fraction(segs, SECONDS) >= 0.85
        assert all(s.speed == pytest.approx(1.0, abs=0.03) for s in segs)
        # Found in the owned episode of the containers, never in the other episode.
        assert {s.corpus_stream.rsplit("/", 1)[-1] for s in segs} == {cam}
        assert not [s for s in segs if "episode_2" in s.corpus_file or "episode_1/" in s.corpus_stream
                    or "demo_1" in s.corpus_stream]


def test_segments_name_the_episode_and_camera_in_json_html_and_csv(world: dict[str, Any]) -> None:
    root = world["root"]
    rep = root / "report.json"
    code, _ = run(["compare", str(root / "offer.ovlm"), "--index", str(root / "idx_own"), "-o", str(rep),
                   "--html", str(rep.with_suffix(".html")), "--csv", str(rep.with_suffix(".csv"))])
    assert code in (0, 3), code
    data = json.loads(rep.read_text(encoding="utf-8"))
    labels = [e["label"] for f in data["files"] for e in f["episodes"] if not e["below_floor"]]
    assert any(lab.startswith("offered episode 0, cam_high, 00:0") for lab in labels), labels
    assert any("episode 1, cam_wrist" in lab for lab in labels), labels
    html = rep.with_suffix(".html").read_text(encoding="utf-8")
    assert "episode 0, cam_wrist, 00:0" in html
    with open(rep.with_suffix(".csv"), encoding="utf-8-sig", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["kind"] == "episode"]
    assert any("episode 0, cam_high" in r["description"] for r in rows)


def test_overlap_files_shows_the_rate_used(world: dict[str, Any]) -> None:
    root = world["root"]
    code, out = run(["files", "--index", str(root / "idx_offer"), "--json"])
    assert code == 0
    files = {Path(f["path"]).name: f for f in json.loads(out)["files"]}
    # One item per container or dataset folder (the library screen lists these rows), never its chunks.
    assert len(files) == 6 and {"buffer.zarr", "1.0.0", "lerobot", "robomimic.hdf5"} <= set(files), files
    assert files["robomimic.hdf5"]["frame_rate"] == FPS
    assert files["robomimic.hdf5"]["frame_rate_source"].startswith("stored")
    assert files["buffer.zarr"]["frame_rate_source"].startswith("--frame-rate")
    code, text = run(["files", "--index", str(root / "idx_offer")])
    assert "25 Hz, --frame-rate" in text and "25 Hz, stored" in text


def test_without_a_rate_the_file_is_refused_naming_the_option(world: dict[str, Any], tmp_path: Path) -> None:
    code, out = run(["index", str(world["offer"] / "buffer.zarr"), "--index", str(tmp_path / "ix"), "--json"])
    assert code == 4
    (failed,) = json.loads(out)["failed"]
    assert failed["path"].endswith("buffer.zarr") and "--frame-rate" in failed["reason"]
    # A stored rate needs no option.
    code, _ = run(["index", str(world["offer"] / "robomimic.hdf5"), "--index", str(tmp_path / "ix2")])
    assert code == 0


def test_a_wrong_frame_rate_reads_as_the_matching_speed_change(world: dict[str, Any], tmp_path: Path) -> None:
    root = world["root"]
    idx = tmp_path / "ix"
    code, _ = run(["index", str(world["offer"] / "aloha_raw" / "episode_1.hdf5"), "--index", str(idx),
                   "--frame-rate", str(2 * FPS)])
    assert code == 0
    api.export_manifest(idx, tmp_path / "fast.ovlm", config=world["config"])
    report = api.compare(tmp_path / "fast.ovlm", root / "idx_own", config=world["config"])
    segs = [s for f in report.files for s in f.segments]
    assert segs
    # Read at twice its rate, the episode plays in half the time: 2x the owned footage's speed.
    assert all(s.speed == pytest.approx(2.0, rel=0.03) for s in segs), [s.speed for s in segs]
    assert _owned_fraction(segs, SECONDS / 2) >= 0.85


def test_verify_checks_containers_and_dataset_folders_as_delivered_bytes(world: dict[str, Any],
                                                                          tmp_path: Path) -> None:
    import shutil

    root = world["root"]
    delivery = tmp_path / "delivery"
    shutil.copytree(world["offer"], delivery)
    code, out = run(["verify", str(root / "offer.ovlm"), "--data", str(delivery), "-o", str(tmp_path / "v.json")])
    result = json.loads((tmp_path / "v.json").read_text(encoding="utf-8"))
    statuses = {e["name"]: e["status"] for e in result["entries"]}
    # HDF5 files are files; the zarr buffer, the RLDS and the LeRobot folders are one item each.
    assert statuses == {name: "matched" for name in statuses} and len(statuses) == 8, statuses
    assert {"buffer.zarr", "rlds/1.0.0", "lerobot"} <= set(statuses)
    assert result["extra"] == [] and code == 0
    # One changed chunk inside the zarr buffer makes that dataset altered, nothing else.
    chunk = next(p for p in (delivery / "buffer.zarr" / "data" / "cam_high").iterdir() if p.name[0].isdigit())
    chunk.write_bytes(chunk.read_bytes() + b"\0")
    code, _ = run(["verify", str(root / "offer.ovlm"), "--data", str(delivery), "-o", str(tmp_path / "v2.json")])
    result = json.loads((tmp_path / "v2.json").read_text(encoding="utf-8"))
    bad = {e["name"]: e["status"] for e in result["entries"] if e["status"] != "matched"}
    assert bad == {"buffer.zarr": "altered"}, bad
    assert code != 0
