"""Hostile configuration (issue 21, items 2, 7 and 8).

- A ``./overlap.toml`` in the folder where ``overlap compare`` runs (a vendor's delivery
  folder, say) cannot pass the purchase gate: ``floor_seconds = nan`` once turned a 100 %
  match into 0 % and ``--fail-over 20`` exited 0; now it is refused, naming file and key.
- Every value is checked for type, range and finiteness (``fps = inf``, ``1e308``,
  ``true``, ``threads = 100000``, ``max_message_bytes = 1e30``, ``max_distance = 1000``),
  a known section that is not a table (``index = 5``, ``[[index]]``) is an error, and so
  is a file that is not UTF-8.
- A valid setting that can change a verdict and comes from the current folder's file is
  announced on stderr, recorded in the report's settings and marked by ``overlap config``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from overlap_desktop.config import SETTINGS, load_config
from overlap_desktop.errors import ConfigError
from tests.reliability.lab21 import Lab, run_cli

#: (toml text, key named in the error, words the reason must contain)
BAD = [
    ("[match]\nfloor_seconds = nan\n", "match.floor_seconds", "finite"),
    ("[match]\nfloor_seconds = -inf\n", "match.floor_seconds", "finite"),
    ("[index]\nfps = inf\n", "index.fps", "finite"),
    ("[index]\nfps = 1e308\n", "index.fps", "at most 120"),
    ("[index]\nfps = true\n", "index.fps", "not true/false"),
    ("[index]\nfps = 'fast'\n", "index.fps", "expected a number"),
    ("[index]\nthreads = 100000\n", "index.threads", "at most 64"),
    ("[index]\nthreads = 2.5\n", "index.threads", "whole number"),
    ("[verify]\nthreads = 100000\n", "verify.threads", "at most 64"),
    ("[readers]\nmax_message_bytes = 1e30\n", "readers.max_message_bytes", "at most 1073741824"),
    ("[readers]\nmax_pixels = -1\n", "readers.max_pixels", "at least 1"),
    ("[match]\nmax_distance = 1000\n", "match.max_distance", "at most 96"),
    ("[index]\nquality_floor = 101\n", "index.quality_floor", "at most 100"),
    ("[index]\ncrop_ladder = [0.9, nan]\n", "index.crop_ladder", "finite"),
    ("[index]\npreset = 5\n", "index.preset", "not a number"),
    ("[index]\npath = 5\n", "index.path", "folder path"),
    ("[index]\nstatic_seconds = 0\n", "index.static_seconds", "greater than 0"),
]


@pytest.mark.parametrize(("text", "key", "words"), BAD, ids=[b[0].split("\n")[1] for b in BAD])
def test_bad_values_are_refused_naming_file_and_key(tmp_path: Path, text: str, key: str, words: str) -> None:
    (tmp_path / "overlap.toml").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(cwd=tmp_path, environ={}, user_file=tmp_path / "none.toml")
    msg = str(info.value)
    assert key in msg and str(tmp_path / "overlap.toml") in msg and words in msg, msg
    # The same text as the user's own config, and as an environment value, is refused too.
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_config(cwd=tmp_path / "elsewhere", environ={}, user_file=tmp_path / "overlap.toml")


@pytest.mark.parametrize(("env", "value"), [("OVERLAP_INDEX_FPS", "nan"), ("OVERLAP_INDEX_THREADS", "100000"),
                                            ("OVERLAP_MATCH_FLOOR_SECONDS", "inf")])
def test_bad_environment_values_are_refused(tmp_path: Path, env: str, value: str) -> None:
    with pytest.raises(ConfigError, match=env):
        load_config(cwd=tmp_path, environ={env: value}, user_file=tmp_path / "none.toml")


@pytest.mark.parametrize("text", ["index = 5\n", "[[index]]\nfps = 3\n", "match = 'strict'\n"])
def test_a_known_section_that_is_not_a_table_is_an_error(tmp_path: Path, text: str) -> None:
    (tmp_path / "overlap.toml").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match="must be a table of settings") as info:
        load_config(cwd=tmp_path, environ={}, user_file=tmp_path / "none.toml")
    assert str(tmp_path / "overlap.toml") in str(info.value)


def test_non_utf8_and_oversized_files_are_clear_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "overlap.toml").write_bytes(b"[index]\nfps = 4 # caf\xe9\n")
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(["config"], capsys)
    assert code == 2 and "not valid UTF-8" in err and "overlap.toml" in err and "internal error" not in err, err
    (tmp_path / "overlap.toml").write_bytes(b"# " + b"x" * (1 << 20) + b"\n")
    code, _, err = run_cli(["config"], capsys)
    assert code == 2 and "KiB" in err, err


def test_every_numeric_setting_is_bounded() -> None:
    """No numeric setting accepts an unbounded value (the table is the contract a new key joins)."""
    for key, s in SETTINGS.items():
        try:
            s.parse(1e300)
        except ValueError:
            continue
        except Exception as exc:
            pytest.fail(f"{key}: {type(exc).__name__}: {exc}")
        # Accepted 1e300: only a non-numeric setting may (a path is text, so it refuses a number).
        pytest.fail(f"{key} accepted 1e300")


def test_folder_toml_cannot_pass_the_gate(lab21: Lab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's reproduction: a 100 % match must keep failing ``--fail-over 20``."""
    delivery = tmp_path / "vendor-delivery"
    delivery.mkdir()
    monkeypatch.chdir(delivery)
    code, out, err = run_cli(["compare", lab21.manifest, "--index", lab21.index, "--fail-over", "20", "-q"],
                             capsys)
    assert code == 3 and "100%" in out, (code, out, err)
    (delivery / "overlap.toml").write_text("[match]\nfloor_seconds = nan\n", encoding="utf-8")
    code, out, err = run_cli(["compare", lab21.manifest, "--index", lab21.index, "--fail-over", "20", "-q"],
                             capsys)
    assert code == 2, (code, out, err)
    assert "match.floor_seconds" in err and str(delivery / "overlap.toml") in err and "finite" in err, err


def test_folder_settings_are_announced_recorded_and_shown(lab21: Lab, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    delivery = tmp_path / "vendor-delivery"
    delivery.mkdir()
    monkeypatch.chdir(delivery)
    (delivery / "overlap.toml").write_text("[match]\nfloor_seconds = 60\n", encoding="utf-8")
    report = tmp_path / "report.json"
    code, out, err = run_cli(["compare", lab21.manifest, "--index", lab21.index, "--json", report, "-q"], capsys)
    assert code == 0, (out, err)
    # Stderr says which setting came from which file; the 60 s floor made the 14 s match not count.
    assert "match.floor_seconds = 60" in err and str(delivery / "overlap.toml") in err, err
    assert "0%" in out
    settings = json.loads(report.read_text(encoding="utf-8"))["settings"]
    rows = settings["from_current_folder_overlap_toml"]
    assert rows == [{"key": "match.floor_seconds", "value": 60.0,
                     "source": f"./overlap.toml ({delivery / 'overlap.toml'})"}], rows
    code, out, err = run_cli(["config", "--json"], capsys)
    shown = {r["key"]: r for r in json.loads(out)}
    assert shown["match.floor_seconds"]["from_current_folder"] is True
    assert shown["index.fps"]["from_current_folder"] is False
    code, out, _ = run_cli(["config"], capsys)
    line = next(ln for ln in out.splitlines() if ln.startswith("match.floor_seconds"))
    assert "! ./overlap.toml" in line, out
    assert "! 1 setting that can change results comes from the overlap.toml of the current folder" in out, out
    # The user's own config is not announced: it is theirs.
    (delivery / "overlap.toml").unlink()
    from overlap_desktop.paths import user_config_file

    ufile = user_config_file()
    ufile.parent.mkdir(parents=True, exist_ok=True)
    ufile.write_text("[match]\nfloor_seconds = 60\n", encoding="utf-8")
    code, out, err = run_cli(["compare", lab21.manifest, "--index", lab21.index, "-q"], capsys)
    assert code == 0 and "current folder" not in err, err
