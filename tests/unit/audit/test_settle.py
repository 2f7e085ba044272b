"""settle_stretches on small generated videos: the library guard, sampling along the line, combining."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from overlap_desktop.core.audit.settle import (
    OpenStretch,
    Settlement,
    sample_times,
    settle_offered,
    settle_stretches,
)
from overlap_desktop.core.audit.settle_frames import frames_at
from overlap_desktop.core.index.walk import sha256_item
from overlap_desktop.core.ingest.readers import reader_for
from overlap_desktop.core.types import CancelToken, Variant
from overlap_desktop.errors import Cancelled
from tests.footage import write_video

FPS = 10.0


def _frames(*, block_x: int, seconds: float = 6.0, flip: bool = False) -> list[np.ndarray]:
    """A textured still scene with a block, and a grey 'arm' sweeping across it."""
    rng = np.random.default_rng(1)
    bg = np.kron(rng.uniform(30, 220, (6, 8, 3)), np.ones((20, 20, 1))).astype(np.uint8)
    bg[80:100, block_x:block_x + 20] = (240, 30, 30)
    out = []
    for k in range(int(seconds * FPS)):
        f = bg.copy()
        x = int(10 + 130 * (k / (seconds * FPS)))
        f[30:90, x:x + 14] = 128
        out.append(f[:, ::-1].copy() if flip else f)
    return out


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("settle")
    return {
        "owned": write_video(d / "owned.mp4", _frames(block_x=20), fps=FPS),
        "copy": write_video(d / "copy.mp4", _frames(block_x=20), fps=FPS, options={"crf": "30"}),
        "mirrored": write_video(d / "mirrored.mp4", _frames(block_x=20, flip=True), fps=FPS, options={"crf": "30"}),
        "twin": write_video(d / "twin.mp4", _frames(block_x=60), fps=FPS, options={"crf": "30"}),
    }


def _stretch(owned: Path, sha: str | None, *, variant: Variant | None = None) -> OpenStretch:
    return OpenStretch("v:0", 0.0, 6.0, owned, "v:0", sha, 0.0, 1.0, variant or Variant(), "several owned episodes")


def test_copy_owned_twin_new_along_the_line(clips: dict[str, Path]) -> None:
    owned = clips["owned"]
    st = _stretch(owned, _sha(owned))
    copy, twin = settle_stretches(clips["copy"], [st])[0], settle_stretches(clips["twin"], [st])[0]
    assert (copy.verdict, twin.verdict) == ("owned", "new"), (copy.reason, twin.reason)
    assert "pixels agree" in copy.reason and "objects moved" in twin.reason
    assert twin.figures["background_cells_over"] >= 6


def test_mirrored_copy_needs_the_variant_undone(clips: dict[str, Path]) -> None:
    owned = clips["owned"]
    undone = settle_stretches(clips["mirrored"], [_stretch(owned, _sha(owned), variant=Variant(mirrored=True))])[0]
    assert undone.verdict == "owned", undone.reason
    # Compared unturned, the same copy is not owned: the mirror really is undone, not ignored.
    assert settle_stretches(clips["mirrored"], [_stretch(owned, _sha(owned))])[0].verdict != "owned"


def test_changed_library_file_is_never_read(clips: dict[str, Path], tmp_path: Path) -> None:
    changed = tmp_path / "owned.mp4"
    changed.write_bytes(clips["owned"].read_bytes())
    recorded = _sha(changed)
    with changed.open("ab") as fh:
        fh.write(b"\0")
    got = settle_stretches(clips["copy"], [_stretch(changed, recorded)])[0]
    assert got.verdict == "cant_tell"
    assert "changed since it was indexed" in got.reason
    assert not got.figures
    missing = settle_stretches(clips["copy"], [_stretch(tmp_path / "gone.mp4", recorded)])[0]
    assert missing.verdict == "cant_tell" and "no longer where" in missing.reason
    no_digest = settle_stretches(clips["copy"], [_stretch(clips["owned"], None)])[0]
    assert no_digest.verdict == "cant_tell" and "no digest" in no_digest.reason


def test_frames_follow_the_line(clips: dict[str, Path]) -> None:
    """A reversed line pairs offered t with owned end - t: the copy read backwards is not owned."""
    owned = clips["owned"]
    st = OpenStretch("v:0", 0.0, 6.0, owned, "v:0", _sha(owned), 5.95, -1.0)
    assert settle_stretches(clips["copy"], [st])[0].verdict != "owned"
    times = sample_times(st)
    assert len(times) == 24 and times[0] > 0.0 and times[-1] < 6.0
    imgs, found = frames_at(owned, "v:0", [0.05, 5.95, 99.0])
    assert found.tolist() == [True, True, False]
    assert imgs.shape == (3, 64, 64, 3) and not imgs[2].any()


def test_progress_and_cancel(clips: dict[str, Path]) -> None:
    owned = clips["owned"]
    seen: list[float] = []
    settle_stretches(clips["copy"], [_stretch(owned, _sha(owned))] * 3, progress=lambda p: seen.append(p.done))
    assert seen[-1] == 3
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        settle_stretches(clips["copy"], [_stretch(owned, _sha(owned))], cancel=token)


def _settled(start: float, end: float, owned: str, verdict: str) -> Settlement:
    st = OpenStretch("v:0", start, end, Path(owned), "v:0", "x", 0.0, 1.0)
    return Settlement(st, verdict, f"{verdict} reason")  # type: ignore[arg-type]


def test_settle_offered_combines_the_candidates_of_one_stretch() -> None:
    spans = settle_offered([
        _settled(0, 10, "a.mp4", "new"), _settled(0, 10, "b.mp4", "owned"),  # one twin copied: owned
        _settled(20, 30, "a.mp4", "new"), _settled(21, 30, "b.mp4", "new"),  # every twin differs: new
        _settled(40, 50, "a.mp4", "new"), _settled(40, 50, "b.mp4", "cant_tell"),  # one open: can't tell
        _settled(60, 70, "a.mp4", "owned"), _settled(60, 70, "b.mp4", "owned"),  # both agree: can't tell
    ])
    assert [(a, b, v) for _, a, b, v, _ in spans] == [(0, 10, "owned"), (20, 30, "new"), (40, 50, "cant_tell"),
                                                      (60, 70, "cant_tell")]
    assert "b.mp4" in spans[0][4] and "several owned files" in spans[3][4]


def test_a_line_that_cannot_be_followed_stays_cant_tell(clips: dict[str, Path]) -> None:
    owned = clips["owned"]
    good = _stretch(owned, _sha(owned))
    bad = [OpenStretch("v:0", 0.0, float("nan"), owned, "v:0", _sha(owned), 0.0, 1.0),
           OpenStretch("v:0", 3.0, 3.0, owned, "v:0", _sha(owned), 0.0, 1.0),
           OpenStretch("v:0", 0.0, 6.0, owned, "v:0", _sha(owned), 0.0, float("inf"))]
    got = settle_stretches(clips["copy"], [bad[0], good, *bad[1:]])
    assert [g.verdict for g in got] == ["cant_tell", "owned", "cant_tell", "cant_tell"]
    assert got[0].stretch is bad[0] and "cannot be followed" in got[0].reason


def test_an_owned_line_does_not_carry_the_rest_of_its_group() -> None:
    """Offered 0-10 s is a copy of a.mp4; 8-16 s lines up with b.mp4 only, whose pixels say new: the
    owned verdict covers 0-10 s, and 10-16 s stays "can't tell" (not every stretch of the group is new)."""
    spans = settle_offered([_settled(0, 10, "a.mp4", "owned"), _settled(8, 16, "b.mp4", "new")])
    assert [(a, b, v) for _, a, b, v, _ in spans] == [(0, 10, "owned"), (10, 16, "cant_tell")]


def test_an_image_folder_is_settled_like_a_video(tmp_path: Path, clips: dict[str, Path]) -> None:
    """Robot footage often arrives as numbered stills: the settle check reads it through the same readers."""
    def folder(name: str, frames: list[np.ndarray]) -> Path:
        d = tmp_path / name
        d.mkdir()
        (d / "fps.txt").write_text(f"{FPS}\n")
        for k, f in enumerate(frames):
            Image.fromarray(f).save(d / f"{k:05d}.png")
        return d

    owned = folder("owned", _frames(block_x=20))
    twin = folder("twin", _frames(block_x=60))
    sha = sha256_item(owned)
    key = reader_for(owned).streams(owned)[0].key
    st = OpenStretch(key, 0.0, 6.0, owned, key, sha, 0.0, 1.0)
    # The delivered video copy against the owned folder, and the twin folder against it.
    copy = settle_stretches(clips["copy"], [OpenStretch("v:0", 0.0, 6.0, owned, key, sha, 0.0, 1.0)])[0]
    assert copy.verdict == "owned", copy.reason
    assert settle_stretches(twin, [st])[0].verdict == "new"
    # A still added to the owned folder after indexing changes its digest: nothing is read.
    Image.fromarray(_frames(block_x=20)[0]).save(owned / "99999.png")
    assert "changed since it was indexed" in settle_stretches(twin, [st])[0].reason
