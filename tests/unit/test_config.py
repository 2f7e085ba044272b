"""Configuration precedence: flag > OVERLAP_* environment > ./overlap.toml > user config > default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from overlap_desktop.config import SETTINGS, load_config
from overlap_desktop.errors import ConfigError


def _toml(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_each_layer_overrides_the_one_below(tmp_path: Path) -> None:
    user = _toml(tmp_path / "user" / "overlap.toml", "[index]\nfps = 5\npreset = 'balanced'\n"
                                                      "quality_floor = 40\nstatic_seconds = 7\n")
    cwd = tmp_path / "work"
    _toml(cwd / "overlap.toml", "[index]\nfps = 6\npreset = 'thorough'\nquality_floor = 45\n")
    env = {"OVERLAP_INDEX_FPS": "7", "OVERLAP_INDEX_PRESET": "fast"}
    cfg = load_config({"index.fps": 8.0, "index.preset": None}, cwd=cwd, environ=env, user_file=user)

    assert cfg["index.fps"] == 8.0 and cfg.source("index.fps") == "command line"
    # A None flag (argparse default) overrides nothing.
    assert cfg["index.preset"] == "fast" and cfg.source("index.preset") == "environment"
    assert cfg["index.quality_floor"] == 45
    assert cfg.source("index.quality_floor") == f"./overlap.toml ({cwd / 'overlap.toml'})"
    assert cfg["index.static_seconds"] == 7.0
    assert cfg.source("index.static_seconds") == f"user config ({user})"
    assert cfg["match.floor_seconds"] == 10.0 and cfg.source("match.floor_seconds") == "default"


def test_every_setting_has_a_value_a_source_and_an_env_name(tmp_path: Path) -> None:
    cfg = load_config(cwd=tmp_path, environ={}, user_file=tmp_path / "none.toml")
    rows = cfg.items_with_source()
    assert [r.key for r in rows] == sorted(SETTINGS)
    assert all(r.source == "default" for r in rows)
    assert SETTINGS["index.path"].env == "OVERLAP_INDEX"
    assert SETTINGS["index.fps"].env == "OVERLAP_INDEX_FPS"
    assert SETTINGS["match.floor_seconds"].env == "OVERLAP_MATCH_FLOOR_SECONDS"


def test_index_path_from_env_and_flag(tmp_path: Path) -> None:
    env = {"OVERLAP_INDEX": str(tmp_path / "env-ix")}
    cfg = load_config(cwd=tmp_path, environ=env, user_file=tmp_path / "none.toml")
    assert cfg.index_path == tmp_path / "env-ix" and cfg.source("index.path") == "environment"
    cfg = load_config({"index.path": str(tmp_path / "flag-ix")}, cwd=tmp_path, environ=env,
                      user_file=tmp_path / "none.toml")
    assert cfg.index_path == tmp_path / "flag-ix" and cfg.source("index.path") == "command line"


def test_lists_parse_from_env_and_toml(tmp_path: Path) -> None:
    _toml(tmp_path / "overlap.toml", "[index]\ncrop_ladder = [0.9, 0.8]\n")
    cfg = load_config(cwd=tmp_path, environ={"OVERLAP_INDEX_CROP_EDGES": "bottom, top"},
                      user_file=tmp_path / "none.toml")
    assert cfg["index.crop_ladder"] == (0.9, 0.8)
    assert cfg["index.crop_edges"] == ("bottom", "top")
    cfg = load_config({"index.crop_ladder": ""}, cwd=tmp_path, environ={}, user_file=tmp_path / "none.toml")
    assert cfg["index.crop_ladder"] == () and cfg.source("index.crop_ladder") == "command line"


@pytest.mark.parametrize(("layer", "where"), [("env", "OVERLAP_INDEX_FPS"), ("toml", "overlap.toml"),
                                              ("flag", "command line")])
def test_bad_values_name_key_and_source(tmp_path: Path, layer: str, where: str) -> None:
    env = {"OVERLAP_INDEX_FPS": "fast"} if layer == "env" else {}
    if layer == "toml":
        _toml(tmp_path / "overlap.toml", "[index]\nfps = -1\n")
    flags = {"index.fps": "0"} if layer == "flag" else None
    with pytest.raises(ConfigError, match=f"index.fps.*{where}"):
        load_config(flags, cwd=tmp_path, environ=env, user_file=tmp_path / "none.toml")


def test_broken_toml_and_unknown_keys(tmp_path: Path) -> None:
    _toml(tmp_path / "overlap.toml", "[index\nfps = 4\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(cwd=tmp_path, environ={}, user_file=tmp_path / "none.toml")
    _toml(tmp_path / "overlap.toml", "[index]\nfsp = 4\n")
    with pytest.warns(UserWarning, match="unknown setting 'index.fsp'"):
        load_config(cwd=tmp_path, environ={}, user_file=tmp_path / "none.toml")
    (tmp_path / "overlap.toml").unlink()
    with pytest.raises(ConfigError, match="unknown setting"):
        load_config({"index.nope": 1}, cwd=tmp_path, environ={}, user_file=tmp_path / "none.toml")


def _run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from overlap_desktop.cli.main import main

    capsys.readouterr()
    code = main(argv)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_overlap_config_shows_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    _toml(tmp_path / "overlap.toml", "[match]\nfloor_seconds = 12\n")
    monkeypatch.setenv("OVERLAP_INDEX_FPS", "6")
    code, out, _ = _run_cli(["config", "--json", "--index", str(tmp_path / "ix")], capsys)
    assert code == 0
    rows = {r["key"]: r for r in json.loads(out)}
    assert set(rows) == set(SETTINGS)
    assert rows["index.fps"]["value"] == 6.0 and rows["index.fps"]["source"] == "environment"
    assert rows["match.floor_seconds"]["source"].startswith("./overlap.toml")
    assert rows["index.path"] == {**rows["index.path"], "value": str(tmp_path / "ix"), "source": "command line",
                                  "env": "OVERLAP_INDEX"}
    code, out, _ = _run_cli(["config"], capsys)
    assert code == 0
    line = next(ln for ln in out.splitlines() if ln.startswith("index.fps "))
    assert "6" in line and "environment" in line and "OVERLAP_INDEX_FPS" in line
    code, out, _ = _run_cli(["config", "index.fps"], capsys)
    assert code == 0 and len(out.strip().splitlines()) == 2
    code, _, err = _run_cli(["config", "no.such"], capsys)
    assert code == 2 and "unknown setting" in err


def test_bad_environment_value_is_a_usage_error(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OVERLAP_INDEX_FPS", "lots")
    code, _, err = _run_cli(["config"], capsys)
    assert code == 2 and "OVERLAP_INDEX_FPS" in err
