"""same_bytes: only the delivered file matched with itself skips the pixel second opinion."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from overlap_desktop.core.audit.pixels import same_bytes
from overlap_desktop.core.audit.settle import OpenStretch
from overlap_desktop.core.types import Variant

SELF = OpenStretch("v:0", 2.0, 12.0, Path("lib/take.mp4"), "v:0", "ab" * 32, 2.04, 1.0, Variant(), "counted")


def test_the_file_matched_with_itself() -> None:
    assert same_bytes(SELF, "ab" * 32)


def test_anything_else_is_checked_with_pixels() -> None:
    assert not same_bytes(SELF, None)
    assert not same_bytes(SELF, "cd" * 32)  # other bytes (a re-encode)
    assert not same_bytes(replace(SELF, owned_sha256=None), "ab" * 32)
    assert not same_bytes(replace(SELF, owned_start_s=7.0), "ab" * 32)  # another moment of the same file
    assert not same_bytes(replace(SELF, owned_start_s=2.2), "ab" * 32)
    assert not same_bytes(replace(SELF, speed=1.05), "ab" * 32)  # drifts 0.5 s over the stretch
    assert not same_bytes(replace(SELF, speed=-1.0), "ab" * 32)
    assert not same_bytes(replace(SELF, variant=Variant(mirrored=True)), "ab" * 32)
    assert not same_bytes(replace(SELF, owned_stream="v:1"), "ab" * 32)
