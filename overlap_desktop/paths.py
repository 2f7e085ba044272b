"""Platform locations for data and configuration (via platformdirs)."""

from __future__ import annotations

from pathlib import Path

import platformdirs

__all__ = ["APP_NAME", "default_index_dir", "user_config_file", "user_data_folder"]

APP_NAME = "overlap"
APP_AUTHOR = "overlap"


def default_index_dir() -> Path:
    """Where the fingerprint index lives unless ``--index``/``OVERLAP_INDEX`` says otherwise."""
    return Path(platformdirs.user_data_dir(APP_NAME, APP_AUTHOR)) / "index"


def user_config_file() -> Path:
    """The per-user ``overlap.toml`` (lower precedence than ``./overlap.toml``)."""
    return Path(platformdirs.user_config_dir(APP_NAME, APP_AUTHOR)) / "overlap.toml"


def user_data_folder() -> Path:
    """The per-user data folder (the signing key and the known vendors live here; not created)."""
    return Path(platformdirs.user_data_dir(APP_NAME, APP_AUTHOR))
