"""The forged-quote delivery shared by the audit tests (CLI, core and app).

The lab owns clip0 (scene 11) and clip1 (scene 12). The vendor delivers ``take-07.mp4``, a
re-encoded copy of clip0, and ``fresh.mp4`` (scene 14, never owned). The forged quote gives
``take-07.mp4`` its own name, size and SHA-256 but the fingerprints of other, unowned footage
(scene 13), Merkle root re-sealed: the screen reads it new and the bytes check passes. The honest
quote is the vendor's own export of the delivery.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from overlap_desktop.cli.main import main
from overlap_desktop.core.manifest.export import write_manifest
from overlap_desktop.core.manifest.format import ManifestFile
from overlap_desktop.core.manifest.parse import read_manifest
from tests.footage import Scene, make_clip, render_frames, write_video

__all__ = ["CLIP_S", "build_world"]

SIZE = (160, 120)
FPS = 12.0
CLIP_S = 12.0


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def build_world(root: Path) -> dict[str, Path]:
    """Footage, the lab's library, the honest and the forged quote under ``root``."""
    make_clip(root / "owned" / "clip0.mp4", 11, duration=CLIP_S, fps=FPS, size=SIZE)
    make_clip(root / "owned" / "clip1.mp4", 12, duration=CLIP_S, fps=FPS, size=SIZE)
    # The re-encoded copy: same scene, another encoder setting (different bytes).
    write_video(root / "delivery" / "take-07.mp4", render_frames(Scene(11), duration=CLIP_S, fps=FPS, size=SIZE),
                fps=FPS, options={"preset": "veryfast", "crf": "28"})
    make_clip(root / "delivery" / "fresh.mp4", 14, duration=CLIP_S, fps=FPS, size=SIZE)
    make_clip(root / "other" / "unowned.mp4", 13, duration=CLIP_S, fps=FPS, size=SIZE)
    for src, ix in (("owned", "lab"), ("delivery", "vendor"), ("other", "vendor-other")):
        assert main(["index", str(root / src), "--index", str(root / ix), "-q"]) == 0
    for ix, out in (("vendor", "honest.ovlm"), ("vendor-other", "other.ovlm")):
        assert main(["export", "-o", str(root / out), "--index", str(root / ix), "--no-sign", "-q"]) == 0
    honest = read_manifest(root / "honest.ovlm")
    other = read_manifest(root / "other.ovlm")
    take = root / "delivery" / "take-07.mp4"
    forged = []
    for f in honest.files:
        if f.name == "take-07.mp4":
            # The copy's own name, size and digest; another footage's fingerprints.
            f = ManifestFile(f.name, take.stat().st_size, _sha(take), f.duration_s, other.files[0].streams)
        forged.append(f)
    write_manifest(forged, root / "forged.ovlm", algo_id=honest.algo_id, prep_id=honest.prep_id, label="forged")
    return {"root": root, "lab": root / "lab", "delivery": root / "delivery", "honest": root / "honest.ovlm",
            "forged": root / "forged.ovlm"}
