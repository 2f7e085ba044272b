"""Exit codes: one module, the documented table, and what ``main`` returns for each kind of outcome."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from overlap_desktop import errors
from overlap_desktop.cli import framework
from overlap_desktop.cli.main import main
from overlap_desktop.errors import ExitCode

DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_contract_values() -> None:
    assert {c.name: int(c) for c in ExitCode} == {
        "OK": 0, "INTERNAL": 1, "USAGE": 2, "CHECK_FAILED": 3, "INPUT_REFUSED": 4, "INTERRUPTED": 130}


@pytest.mark.parametrize(("cls", "code"), [
    (errors.UsageError, 2), (errors.ConfigError, 2), (errors.InputError, 4), (errors.MediaError, 4),
    (errors.ManifestError, 4), (errors.IndexError_, 4), (errors.IndexBusyError, 2),
    (errors.MissingDependencyError, 2), (errors.CheckFailed, 3), (errors.Cancelled, 130),
    (errors.OverlapError, 1),
])
def test_error_classes_carry_their_exit_code(cls: type[errors.OverlapError], code: int) -> None:
    assert int(cls("x").exit_code) == code


def test_docs_table_lists_every_code() -> None:
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("## Exit codes"):]
    rows = dict(re.findall(r"^\|\s*(\d+)\s*\|\s*`?([A-Z_]+)`?", section, flags=re.M))
    assert {int(k): v for k, v in rows.items()} == {int(c): c.name for c in ExitCode}


def _with_command(monkeypatch: pytest.MonkeyPatch, run: object) -> None:
    cmd = framework.Command("boom", "test command", lambda p: None, run)  # type: ignore[arg-type]
    import importlib

    # The package re-exports ``main``, so reach the module itself.
    monkeypatch.setattr(importlib.import_module("overlap_desktop.cli.main"), "discover_commands",
                        lambda: [cmd])


@pytest.mark.parametrize(("raised", "code", "said"), [
    (KeyboardInterrupt(), 130, "interrupted"),
    (errors.Cancelled(), 130, "cancelled"),
    (errors.MediaError("truncated: no moov atom", path="clip.mp4"), 4, "clip.mp4: truncated"),
    (errors.CheckFailed("overlap 40% >= 20%"), 3, "overlap 40%"),
    (errors.ConfigError("bad value"), 2, "bad value"),
    (RuntimeError("kaboom"), 1, "internal error"),
])
def test_main_maps_outcomes(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                            raised: BaseException, code: int, said: str) -> None:
    def run(args: argparse.Namespace, ctx: framework.CliContext) -> int:
        raise raised

    _with_command(monkeypatch, run)
    assert main(["boom"]) == code
    err = capsys.readouterr().err
    assert said in err
    assert "Traceback" not in err  # only with --verbose


def test_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert main(["index"]) == 2  # PATH is required
    assert main(["no-such-command"]) == 2
    assert main(["config", "--no-such-flag"]) == 2
    capsys.readouterr()


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from overlap_desktop import __version__

    assert main(["--version"]) == 0
    assert __version__ in capsys.readouterr().out
