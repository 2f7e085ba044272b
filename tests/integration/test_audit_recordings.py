"""The delivery audit on robot recordings: an MCAP with two cameras and a rosbag2 folder, checked
per camera stream; a quote that forges one camera's fingerprints is partly reproduced, naming it.
A quote sampled on another grid than the library's (the vendor indexed at 5 fps) still audits clean.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from overlap_desktop.cli.main import main
from overlap_desktop.config import load_config
from overlap_desktop.core.audit.reproduce import PARTLY, REPRODUCED
from overlap_desktop.core.audit.run import audit_delivery
from overlap_desktop.core.manifest.export import write_manifest
from overlap_desktop.core.manifest.format import ManifestFile, ManifestStream
from overlap_desktop.core.manifest.parse import read_manifest
from tests.fixtures_recordings import footage, frame_times, ros2_image_msg, write_mcap_ros2, write_rosbag2


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("audit-rec")
    a, b = footage(21), footage(22)
    times = frame_times(len(a))
    write_mcap_ros2(root / "delivery" / "run1.mcap",
                    {"/cam_left": [(t, ros2_image_msg(img, "rgb8", t)) for t, img in zip(times, a, strict=True)],
                     "/cam_right": [(t, ros2_image_msg(img, "rgb8", t)) for t, img in zip(times, b, strict=True)]})
    write_rosbag2(root / "delivery" / "run2", footage(23), with_jpeg=False)
    assert main(["index", str(root / "delivery"), "--index", str(root / "vendor"), "-q"]) == 0
    assert main(["export", "-o", str(root / "honest.ovlm"), "--index", str(root / "vendor"), "--no-sign",
                 "-q"]) == 0
    return {"root": root, "delivery": root / "delivery", "honest": root / "honest.ovlm"}


def test_recordings_audit_clean_per_camera(recordings: dict[str, Path], tmp_path: Path) -> None:
    m = read_manifest(recordings["honest"])
    assert {f.name for f in m.files} == {"run1.mcap", "run2"}
    assert len(next(f for f in m.files if f.name == "run1.mcap").streams) == 2
    r = audit_delivery(m, recordings["delivery"], config=load_config({}, environ={}), state_dir=tmp_path)
    assert r.ok, [f.check.words for f in r.files]
    assert all(f.bytes == "matched" and f.check.fingerprints == REPRODUCED for f in r.files)


def test_one_forged_camera_is_named(recordings: dict[str, Path], tmp_path: Path) -> None:
    m = read_manifest(recordings["honest"])
    run1 = next(f for f in m.files if f.name == "run1.mcap")
    run2 = next(f for f in m.files if f.name == "run2")
    left = next(s for s in run1.streams if s.key == "/cam_left")
    right = next(s for s in run1.streams if s.key == "/cam_right")
    # The right camera quoted with the left camera's fingerprints (other footage, same rig).
    forged = ManifestFile(run1.name, run1.size, run1.sha256, run1.duration_s,
                          [left, ManifestStream("/cam_right", right.fps, left.fingerprints)])
    write_manifest([forged, run2], tmp_path / "forged.ovlm", algo_id=m.algo_id, prep_id=m.prep_id)
    r = audit_delivery(tmp_path / "forged.ovlm", recordings["delivery"], config=load_config({}, environ={}),
                       state_dir=tmp_path / "state")
    f1 = next(f for f in r.files if f.name == "run1.mcap")
    assert f1.check.fingerprints == PARTLY and not r.ok
    assert "/cam_right 0-" in f1.check.words and "/cam_left" not in f1.check.words
    assert next(f for f in r.files if f.name == "run2").check.fingerprints == REPRODUCED


def test_a_quote_sampled_on_another_grid_audits_clean(recordings: dict[str, Path], tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OVERLAP_INDEX_FPS", "5")
    monkeypatch.setenv("OVERLAP_EXPORT_FPS", "5")
    assert main(["index", str(recordings["delivery"]), "--index", str(tmp_path / "v5"), "-q"]) == 0
    assert main(["export", "-o", str(tmp_path / "q5.ovlm"), "--index", str(tmp_path / "v5"), "--no-sign", "-q"]) == 0
    monkeypatch.delenv("OVERLAP_INDEX_FPS")
    monkeypatch.delenv("OVERLAP_EXPORT_FPS")
    q = read_manifest(tmp_path / "q5.ovlm")
    assert any(int(t) % 250_000_000 for f in q.files for s in f.streams for t in s.fingerprints.times_ns)
    r = audit_delivery(q, recordings["delivery"], config=load_config({}, environ={}), state_dir=tmp_path / "st")
    assert r.ok, [f.check.words for f in r.files]
