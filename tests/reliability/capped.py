"""Run ``overlap`` in a subprocess under the round-three limits (issue 36).

Every hostile input of this round goes through the real CLI in its own process with
``RLIMIT_AS`` = 2 GiB (what the attacker's input may make overlap allocate, interpreter
included) and a 60 s guard (a hang guard, not a speed assertion). ``fsize`` adds a
file-size limit (``ulimit -f``) with SIGXFSZ ignored, so a write past it fails with EFBIG
instead of killing the process.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GiB = 1 << 30
#: Address space each command may use (the attack budget of issues 21 and 36).
MEMORY_CAP = 2 * GiB
#: Seconds after which a command counts as hung.
HANG_GUARD_S = 60.0


@dataclass(frozen=True)
class Ran:
    """A finished ``overlap`` process: exit status and both streams."""

    code: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err

    def assert_plain(self) -> None:
        """No traceback, no internal error, no MemoryError: what a user must never see."""
        assert "Traceback" not in self.text, self.text[-3000:]
        assert "internal error" not in self.text, self.text[-3000:]
        assert "MemoryError" not in self.text, self.text[-3000:]


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    e.pop("OVERLAP_INDEX", None)
    return e


def _limits(fsize: int | None) -> Callable[[], None]:
    def apply() -> None:  # runs in the child before exec
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
        if fsize is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    return apply


def overlap(*args: object, cwd: Path, fsize: int | None = None, home: Path | None = None) -> Ran:
    """``overlap ARGS`` in a subprocess under 2 GiB (and ``fsize`` bytes per file, if given);
    the user's own configuration and caches are a private ``home`` (default: ``cwd/.home``)."""
    e = env()
    home = home if home is not None else cwd / ".home"
    e["HOME"] = str(home)
    e["XDG_CONFIG_HOME"] = str(home / ".config")
    e["XDG_CACHE_HOME"] = str(home / ".cache")
    e["XDG_DATA_HOME"] = str(home / ".local" / "share")
    try:
        proc = subprocess.run([sys.executable, "-m", "overlap_desktop", *map(str, args)], env=e, text=True,
                              capture_output=True, timeout=HANG_GUARD_S, preexec_fn=_limits(fsize), cwd=str(cwd),
                              check=False)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"overlap {' '.join(map(str, args))} did not finish within {HANG_GUARD_S:.0f} s (hung?); "
                    f"stderr so far: {exc.stderr!r}")
    return Ran(proc.returncode, proc.stdout, proc.stderr)
