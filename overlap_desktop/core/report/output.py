"""Writing report files: atomic replacement and the JSON text every report file uses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from overlap_desktop.core.fsutil import atomic_write_bytes
from overlap_desktop.errors import InputError

__all__ = ["dumps_json", "write_atomically"]


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so readers see the old file or the whole new one.

    Raises:
        InputError: the destination cannot be written (the message names it).
    """
    atomic_write_bytes(path, data, error_type=InputError, open_message="cannot write here",
                       write_message="cannot write", make_parents=True)


def dumps_json(data: Any) -> bytes:
    """``data`` as indented UTF-8 JSON with a final newline (NaN refused)."""
    text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False)
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate from a hostile name cannot be UTF-8: \u-escape everything.
        return (json.dumps(data, indent=2, ensure_ascii=True, allow_nan=False) + "\n").encode("ascii")

