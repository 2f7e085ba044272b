"""The owned-frame preview shows the exact frame at a time, whatever indexing set up before it."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from overlap_desktop import api
from overlap_desktop.core.ingest.readers import reader_for
from tests.footage import Scene, render_frames, write_video


def test_preview_decodes_the_exact_frame_after_the_reader_was_set_up_for_indexing(tmp_path: Path) -> None:
    # 30 fps with B-frames (x264 veryfast): at 4 samples/s many frames are skippable.
    frames = list(render_frames(Scene(5, velocity=(90.0, 0.0)), duration=2.0, fps=30.0, size=(160, 96)))
    clip = write_video(tmp_path / "clip.mp4", frames, fps=30.0, options={"preset": "veryfast"})
    reader = reader_for(clip)
    [stream] = reader.streams(clip)
    moments = [(k + 0.5) / 30 for k in range(60)]  # the middle of every frame's time on screen
    exact = [api.frame_at(clip, stream.key, t, max_size=(160, 96)) for t in moments]

    # Indexing configures the shared reader to decode only what its 4 Hz sampler uses...
    reader.configure(api.load_config())  # type: ignore[attr-defined]
    assert len(list(reader.frames(clip, stream))) < 60  # ...so it does skip frames here
    after = [api.frame_at(clip, stream.key, t, max_size=(160, 96)) for t in moments]
    assert all(np.array_equal(a, b) for a, b in zip(after, exact))
    assert getattr(reader, "sample_fps", None), "the preview must not change the shared reader"
