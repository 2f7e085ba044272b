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

import math
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from overlap_desktop.errors import ConfigError
from overlap_desktop.paths import default_index_dir, user_config_file

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["MAX_CONFIG_BYTES", "SETTINGS", "Config", "Setting", "SettingValue", "load_config"]

SOURCES = ("default", "user config", "./overlap.toml", "environment", "command line")


#: Largest ``overlap.toml`` read (a config file is a few hundred bytes; a bigger one is a mistake).
MAX_CONFIG_BYTES = 1 << 20
#: Longest list value (crop ladders have a handful of rungs).
MAX_LIST_ITEMS = 32


def _number(raw: Any, *, integer: bool) -> float | int:
    """A finite number from a toml value, an environment string or a flag.

    Booleans are refused (``fps = true`` is a mistake, not 1), so are NaN and the
    infinities: a non-finite threshold silently turns every comparison false.
    """
    if isinstance(raw, bool):
        raise ValueError("expected a number, not true/false")
    if isinstance(raw, (int, float)):
        v: float | int = raw
    elif isinstance(raw, str):
        text = raw.strip()
        try:
            v = int(text) if integer else float(text)
        except ValueError:
            try:
                v = float(text)
            except ValueError:
                raise ValueError("expected a number") from None
    else:
        raise ValueError(f"expected a number, not a {_kind(raw)}")
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError("must be a finite number (not nan or inf)")
    if integer:
        if isinstance(v, float):
            if not v.is_integer():
                raise ValueError("expected a whole number")
            v = int(v)
        return int(v)
    return float(v)


def _kind(raw: Any) -> str:
    """What a raw value is, in the words of a settings file."""
    if isinstance(raw, Mapping):
        return "table"
    if isinstance(raw, (list, tuple)):
        return "list"
    if isinstance(raw, bool):
        return "true/false value"
    if isinstance(raw, (int, float)):
        return "number"
    if isinstance(raw, str):
        return "text value"
    return "date or time" if hasattr(raw, "isoformat") else type(raw).__name__


def _bounded(lo: float, hi: float, *, integer: bool = False, lo_open: bool = False,
             unit: str = "") -> Callable[[Any], Any]:
    """A parser for a finite number in ``[lo, hi]`` (``(lo, hi]`` when ``lo_open``).

    Every numeric setting has an upper bound: an unbounded sampling rate, thread
    count or size cap lets one config file exhaust memory or threads.
    """
    def fmt(x: float) -> str:
        return f"{x:g}" if not integer else str(int(x))

    def parse(raw: Any) -> Any:
        v = _number(raw, integer=integer)
        if (v <= lo if lo_open else v < lo) or v > hi:
            low = f"greater than {fmt(lo)}" if lo_open else f"at least {fmt(lo)}"
            raise ValueError(f"must be {low} and at most {fmt(hi)}{unit}")
        return v

    parse.bounds = (lo, hi, integer, lo_open)  # type: ignore[attr-defined]
    return parse


def _float_list(raw: Any) -> tuple[float, ...]:
    if isinstance(raw, str):
        raw = [p for p in raw.replace(" ", "").split(",") if p]
    if not isinstance(raw, (list, tuple)):
        raise ValueError("expected a comma-separated list of numbers")
    if len(raw) > MAX_LIST_ITEMS:
        raise ValueError(f"at most {MAX_LIST_ITEMS} values")
    out = tuple(float(_number(x, integer=False)) for x in raw)
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
    if any(not isinstance(s, str) for s in raw):
        raise ValueError(f"expected side names ({', '.join(allowed)})")
    out = tuple(s.lower() for s in raw)
    for s in out:
        if s not in allowed:
            raise ValueError(f"unknown side {s!r} (use {', '.join(allowed)})")
    return out


# Unbounded helpers kept for settings that need no tighter range; still finite and typed.
def _positive_float(raw: Any) -> float:
    v = float(_number(raw, integer=False))
    if not v > 0:
        raise ValueError("must be greater than 0")
    return v


def _nonneg_float(raw: Any) -> float:
    v = float(_number(raw, integer=False))
    if v < 0:
        raise ValueError("must not be negative")
    return v


def _nonneg_int(raw: Any) -> int:
    v = int(_number(raw, integer=True))
    if v < 0:
        raise ValueError("must not be negative")
    return v


def _choice(*choices: str) -> Callable[[Any], str]:
    def parse(raw: Any) -> str:
        if not isinstance(raw, str):
            raise ValueError(f"expected one of {', '.join(choices)} (a word, not a {_kind(raw)})")
        v = raw.strip().lower()
        if v not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return v

    return parse


def _path(raw: Any) -> Path:
    if isinstance(raw, os.PathLike):
        raw = os.fspath(raw)
    if not isinstance(raw, str):
        raise ValueError(f"expected a folder path (a string, not a {_kind(raw)})")
    if not raw.strip():
        raise ValueError("the path is empty")
    if "\x00" in raw:
        raise ValueError("the path contains a NUL character")
    return Path(os.path.expanduser(raw))


def _bool(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    if not isinstance(raw, (str, int)):
        raise ValueError("expected true or false")
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
    """One configurable value.

    Attributes:
        key: Dotted name (``index.fps``).
        parse: Turns a raw value (toml value, environment string, flag) into the typed
            value; raises ``ValueError`` with a plain reason when it is unusable.
        default: The built-in value.
        help: One line for ``overlap config`` and the settings dialog.
        verdict: The value can change a result (an overlap percentage, a gate, which
            index is compared): the CLI says so when it comes from a folder's
            ``overlap.toml`` rather than the user's own configuration.
    """

    key: str
    parse: Callable[[Any], Any]
    default: Callable[[], Any]
    help: str
    verdict: bool = False

    @property
    def env(self) -> str:
        if self.key == "index.path":
            return "OVERLAP_INDEX"
        return "OVERLAP_" + self.key.upper().replace(".", "_")


def _const(v: Any) -> Callable[[], Any]:
    return lambda: v


#: Upper bound of thread settings: more threads than this only cost memory (each decoder
#: thread holds frames) and, unbounded, one config line could start thousands.
MAX_THREADS = 64
#: Per-frame Hamming distance: unrelated PDQ codes sit ~128 +/- 8 bits apart, so an
#: acceptance radius above 96 (4 standard deviations below) would match unrelated footage.
MAX_MATCH_DISTANCE = 96
#: Sampling rates: sampling above the footage's own frame rate adds nothing, and memory
#: and index size grow linearly with the rate.
MAX_FPS = 120.0

SETTINGS: dict[str, Setting] = {s.key: s for s in [
    Setting("index.path", _path, default_index_dir, "Folder holding the fingerprint index", verdict=True),
    Setting("index.fps", _bounded(0.01, MAX_FPS, unit=" samples per second"), _const(4.0),
            "Samples per second of footage when indexing (below 4 weakens detection)", verdict=True),
    Setting("index.preset", _choice("fast", "balanced", "thorough"), _const("fast"),
            "Variant preset: which crop rungs are hashed besides the upright frame", verdict=True),
    Setting("index.crop_ladder", _float_list, _const(None),
            "Centred crop rungs (fractions kept); empty = the preset's ladder", verdict=True),
    Setting("index.crop_edges", _sides, _const(()),
            "Sides that get a ladder of one-sided edge crops (top,bottom,left,right)", verdict=True),
    Setting("index.edge_ladder", _float_list, _const((0.06, 0.09, 0.12, 0.15, 0.18, 0.21, 0.24)),
            "Depths of the edge-crop ladder, as fractions removed", verdict=True),
    Setting("index.dihedral", _choice("mirror", "all"), _const("mirror"),
            "Orientation variants: mirror only, or all 8 rotations/flips", verdict=True),
    Setting("index.aspect_crops", _float_list, _const(()),
            "Widths kept by centred aspect crops at full height (0.75: 16:9 cropped to 4:3 or 4:3 to "
            "square; 0.5625: 16:9 to square); empty = none", verdict=True),
    Setting("index.quality_floor", _bounded(0, 100, integer=True), _const(50),
            "PDQ quality below which a frame is excluded from matching", verdict=True),
    Setting("index.static_seconds", _bounded(0, 86400.0, lo_open=True, unit=" seconds"), _const(5.0),
            "A static stretch at least this long is reported as indeterminate", verdict=True),
    Setting("index.threads", _bounded(0, MAX_THREADS, integer=True), _const(0),
            "Decoder threads (0 = automatic)"),
    Setting("export.fps", _bounded(0.01, MAX_FPS, unit=" samples per second"), _const(1.0),
            "Fingerprints per second kept in manifests"),
    # Scale-out (issue 18): local worker processes, or the address of a Dask scheduler.
    Setting("index.workers", _bounded(0, 1024, integer=True), _const(0),
            "Files fingerprinted at once in worker processes (0 = one per core, 1 = no worker processes)"),
    Setting("index.cluster", _cluster_address, _const(""),
            "Dask scheduler address (tcp://HOST:8786) to fingerprint on a cluster; empty = this machine"),
    Setting("export.anonymize_paths", _bool, _const(False), "Replace file names in manifests"),
    Setting("match.floor_seconds", _bounded(0, 86400.0, unit=" seconds"), _const(10.0),
            "Evidence floor: shorter matched stretches are listed as below-floor evidence (down to 3/4 of it, "
            "overwhelming evidence still counts)", verdict=True),
    Setting("match.max_distance", _bounded(0, MAX_MATCH_DISTANCE, integer=True), _const(0),
            "Per-frame Hamming distance accepted along a line (0 = the matcher's default)", verdict=True),
    Setting("verify.threads", _bounded(0, MAX_THREADS, integer=True), _const(0),
            "Hashing threads for verify (0 = all cores)"),
    Setting("readers.mcap_time", _choice("log", "header"), _const("log"),
            "Image-topic timestamps in recordings: message log time, or the header stamp", verdict=True),
    Setting("index.frame_rate", _bounded(0, 1000.0, unit=" frames per second"), _const(0.0),
            "Frame rate of robot datasets that store none (ALOHA, RLDS, zarr); 0 = refuse such files",
            verdict=True),
    Setting("readers.image_fps", _bounded(0.01, 1000.0, unit=" frames per second"), _const(30.0),
            "Frame rate of image-sequence folders that do not state one (fps.txt)", verdict=True),
    Setting("readers.max_pixels", _bounded(1, 16384 * 16384, integer=True), _const(8192 * 8192),
            "Largest image (width x height) a recording may declare; larger ones are refused", verdict=True),
    Setting("readers.max_message_bytes", _bounded(1, 1 << 30, integer=True, unit=" bytes"),
            _const(256 * 1024 * 1024),
            "Largest single message or image payload accepted from a recording", verdict=True),
    # Signed quotes (issue 37): pipelines that accept signed offers only.
    Setting("compare.require_signed", _bool, _const(False),
            "Refuse offers that are unsigned or signed with a key other than the one recorded for their vendor"),
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

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def source(self, key: str) -> str:
        return self._values[key].source

    def items_with_source(self) -> list[SettingValue]:
        return [self._values[k] for k in sorted(self._values)]

    def with_value(self, key: str, raw: Any, source: str) -> Config:
        """A copy with ``key`` set to ``raw`` (parsed as the setting parses it) from ``source``.

        Raises:
            ConfigError: the key is unknown or the value unusable.
        """
        setting = SETTINGS.get(key)
        if setting is None:
            raise ConfigError(f"unknown setting {key!r}")
        try:
            value = setting.parse(raw)
        except ValueError as exc:
            raise ConfigError(f"{key} from {source}: {exc}") from exc
        return Config({**self._values, key: SettingValue(key, value, source)})

    @property
    def index_path(self) -> Path:
        return Path(self["index.path"])

    def from_folder_file(self) -> list[SettingValue]:
        """Settings that can change a result and come from the current folder's
        ``overlap.toml`` (not the user's own config, the environment or a flag).

        A vendor's delivery folder may carry an ``overlap.toml``; running ``overlap
        compare`` there must not quietly change thresholds or the index compared.
        """
        return [v for v in self.items_with_source()
                if v.source.startswith("./overlap.toml") and SETTINGS[v.key].verdict]

    def from_folder_file_dicts(self) -> list[dict[str, Any]]:
        """:meth:`from_folder_file` as JSON-ready rows (for a report's settings)."""
        return [{"key": v.key, "value": _jsonable(v.value), "source": v.source} for v in self.from_folder_file()]


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return [_jsonable(x) for x in value]
    return value


#: Deepest table nesting a settings file may use (settings need two: ``[index]`` + key).
MAX_TABLE_DEPTH = 4


def _read_toml(path: Path) -> dict[str, Any]:
    """The settings of one toml file as ``{dotted key: raw value}`` (``{}`` when absent).

    Raises:
        ConfigError: unreadable, too big, not UTF-8, not TOML, or a known section used
            as something other than a table (``index = 5``, ``[[index]]``).
    """
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        return {}
    except IsADirectoryError:
        raise ConfigError("is a folder, not a settings file; remove or rename it", path=path) from None
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", path=path) from exc
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"settings file is over {MAX_CONFIG_BYTES // 1024} KiB; this is not an overlap "
                          "settings file (fix or remove it)", path=path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not valid UTF-8 text (byte {exc.start}); save it as UTF-8 or remove it",
                          path=path) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not valid TOML: {exc}", path=path) from exc
    except RecursionError:  # pragma: no cover - tomllib nests iteratively in current versions
        raise ConfigError("not valid TOML: nested too deeply", path=path) from None
    sections = {k.split(".", 1)[0] for k in SETTINGS}
    flat: dict[str, Any] = {}

    def walk(prefix: str, d: Mapping[str, Any], depth: int = 1) -> None:
        for k, v in d.items():
            key = f"{prefix}.{k}" if prefix else k
            if isinstance(v, Mapping):
                if key in SETTINGS:
                    raise ConfigError(f"{key} must be a value, not a table", path=path)
                if depth >= MAX_TABLE_DEPTH:
                    # `[t.t.t....]` with a thousand parts would recurse a thousand deep (issue 36).
                    shown = key if len(key) <= 60 else key[:57] + "..."
                    raise ConfigError(f"table [{shown}] is nested more than {MAX_TABLE_DEPTH} levels deep; overlap's "
                                      "settings are [section] tables of `key = value` lines; fix or remove it",
                                      path=path)
                walk(key, v, depth + 1)
            elif not prefix and key in sections:
                # `index = 5` or `[[index]]`: the user meant settings, none of which apply.
                raise ConfigError(f"{key!r} must be a table of settings ([{key}] followed by lines like "
                                  f"`{_example(key)}`), not a {_kind(v)}", path=path)
            else:
                flat[key] = v

    walk("", data)
    for key in flat:
        if key not in SETTINGS:
            warnings.warn(f"{path}: unknown setting {key!r} ignored", stacklevel=3)
    return flat


def _example(section: str) -> str:
    key = next(k for k in SETTINGS if k.startswith(section + "."))
    return f"{key.split('.', 1)[1]} = ..."


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
    same_file = _same_file(local_path, user_path)
    layers: list[tuple[str, Mapping[str, Any]]] = [
        ("user config", _read_toml(user_path)),
        # Run from the folder holding the user's own file: it is read once, as the user's.
        ("./overlap.toml", {} if same_file else _read_toml(local_path)),
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
                    value = _parse_layer(setting, layer[key], from_file=name in ("user config", "./overlap.toml"))
                except (TypeError, ValueError, OverflowError) as exc:
                    where = {"environment": setting.env, "user config": str(user_path),
                             "./overlap.toml": str(local_path)}.get(name, "command line")
                    shown = repr(layer[key])
                    if len(shown) > 80:
                        shown = shown[:77] + "..."
                    fix = "; fix or remove it there" if name in ("user config", "./overlap.toml") else ""
                    raise ConfigError(f"bad value {shown} for {key} (from {where}): {exc}{fix}") from exc
                source = name if name not in ("user config", "./overlap.toml") else (
                    f"{name} ({user_path if name == 'user config' else local_path})")
        values[key] = SettingValue(key, value, source)
    return Config(values)


def _parse_layer(setting: Setting, raw: Any, *, from_file: bool) -> Any:
    """``setting.parse(raw)``; an on/off setting in a toml file must be a TOML boolean.

    ``anonymize_paths = "yes"`` (or ``1``, ``"off"``) was accepted silently: a typo such
    as ``"flase"`` is refused, but ``"no"`` quoted in a file would have meant something
    the user may not have meant. Environment variables are text, so there the usual
    words (1/0, true/false, yes/no, on/off) stay accepted.
    """
    if from_file and setting.parse is _bool and not isinstance(raw, bool):
        raise ValueError("must be true or false (a TOML boolean, without quotes)")
    return setting.parse(raw)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
