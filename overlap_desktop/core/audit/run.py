"""The delivery audit, start to end: :func:`audit_delivery`.

1. Each quoted item delivered under its quoted name is decoded once the way indexing does
   (:mod:`.decode`), its bytes hashed on the side; an interrupted audit continues from what it
   saved (:mod:`.state`).
2. The bytes check (:func:`~overlap_desktop.core.manifest.verify.verify_delivery`) reuses
   those digests; items found only under another name (renamed, anonymised quotes) are decoded
   after it.
3. Each quoted stream's fingerprints are compared with the delivered ones at the quoted times
   (:mod:`.reproduce`).
4. With a library: the quote and the delivered footage are both screened against it as it stood
   before the delivery (:mod:`.rescreen`), the delivered frames' crops searched and can't-tell
   stretches settled with pixels where those checks are installed (:mod:`.finish`).
5. ``add``: the fingerprints the decode made go into the library (:mod:`.add`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from overlap_desktop.core.audit.decode import Decoded, FrameTap, decode_item
from overlap_desktop.core.audit.reproduce import REPRODUCED, check_file, not_checked
from overlap_desktop.core.audit.result import AuditResult, FileAudit
from overlap_desktop.core.audit.state import AuditState, state_key
from overlap_desktop.core.index.fingerprinting import fingerprint_settings
from overlap_desktop.core.index.walk import item_state
from overlap_desktop.core.ingest.fingerprint import ALGO_ID, variants_from_config
from overlap_desktop.core.ingest.frames import grid_time_ns
from overlap_desktop.core.ingest.prep import PREP_ID
from overlap_desktop.core.manifest.format import Manifest, ManifestFile, name_problem
from overlap_desktop.core.manifest.parse import read_manifest
from overlap_desktop.core.manifest.verify import verify_delivery
from overlap_desktop.core.types import NS_PER_S, CancelCallback, Progress, ProgressCallback, Variant, check_cancel
from overlap_desktop.errors import InputError, ManifestError

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.config import Config
    from overlap_desktop.core.index.store import Index

__all__ = ["GRID_RATES", "audit_delivery", "quote_grid"]

#: Sampling rates a quote's times are tried on when they are not on the library's grid
#: (the vendor indexed at another ``index.fps``): the common settings, lowest first.
GRID_RATES: tuple[float, ...] = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 15.0, 20.0, 24.0, 25.0, 30.0,
                                 48.0, 50.0, 60.0, 120.0)


def _on_grid(times: np.ndarray, fps: float) -> bool:
    t = np.asarray(times, np.int64)
    if t.size == 0:
        return True
    k = np.rint(t.astype(np.float64) * fps / NS_PER_S).astype(np.int64)
    return bool(all(grid_time_ns(int(kk), fps) == int(tt) for kk, tt in zip(k, t, strict=True)))


def quote_grid(f: ManifestFile, library_fps: float) -> float | None:
    """The sampling rate whose grid holds every quoted time of ``f``: the library's when it does,
    else the lowest common rate that does, else ``None`` (times on no grid this version samples)."""
    times = [s.fingerprints.times_ns for s in f.streams]
    for fps in (library_fps, *sorted({s.fps for s in f.streams}), *GRID_RATES):
        if fps > 0 and all(_on_grid(t, fps) for t in times):
            return float(fps)
    return None


@dataclass
class _Run:
    """One audit's settings and shared state."""

    m: Manifest
    root: Path
    config: Config
    library_fps: float
    variants: tuple[Variant, ...]
    settings: str
    state: AuditState
    tap: FrameTap | None
    cancel: CancelCallback | None
    emit: Callable[[str, float], None]
    resumed: int = 0


def _delivered_by_name(m: Manifest, root: Path) -> dict[str, Path]:
    """Quoted items present under their quoted name (never a path outside the delivery)."""
    out: dict[str, Path] = {}
    if m.anonymized:
        return out
    real_root = os.path.realpath(root)
    for f in m.files:
        if name_problem(f.name) is not None:
            continue
        p = root / f.name
        try:
            inside = os.path.commonpath([real_root, os.path.realpath(p)]) == real_root
        except ValueError:
            inside = False
        if inside and (p.is_file() or p.is_dir()) and not p.is_symlink():
            out[f.name] = p
    return out


def _decode(run: _Run, rel: str, path: Path, f: ManifestFile) -> tuple[Decoded, Decoded | None]:
    """The item's library-grid decode (resumed or saved) and, when the quote sampled on another
    grid, a second decode on that grid for the check."""
    try:
        state = item_state(path)
    except OSError as exc:
        return Decoded(path=path, error=f"cannot be read ({exc.strerror or exc})"), None
    d = run.state.load_item(rel, path, run.settings, state)
    if d is not None:
        run.resumed += 1
    else:
        resume = run.state.load_progress(rel, run.settings, state, len(run.variants))

        def on_checkpoint(key: str, cp: Any) -> None:
            run.state.save_checkpoint(rel, key, cp, run.settings, state)

        d = decode_item(path, config=run.config, variants=run.variants, name=f.name, tap=run.tap,
                        on_fraction=lambda x: run.emit(rel, x), cancel=run.cancel, resume=resume,
                        on_checkpoint=on_checkpoint)
        run.state.save_item(rel, d, run.settings)
    grid = quote_grid(f, run.library_fps)
    if grid is None or grid == run.library_fps or d.error:
        return d, None
    check = decode_item(path, config=_with_fps(run.config, grid), name=f.name, hash_bytes=False, cancel=run.cancel,
                        on_fraction=lambda x: run.emit(rel, x))
    return d, check


def _slim(d: Decoded, f: ManifestFile) -> Decoded:
    """What the re-screen needs of a decoded item: identity codes at the quoted rate (memory stays
    that of the quote itself, however many variants the library stores)."""
    from overlap_desktop.core.manifest.export import stride_fingerprints

    rate = min((s.fps for s in f.streams), default=0.0)
    streams = [(info, stride_fingerprints(fp, rate) if rate > 0 else stride_fingerprints(fp, fp.fps))
               for info, fp in d.streams]
    return replace(d, streams=streams)


def _decode_and_check(run: _Run, rel: str, path: Path, f: ManifestFile) -> tuple[FileAudit, Decoded, str]:
    """Decode one item, check it, and keep only what the rest of the audit needs."""
    d, on_grid = _decode(run, rel, path, f)
    return _check(run, f, d, on_grid), _slim(d, f), rel


def _check(run: _Run, f: ManifestFile, d: Decoded | None, on_grid: Decoded | None) -> FileAudit:
    floor = int(run.config["index.quality_floor"])
    fa = FileAudit(name=f.name, delivered=None, bytes="missing")
    if d is None:
        fa.check = not_checked(f.name, "it was not delivered")
        return fa
    fa.sha256, fa.warnings = d.sha256, list(d.warnings)
    used = on_grid if on_grid is not None else d
    if used.error:
        fa.check = not_checked(f.name, used.error)
    elif quote_grid(f, run.library_fps) is None:
        fa.check = not_checked(f.name, "its quoted sample times are on no sampling grid this version uses; "
                                       "ask the vendor which overlap version and settings made the quote")
    else:
        fa.check = check_file(f, used.streams, quality_floor=floor, anonymized=run.m.anonymized)
        if fa.check.fingerprints != REPRODUCED and used.path is not None:
            # A second opinion before saying so: the vendor's decoder may not have taken indexing's
            # decoding shortcuts (up to 64 bits on a few samples, bench/bench_audit.py).
            grid = quote_grid(f, run.library_fps) or run.library_fps
            exact = decode_item(used.path, config=_with_fps(run.config, grid), name=f.name, hash_bytes=False,
                                exact=True, cancel=run.cancel)
            if not exact.error:
                fa.check = check_file(f, used.streams, quality_floor=floor, anonymized=run.m.anonymized,
                                      exact=exact.streams)
    return fa


# Over 80 lines only because of its argument list and docstring; the steps are the module's.
def audit_delivery(manifest: Manifest | str | os.PathLike[str], data_dir: str | os.PathLike[str], *,
                   index: Index | None = None, config: Config | None = None, add: bool = False,
                   tap: FrameTap | None = None, crops: bool = True, pixels: bool = True,
                   state_dir: str | os.PathLike[str] | None = None,
                   threads: int = 0, progress: ProgressCallback | None = None,
                   cancel: CancelCallback | None = None) -> AuditResult:
    """Check a delivery against its quote: the bytes, and the fingerprints of what the bytes show.

    Args:
        manifest: The quote (a ``.ovlm`` file or a read :class:`Manifest`).
        data_dir: The delivery folder.
        index: The library, open (writable with ``add``); ``None``: no re-screen, nothing added.
        config: Settings (default: loaded).
        add: Put the delivered items' fingerprints into ``index`` after the re-screen.
        tap: Sees every decoded frame; default with a library and ``crops``: the crop search of the
            delivered frames (:mod:`.crops`), which finds cropped copies a pixel-free quote cannot show.
        crops: Search crops of the delivered frames in the library (needs ``index``).
        pixels: Settle the re-screen's can't tell, and second-check what it counts owned, with both
            sides' pixels (reads the owned library files it matched; needs ``index``).
        state_dir: Where progress is saved for a resume (default: the user data folder, ``audits/``).
        threads: Hashing threads of the bytes check (0 = one per core).
        progress: Receives ``Progress(stage="audit", unit="files")`` (and the re-screen's stages).
        cancel: Polled between frames and files; progress stays saved for the next run.

    Returns:
        An :class:`~overlap_desktop.core.audit.result.AuditResult`; ``ok`` is the exit-0 answer.

    Raises:
        ManifestError: the quote is refused, or uses another hash or normalisation than this version.
        InputError: ``data_dir`` is not a folder.
        Cancelled: ``cancel()`` turned true.
    """
    from overlap_desktop.config import load_config

    config = config if config is not None else load_config()
    m = manifest if isinstance(manifest, Manifest) else read_manifest(manifest)
    root = Path(os.path.abspath(data_dir))
    if not root.is_dir():
        raise InputError("delivery folder not found or not a folder", path=root)
    if m.algo_id != ALGO_ID or m.prep_id != PREP_ID:
        raise ManifestError(f"cannot audit this quote: its fingerprints use algo {m.algo_id!r} / prep "
                            f"{m.prep_id!r}, this version computes {ALGO_ID!r} / {PREP_ID!r}; audit with the "
                            "overlap version the vendor used", path=m.path)
    variants = tuple(variants_from_config(config)) if add else (Variant(),)
    if tap is None and crops and index is not None:
        from overlap_desktop.core.audit.crops import crop_tap

        tap = crop_tap(config)
    settings = fingerprint_settings(config, variants)
    state = AuditState(_state_folder(state_dir) / state_key(m.root, root, settings))
    total = len(m.files)
    done = [0]

    def emit(current: str, frac: float) -> None:
        if progress is not None:
            progress(Progress(stage="audit", done=done[0] + frac, total=total, unit="files", current=current,
                              current_done=frac))

    run = _Run(m, root, config, float(config["index.fps"]), variants, settings, state, tap, cancel, emit)
    by_name = _delivered_by_name(m, root)
    checked: dict[str, tuple[FileAudit, Decoded, str]] = {}
    for f in m.files:
        check_cancel(cancel)
        if f.name in by_name:
            checked[f.name] = _decode_and_check(run, f.name, by_name[f.name], f)
        done[0] += 1
    known = {name: (d.size, d.sha256) for name, (_, d, _) in checked.items() if d.sha256}
    v = verify_delivery(m, root, threads=threads, cancel=cancel, known=known)
    result = AuditResult(verify=v)
    entries = {e.name: e for e in v.entries}
    for f in m.files:
        e = entries.get(f.name)
        if e is not None and e.delivered and f.name not in checked and e.status == "matched":
            # Found under another name by its bytes: decoded now (its bytes were read by the check).
            checked[f.name] = _decode_and_check(run, e.delivered, root / e.delivered, f)
        fa = checked[f.name][0] if f.name in checked else _check(run, f, None, None)
        if e is not None:
            fa.bytes, fa.delivered = e.status, e.delivered
            fa.sha256 = fa.sha256 or e.delivered_sha256
        result.files.append(fa)
    result.resumed = run.resumed
    if index is not None:
        from overlap_desktop.core.audit.finish import rescreen_and_add

        def full(name: str) -> Decoded | None:
            """The item's whole decode (every variant), read back from the saved progress."""
            _, slim, rel = checked[name]
            try:
                got = state.load_item(rel, slim.path, settings, item_state(slim.path))
            except OSError:
                return None
            if got is None:  # not saved (a full disk): decoded again
                got = decode_item(slim.path, config=config, variants=variants, name=name, cancel=cancel)
            return got

        rescreen_and_add(result, m, {k: d for k, (_, d, _) in checked.items()}, index, config=config, add=add,
                         tap=tap, full=full, settings=settings, pixels=pixels, progress=progress, cancel=cancel)
    state.clear()
    return result


def _with_fps(config: Config, fps: float) -> Config:
    """``config`` sampling at ``fps`` (the quote's grid, for its check only)."""
    from overlap_desktop.config import Config, SettingValue

    values = {k: SettingValue(k, config[k], config.source(k)) for k in config}
    values["index.fps"] = SettingValue("index.fps", float(fps), "audit")
    return Config(values)


def _state_folder(state_dir: str | os.PathLike[str] | None) -> Path:
    if state_dir is not None:
        return Path(state_dir)
    from overlap_desktop.paths import user_data_folder

    return user_data_folder() / "audits"
