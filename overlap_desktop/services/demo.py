"""``overlap demo``: the whole job, end to end, on footage generated on the spot.

A newcomer runs one command and sees what the product is for: a small "owned"
corpus is indexed, a vendor "offer" is fingerprinted and exported as a manifest,
and the manifest is compared with the corpus. The offer is planted with known
answers — owned footage slowed to half speed, mirrored, and zoom-cropped, plus
footage the lab has never seen — so the report can be checked against the truth
(:attr:`DemoResult.planted`).

Everything goes through :mod:`overlap_desktop.api`, exactly as a user's own run
would; the footage is rendered by :mod:`overlap_desktop.services.demo_footage` (no test
package, no downloads, no ffmpeg program).
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import platformdirs

from overlap_desktop.core.types import CancelCallback, Progress, ProgressCallback, check_cancel
from overlap_desktop.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Callable

    import numpy as np

    from overlap_desktop.config import Config
    from overlap_desktop.core.report.model import Report

__all__ = ["DEMO_CROP", "DemoResult", "PlantedCopy", "default_demo_dir", "run_demo"]

#: File that marks a folder as made by the demo, so a rerun may clear it (and only it).
MARKER = ".overlap-demo"

#: Fraction kept by the zoom-cropped copy: a rung of the default ("fast") preset's centred
#: crop ladder (core.fingerprint.PRESET_LADDERS), so the default settings catch it. Crops
#: between rungs need a denser ladder (the "balanced" preset); the demo shows the default.
DEMO_CROP = 0.92

FPS = 15.0
SIZE = (320, 240)

# Owned clips: (file name, scene seed, seconds). Small and short, so the demo takes
# seconds, but longer than the 10 s evidence floor.
_OWNED: tuple[tuple[str, int, float], ...] = (
    ("bench-pick-001.mp4", 101, 20.0),
    ("bench-pick-002.mp4", 202, 20.0),
    ("shelf-sort-001.mp4", 303, 20.0),
)
_NEW_SEED = 909


@dataclass(frozen=True)
class PlantedCopy:
    """What the demo planted in one offered file (the truth the report is checked against).

    Attributes:
        offer_file: Name of the offered file.
        owned_file: Name of the owned file it copies, or ``None`` for new footage.
        owned_start, owned_end: Span of the owned file that was copied (seconds).
        speed: Playback speed of the copy relative to the original.
        mirrored: The copy is mirrored left-right.
        crop: Fraction of each dimension kept by a centred zoom-crop (1.0 = none).
        description: Plain words for the printout.
    """

    offer_file: str
    owned_file: str | None
    owned_start: float
    owned_end: float
    speed: float
    mirrored: bool
    crop: float
    description: str


_PLANTED: tuple[PlantedCopy, ...] = (
    PlantedCopy("vendor-0001.mp4", "bench-pick-001.mp4", 3.0, 15.0, 0.5, False, 1.0,
                "12 s of bench-pick-001.mp4 slowed to 0.5x (24 s)"),
    PlantedCopy("vendor-0002.mp4", "bench-pick-002.mp4", 2.0, 18.0, 1.0, True, 1.0,
                "16 s of bench-pick-002.mp4, mirrored"),
    PlantedCopy("vendor-0003.mp4", "shelf-sort-001.mp4", 4.0, 19.0, 1.0, False, DEMO_CROP,
                f"15 s of shelf-sort-001.mp4, zoom-cropped to {round(DEMO_CROP * 100)}%"),
    PlantedCopy("vendor-0004.mp4", None, 0.0, 20.0, 1.0, False, 1.0,
                "20 s of new footage the lab does not own"),
)


@dataclass
class DemoResult:
    """Where the demo put things and what it found.

    Attributes:
        out_dir: The demo folder.
        report_html: The report for people.
        report_json: The report for machines (docs/report-schema.md).
        manifest: The vendor's exported ``.ovlm`` manifest.
        index: The lab's fingerprint index (``overlap --index DIR ...`` works on it).
        owned_dir: The lab's owned footage.
        offer_dir: The vendor's offered footage.
        headline: One sentence answering "how much of this offer do we already own?".
        details: Sentences qualifying the headline (real footage, below-floor evidence).
        planted: What was planted in the offer (the truth).
        report: The comparison report.
        seconds: Wall-clock time the demo took.
    """

    out_dir: Path
    report_html: Path
    report_json: Path
    manifest: Path
    index: Path
    owned_dir: Path
    offer_dir: Path
    headline: str
    details: list[str] = field(default_factory=list)
    planted: tuple[PlantedCopy, ...] = _PLANTED
    report: Report | None = field(default=None, repr=False)
    seconds: float = 0.0


def default_demo_dir() -> Path:
    """The demo folder used when none is given: ``demo`` in the platform data folder."""
    return Path(platformdirs.user_data_dir("overlap", "overlap")) / "demo"


def _prepare(out_dir: Path) -> None:
    """Create ``out_dir`` or clear a previous demo in it; never touch a foreign folder."""
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError("exists and is not a folder", path=out_dir)
    if out_dir.is_dir() and any(out_dir.iterdir()):
        if not (out_dir / MARKER).is_file():
            raise UsageError("folder is not empty and was not made by `overlap demo`; "
                             "choose an empty or new folder with --out", path=out_dir)
        # Our own folder: start again from nothing so a rerun gives the same answer.
        try:
            for child in out_dir.iterdir():
                if child.name == MARKER:
                    continue
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
        except OSError as exc:
            # Windows refuses to delete files another process has open.
            raise UsageError(f"cannot clear the previous demo ({exc.strerror or exc}); close "
                             "whatever has its files open, or choose another folder with --out",
                             path=out_dir) from exc
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / MARKER).write_text("made by `overlap demo`; rerunning the demo clears this folder\n",
                                  encoding="utf-8")


def _frames_checked(frames: Any, cancel: CancelCallback | None) -> Any:
    for img in frames:
        check_cancel(cancel)
        yield img


def _make_footage(owned_dir: Path, offer_dir: Path, *, progress: ProgressCallback | None,
                  cancel: CancelCallback | None) -> None:
    from overlap_desktop.services import demo_footage as df

    scenes = {name: df.DemoScene(seed, size=SIZE, max_seconds=seconds + 1)
              for name, seed, seconds in _OWNED}
    total = len(_OWNED) + len(_PLANTED)
    done = 0
    for name, _seed, seconds in _OWNED:
        if progress:
            progress(Progress("demo-footage", done, total, "files", current=name))
        df.write_clip(owned_dir / name,
                      _frames_checked(df.render(scenes[name], start=0.0, seconds=seconds, fps=FPS), cancel),
                      fps=FPS)
        done += 1
    for plant in _PLANTED:
        if progress:
            progress(Progress("demo-footage", done, total, "files", current=plant.offer_file))
        if plant.owned_file is None:
            scene = df.DemoScene(_NEW_SEED, size=SIZE, max_seconds=plant.owned_end + 1)
        else:
            scene = scenes[plant.owned_file]
        transforms: list[Callable[[np.ndarray], np.ndarray]] = []
        if plant.mirrored:
            transforms.append(df.mirror)
        if plant.crop < 1.0:
            transforms.append(df.centre_crop(plant.crop))

        def transform(img: np.ndarray, steps: list[Any] = transforms) -> np.ndarray:
            for step in steps:
                img = step(img)
            return img

        seconds = (plant.owned_end - plant.owned_start) / plant.speed
        frames = df.render(scene, start=plant.owned_start, seconds=seconds, fps=FPS, speed=plant.speed,
                           transform=transform if transforms else None)
        df.write_clip(offer_dir / plant.offer_file, _frames_checked(frames, cancel), fps=FPS)
        done += 1
    if progress:
        progress(Progress("demo-footage", done, total, "files"))


def _demo_config(index_dir: Path, out_dir: Path) -> Config:
    """Built-in defaults only (plus the index folder), so every machine gets the same answer
    whatever the user's overlap.toml or OVERLAP_* variables say."""
    from overlap_desktop.config import load_config

    return load_config({"index.path": str(index_dir)}, cwd=out_dir, environ={},
                       user_file=out_dir / "no-user-config.toml")


def run_demo(out_dir: Path, *, progress: ProgressCallback | None = None,
             cancel: CancelCallback | None = None) -> DemoResult:
    """Generate a demo corpus and offer, then index, export and compare them.

    Args:
        out_dir: Folder for everything the demo makes (created; a previous demo in it
            is replaced; a non-empty folder not made by the demo is refused).
        progress: Receives :class:`~overlap_desktop.core.types.Progress`. Each step is
            announced with stage ``"demo"`` (``done``/``total`` count steps, ``message``
            names the step); the steps' own progress is passed through unchanged.
        cancel: Returns ``True`` to stop; checked between frames and files.

    Returns:
        The paths of the report, manifest and index, and the headline.

    Raises:
        UsageError: ``out_dir`` is a foreign non-empty folder, not a folder, or a previous
            demo in it cannot be cleared.
        Cancelled: ``cancel`` asked to stop.
        RuntimeError: the generated footage failed to index (a bug, not a user error).
    """
    # The core's functions, not the api's names: services sit beneath the api.
    from overlap_desktop.core.index.indexer import index_paths
    from overlap_desktop.core.index.store import open_index
    from overlap_desktop.core.manifest.export import export_manifest
    from overlap_desktop.core.match.compare import compare
    from overlap_desktop.core.report.html import write_report_html
    from overlap_desktop.core.report.json_io import write_report_json
    from overlap_desktop.core.report.model import DEMO_LIBRARY, OWNED_LIBRARY_SETTING
    from overlap_desktop.core.report.wording import headline, headline_details

    started = time.monotonic()
    out_dir = Path(out_dir).expanduser().resolve()
    owned_dir, offer_dir = out_dir / "owned", out_dir / "offer"
    lab_index, vendor_index = out_dir / "lab-index", out_dir / "vendor-index"
    manifest = out_dir / "demo-offer.ovlm"
    steps = ("Generating demo footage", "Indexing the lab's owned footage",
             "Fingerprinting the vendor's offer", "Exporting the offer's manifest",
             "Comparing the offer with the owned footage", "Writing the report")

    def step(i: int) -> None:
        check_cancel(cancel)
        if progress:
            progress(Progress("demo", i, len(steps), "steps", message=steps[i]))

    _prepare(out_dir)
    step(0)
    _make_footage(owned_dir, offer_dir, progress=progress, cancel=cancel)

    lab_cfg = _demo_config(lab_index, out_dir)
    vendor_cfg = _demo_config(vendor_index, out_dir)

    def index(folder: Path, index_dir: Path, cfg: Config) -> None:
        summary = index_paths([folder], index=index_dir, config=cfg, progress=progress, cancel=cancel)
        if summary.failed:
            # Our own generated footage must index; if it does not, the report would mislead.
            raise RuntimeError(f"demo footage failed to index: {summary.failed}")

    step(1)
    index(owned_dir, lab_index, lab_cfg)
    step(2)
    index(offer_dir, vendor_index, vendor_cfg)
    step(3)
    with open_index(vendor_index, config=vendor_cfg) as idx:
        export_manifest(idx, manifest, label="Demo offer (generated footage)", progress=progress,
                            cancel=cancel)
    step(4)
    report = compare(manifest, lab_index, config=lab_cfg, progress=progress, cancel=cancel)
    # The owned side is the demo's sample library, not the user's footage: the wording says so.
    report.settings[OWNED_LIBRARY_SETTING] = DEMO_LIBRARY
    step(5)
    report_json, report_html = out_dir / "report.json", out_dir / "report.html"
    write_report_json(report, report_json)
    write_report_html(report, report_html)
    if progress:
        progress(Progress("demo", len(steps), len(steps), "steps", message="Done"))
    return DemoResult(out_dir=out_dir, report_html=report_html, report_json=report_json,
                      manifest=manifest, index=lab_index, owned_dir=owned_dir, offer_dir=offer_dir,
                      headline=headline(report), details=headline_details(report), report=report,
                      seconds=time.monotonic() - started)
