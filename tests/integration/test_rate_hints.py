"""A dataset that does not store its frame rate is refused with an example for its own format
(robomimic files were told "e.g. --frame-rate 50 for ALOHA"), before any frame is decoded."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("h5py")
pytest.importorskip("zarr")
pytest.importorskip("google_crc32c")

from overlap_desktop.core.ingest.readers.hdf5.aloha import AlohaReader
from overlap_desktop.core.ingest.readers.hdf5.robomimic import RobomimicReader
from overlap_desktop.core.ingest.readers.rlds.reader import RldsReader
from overlap_desktop.core.ingest.readers.zarrbuf.reader import ZarrReader
from overlap_desktop.errors import MediaError
from tests.robotdata import write_aloha, write_rlds, write_robomimic, write_zarr

FRAMES = np.zeros((4, 16, 16, 3), np.uint8)


@pytest.mark.parametrize(("make", "reader", "example", "not_said"), [
    (lambda d: write_aloha(d / "episode_0.hdf5", {"cam_high": FRAMES}), AlohaReader, "50 for ALOHA", "robomimic"),
    (lambda d: write_robomimic(d / "demo.hdf5", [{"agentview_image": FRAMES}], control_freq=None), RobomimicReader,
     "20 for robomimic", "ALOHA"),
    (lambda d: write_zarr(d / "buffer.zarr", [{"camera0_rgb": FRAMES}]), ZarrReader, "push-T", "ALOHA"),
    (lambda d: write_rlds(d / "ds" / "1.0.0", [{"image": FRAMES}]), RldsReader, "dataset's card", "ALOHA"),
])
def test_each_format_gets_its_own_rate_example(tmp_path: Path, make: object, reader: type, example: str,
                                               not_said: str) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    with pytest.raises(MediaError) as info:
        reader().streams(path)
    text = str(info.value)
    assert "--frame-rate" in text and example in text and not_said not in text, text
