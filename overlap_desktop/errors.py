"""The project's error hierarchy and process exit codes.

Every failure a user can cause (a bad file, a hostile manifest, a wrong flag) is an
:class:`OverlapError` carrying the exit code the CLI returns and a message written
for a person. Anything else escaping to the CLI is a bug and exits with
:data:`ExitCode.INTERNAL`.
"""

from __future__ import annotations

import errno
import os
from enum import IntEnum

__all__ = [
    "Cancelled",
    "CheckFailed",
    "ConfigError",
    "DiskFullError",
    "ExitCode",
    "IndexBusyError",
    "IndexError_",
    "InputError",
    "ManifestError",
    "MediaError",
    "MissingDependencyError",
    "OverlapError",
    "UsageError",
    "WRITE_ERRNOS",
    "WriteError",
    "write_failure_reason",
]


class ExitCode(IntEnum):
    """Exit statuses of the ``overlap`` command (documented in docs/cli.md)."""

    OK = 0
    #: A bug: an exception that is not an :class:`OverlapError`.
    INTERNAL = 1
    #: Wrong flags, arguments or configuration values.
    USAGE = 2
    #: A check found what it gates on (overlap over ``--fail-over``, delivery differs).
    CHECK_FAILED = 3
    #: An input was refused: a bad or incompatible file or manifest.
    INPUT_REFUSED = 4
    #: Interrupted by the user (Ctrl-C / Cancel); finished work is kept.
    INTERRUPTED = 130


class OverlapError(Exception):
    """Base of every error the product reports to a user.

    Args:
        message: What went wrong, in plain words.
        path: The file or folder concerned, if any; it is named in :meth:`__str__`.
        detail: Optional technical detail (shown on request, e.g. ``--verbose``).
    """

    exit_code: ExitCode = ExitCode.INTERNAL

    def __init__(self, message: str, *, path: str | os.PathLike[str] | None = None,
                 detail: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = os.fspath(path) if path is not None else None
        self.detail = detail

    def __str__(self) -> str:
        if self.path:
            return f"{self.path}: {self.message}"
        return self.message


class UsageError(OverlapError):
    """Bad command-line usage."""

    exit_code = ExitCode.USAGE


class ConfigError(OverlapError):
    """A configuration value (flag, environment, toml) is invalid."""

    exit_code = ExitCode.USAGE


class InputError(OverlapError):
    """An input file is bad or incompatible and was refused."""

    exit_code = ExitCode.INPUT_REFUSED


class MediaError(InputError):
    """A media file or recording cannot be decoded (zero bytes, truncated, no video...)."""


class ManifestError(InputError):
    """A ``.ovlm`` manifest is malformed, tampered with, or incompatible."""


class IndexError_(InputError):
    """The fingerprint index is unusable (wrong schema, unsupported location...)."""


class IndexBusyError(OverlapError):
    """Another process holds the index for writing."""

    exit_code = ExitCode.USAGE


class WriteError(OverlapError):
    """A file could not be written: a full disk, a file-size limit (``EFBIG`` from
    ``ulimit -f``), a disk quota, a read-only or failing disk. Finished work is kept; the
    fix is outside overlap (free space, raise the limit), so the exit status is 2 like a
    busy index, not 4 (nothing the user gave was refused)."""

    exit_code = ExitCode.USAGE


class DiskFullError(WriteError):
    """The disk holding the index (or an output file) is full; finished work is kept."""


class MissingDependencyError(OverlapError):
    """An optional dependency (e.g. the ``ros`` extra) is not installed."""

    exit_code = ExitCode.USAGE


class CheckFailed(OverlapError):
    """A gate tripped (overlap at/over the threshold, delivery differs from the quote)."""

    exit_code = ExitCode.CHECK_FAILED


class Cancelled(OverlapError):
    """The user cancelled long-running work; finished work has been kept."""

    exit_code = ExitCode.INTERRUPTED

    def __init__(self, message: str = "cancelled; finished work was kept", **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]


#: Plain words for the errors a write can meet, with what to do (``os.strerror`` says
#: only "File too large", which does not tell a user that a limit of theirs is the cause).
_WRITE_REASONS: dict[int, str] = {
    errno.ENOSPC: "no space left on the disk",
    errno.EFBIG: ("file too large: a file-size limit applies to this process (ulimit -f) or the file system "
                  "cannot hold a file this big"),
    errno.EROFS: "the disk is read-only",
    errno.EIO: "input/output error (a failing disk, or a drive or share that was disconnected)",
}
if hasattr(errno, "EDQUOT"):
    _WRITE_REASONS[errno.EDQUOT] = "disk quota exceeded (your share of this disk is used up)"

#: errno values that mean "this write failed for a reason outside overlap".
WRITE_ERRNOS = frozenset(_WRITE_REASONS)


def write_failure_reason(code: int | None, fallback: str = "") -> str:
    """Why a write failed, in plain words, from its ``errno`` (``fallback`` when unknown)."""
    if code and code in _WRITE_REASONS:
        return _WRITE_REASONS[code]
    if code:
        return os.strerror(code)
    return fallback or "write failed"
