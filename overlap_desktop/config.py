"""Effective settings with provenance.

Precedence, highest first: command-line flag > ``OVERLAP_*`` environment variable >
``./overlap.toml`` > the user's ``overlap.toml`` (platformdirs) > built-in default.
Every value remembers where it came from so ``overlap config`` and the GUI's
settings dialog can say so.

Keys are dotted (``index.fps``). The environment name of a key is ``OVERLAP_`` plus
the key upper-cased with dots as underscores (``OVERLAP_INDEX_FPS``), except
``index.path`` whose variable is ``OVERLAP_INDEX``. In a toml file the key is
written as a table entry (``[index]`` / ``fps = 4``).
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from overlap_desktop.errors import ConfigError
from overlap_desktop.paths import default_index_dir, user_config_file

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["SETTINGS", "Config", "Setting", "SettingValue", "load_config"]

SOURCES = ("default", "user config", "./overlap.toml", "environment", "command line")


def _float_list(raw: Any) -> tuple[float, ...]:
    if isinstance(raw, str):
        raw = [p for p in raw.replace(" ", "").split(",") if p]
    if not isinstance(raw, (list, tuple)):
        raise ValueError("expected a comma-separated list of numbers")
    out = tuple(float(x) for x in raw)
    for x in out:
        if not 0.0 < x < 1.0:
            raise ValueError(f"{x} is not a fraction between 0 and 1")
    return out


def _sides(raw: Any) -> tuple[str, ...]:
    if isinstance(raw, str):
        raw = [p for p in raw.replace(" ", "").split(",") if p]
    if not isinstance(raw, (list, tuple)):
        raise ValueError("expected a comma-separated list of sides")
    allowed = ("top", "bottom", "left", "right")
    out = tuple(str(s).lower() for s in raw)
    for s in out:
        if s not in allowed:
            raise ValueError(f"unknown side {s!r} (use {', '.join(allowed)})")
    return out


def _positive_float(raw: Any) -> float:
    v = float(raw)
    if not v > 0:
        raise ValueError("must be greater than 0")
    return v


def _nonneg_float(raw: Any) -> float:
    v = float(raw)
    if v < 0:
        raise ValueError("must not be negative")
    return v


def _nonneg_int(raw: Any) -> int:
    if isinstance(raw, bool):
        raise ValueError("expected a whole number")
    v = int(raw)
    if v < 0:
        raise ValueError("must not be negative")
    return v


def _choice(*choices: str) -> Callable[[Any], str]:
    def parse(raw: Any) -> str:
        v = str(raw).lower()
        if v not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return v

    return parse


def _path(raw: Any) -> Path:
    return Path(os.path.expanduser(str(raw)))


def _bool(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    s = str(raw).strip().lower()
    if s in ("1", "true", "yes", "on"):
        return True
    if s in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected true or false")


def _cluster_address(raw: Any) -> str:
    """A Dask scheduler address such as ``tcp://host:8786``, or empty for none."""
    v = str(raw or "").strip()
    if v and "://" not in v:
        raise ValueError("expected a scheduler address such as tcp://HOST:8786")
    return v


@dataclass(frozen=True)
class Setting:
    """One configurable value."""

    key: str
    parse: Callable[[Any], Any]
    default: Callable[[], Any]
    help: str

    @property
    def env(self) -> str:
        if self.key == "index.path":
            return "OVERLAP_INDEX"
        return "OVERLAP_" + self.key.upper().replace(".", "_")


def _const(v: Any) -> Callable[[], Any]:
    return lambda: v


SETTINGS: dict[str, Setting] = {s.key: s for s in [
    Setting("index.path", _path, default_index_dir, "Folder holding the fingerprint index"),
    Setting("index.fps", _positive_float, _const(4.0),
            "Samples per second of footage when indexing (below 4 weakens detection)"),
    Setting("index.preset", _choice("fast", "balanced", "thorough"), _const("fast"),
            "Variant preset: which crop rungs are hashed besides the upright frame"),
    Setting("index.crop_ladder", _float_list, _const(None),
            "Centred crop rungs (fractions kept); empty = the preset's ladder"),
    Setting("index.crop_edges", _sides, _const(()),
            "Sides that get a ladder of one-sided edge crops (top,bottom,left,right)"),
    Setting("index.edge_ladder", _float_list, _const((0.06, 0.09, 0.12, 0.15, 0.18, 0.21, 0.24)),
            "Depths of the edge-crop ladder, as fractions removed"),
    Setting("index.dihedral", _choice("mirror", "all"), _const("mirror"),
            "Orientation variants: mirror only, or all 8 rotations/flips"),
    Setting("index.quality_floor", _nonneg_int, _const(50),
            "PDQ quality below which a frame is excluded from matching"),
    Setting("index.static_seconds", _positive_float, _const(5.0),
            "A static stretch at least this long is reported as indeterminate"),
    Setting("index.threads", _nonneg_int, _const(0), "Decoder threads (0 = automatic)"),
    # Scale-out (issue 18): local worker processes, or the address of a Dask scheduler.
    Setting("index.workers", _nonneg_int, _const(0),
            "Files fingerprinted at once in worker processes (0 = one per core, 1 = no worker processes)"),
    Setting("index.cluster", _cluster_address, _const(""),
            "Dask scheduler address (tcp://HOST:8786) to fingerprint on a cluster; empty = this machine"),
    Setting("export.fps", _positive_float, _const(1.0), "Fingerprints per second kept in manifests"),
    Setting("export.anonymize_paths", _bool, _const(False), "Replace file names in manifests"),
    Setting("match.floor_seconds", _nonneg_float, _const(10.0),
            "Evidence floor: shorter matched stretches are listed as below-floor evidence"),
    Setting("match.max_distance", _nonneg_int, _const(0),
            "Per-frame Hamming distance accepted along a line (0 = the matcher's default)"),
    Setting("verify.threads", _nonneg_int, _const(0), "Hashing threads for verify (0 = all cores)"),
    Setting("readers.mcap_time", _choice("log", "header"), _const("log"),
            "Image-topic timestamps in recordings: message log time, or the header stamp"),
    Setting("readers.image_fps", _positive_float, _const(30.0),
            "Frame rate of image-sequence folders that do not state one (fps.txt)"),
    Setting("readers.max_pixels", _nonneg_int, _const(8192 * 8192),
            "Largest image (width x height) a recording may declare; larger ones are refused"),
    Setting("readers.max_message_bytes", _nonneg_int, _const(256 * 1024 * 1024),
            "Largest single message or image payload accepted from a recording"),
]}


@dataclass(frozen=True)
class SettingValue:
    """An effective value and where it came from (one of :data:`SOURCES`, plus the file)."""

    key: str
    value: Any
    source: str


class Config(Mapping[str, Any]):
    """Resolved settings: ``config["index.fps"]`` and ``config.source("index.fps")``."""

    def __init__(self, values: dict[str, SettingValue]) -> None:
        self._values = values

    def __getitem__(self, key: str) -> Any:
        return self._values[key].value

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def source(self, key: str) -> str:
        return self._values[key].source

    def items_with_source(self) -> list[SettingValue]:
        return [self._values[k] for k in sorted(self._values)]

    @property
    def index_path(self) -> Path:
        return Path(self["index.path"])


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not valid TOML: {exc}", path=path) from exc
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", path=path) from exc
    flat: dict[str, Any] = {}

    def walk(prefix: str, d: Mapping[str, Any]) -> None:
        for k, v in d.items():
            key = f"{prefix}.{k}" if prefix else k
            if isinstance(v, Mapping):
                walk(key, v)
            else:
                flat[key] = v

    walk("", data)
    for key in flat:
        if key not in SETTINGS:
            warnings.warn(f"{path}: unknown setting {key!r} ignored", stacklevel=3)
    return flat


def load_config(overrides: Mapping[str, Any] | None = None, *, cwd: Path | None = None,
                environ: Mapping[str, str] | None = None,
                user_file: Path | None = None) -> Config:
    """Resolve every setting.

    Args:
        overrides: Values given on the command line (or by the GUI); ``None`` values
            are ignored so argparse defaults of ``None`` do not override anything.
        cwd: Folder whose ``overlap.toml`` is read (default: the current folder).
        environ: Environment to read (default: ``os.environ``).
        user_file: The user config file (default: platformdirs location).

    Raises:
        ConfigError: a value does not parse; the message names the key and its source.
    """
    environ = os.environ if environ is None else environ
    cwd = Path.cwd() if cwd is None else cwd
    local_path = cwd / "overlap.toml"
    user_path = user_config_file() if user_file is None else user_file
    layers: list[tuple[str, Mapping[str, Any]]] = [
        ("user config", _read_toml(user_path)),
        ("./overlap.toml", _read_toml(local_path)),
        ("environment", {k: environ[s.env] for k, s in SETTINGS.items() if s.env in environ}),
        ("command line", {k: v for k, v in (overrides or {}).items() if v is not None}),
    ]
    for _, layer in layers[3:]:
        for key in layer:
            if key not in SETTINGS:
                raise ConfigError(f"unknown setting {key!r}")
    values: dict[str, SettingValue] = {}
    for key, setting in SETTINGS.items():
        value, source = setting.default(), "default"
        for name, layer in layers:
            if key in layer:
                try:
                    value = setting.parse(layer[key])
                except (TypeError, ValueError) as exc:
                    where = {"environment": setting.env, "user config": str(user_path),
                             "./overlap.toml": str(local_path)}.get(name, "command line")
                    raise ConfigError(f"bad value {layer[key]!r} for {key} (from {where}): {exc}") from exc
                source = name if name not in ("user config", "./overlap.toml") else (
                    f"{name} ({user_path if name == 'user config' else local_path})")
        values[key] = SettingValue(key, value, source)
    return Config(values)
