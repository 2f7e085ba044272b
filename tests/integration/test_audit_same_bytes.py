"""The pixel second opinion skips a delivered file that is a library file byte for byte (matched
with itself), with the same verdicts as when it decodes both sides; a re-encoded copy of the same
footage is still checked with its pixels."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from overlap_desktop import api
from overlap_desktop.core.audit import pixels, settle
from overlap_desktop.core.audit.run import audit_delivery
from overlap_desktop.core.index.store import open_index
from tests.footage import Scene, make_clip, render_frames, write_video


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("same-bytes")
    (root / "owned").mkdir()
    (root / "delivery").mkdir()
    owned = make_clip(root / "owned" / "take.mp4", 11, duration=10.0, fps=24.0, size=(320, 240))
    shutil.copy(owned, root / "delivery" / "same.mp4")
    write_video(root / "delivery" / "reencoded.mp4",
                render_frames(Scene(11), duration=10.0, fps=24.0, size=(320, 240)), fps=24.0, bit_rate=400_000)
    make_clip(root / "delivery" / "fresh.mp4", 12, duration=10.0, fps=24.0, size=(320, 240))
    api.index_paths([root / "owned"], index=root / "lab", config=api.load_config({"index.path": str(root / "lab")}))
    vendor_cfg = api.load_config({"index.path": str(root / "vendor")})
    api.index_paths([root / "delivery"], index=root / "vendor", config=vendor_cfg)
    with api.open_index(root / "vendor", config=vendor_cfg) as v:
        api.export_manifest(v, root / "quote.ovlm", label="same bytes")
    return {"root": root, "lab": root / "lab", "quote": root / "quote.ovlm", "delivery": root / "delivery"}


def _audit(world: dict[str, Path], tmp: Path, monkeypatch: pytest.MonkeyPatch, *, skip: bool
           ) -> tuple[dict[str, tuple[float, float, float]], list[str]]:
    asked: list[str] = []
    real = settle.settle_stretches

    def recording(path: Path, stretches: Any, **kw: Any) -> Any:
        asked.append(Path(path).name)
        return real(path, stretches, **kw)

    monkeypatch.setattr(settle, "settle_stretches", recording)
    if not skip:
        monkeypatch.setattr(pixels, "same_bytes", lambda *_a: False)
    cfg = api.load_config({"index.path": str(world["lab"])})
    with open_index(world["lab"], config=cfg, readonly=True) as idx:
        r = audit_delivery(world["quote"], world["delivery"], index=idx, config=cfg, crops=False, state_dir=tmp)
    assert r.ok and r.settle == pixels.SETTLED
    finals = {f.name: (f.final.owned, f.final.new, f.final.cant_tell) for f in r.files if f.final is not None}
    return finals, asked


def test_a_byte_copy_is_not_decoded_again_and_the_verdicts_are_those_of_the_pixels(
        world: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checked, asked_all = _audit(world, tmp_path / "a", monkeypatch, skip=False)
    monkeypatch.undo()
    skipped, asked = _audit(world, tmp_path / "b", monkeypatch, skip=True)
    assert "same.mp4" in asked_all and "same.mp4" not in asked
    assert "reencoded.mp4" in asked  # the same footage re-encoded: other bytes, still checked
    assert skipped == checked
    assert skipped["same.mp4"][0] >= 9.0 and skipped["reencoded.mp4"][0] >= 9.0
    assert skipped["fresh.mp4"][0] == 0.0
