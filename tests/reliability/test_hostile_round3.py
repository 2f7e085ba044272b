"""Issue 36: hostile input, round three (settings, rosbag2 metadata, text sources).

Each hostile input goes through the real ``overlap`` command in its own process under
2 GiB of address space and a 60 s hang guard (:mod:`tests.reliability.capped`), and must
end in a plain error naming the file and the problem, never a traceback, an internal
error or a MemoryError. Each has its look-alike that must still work.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.reliability.capped import overlap

# --------------------------------------------------------------------------- overlap.toml


def test_a_thousand_part_dotted_table_name_is_a_config_error(tmp_path: Path) -> None:
    """``[t.t.t....]`` with 1,000 parts in ./overlap.toml: exit 2 naming the file and the depth
    (was: RecursionError, internal error); four levels are still read (and ignored as unknown)."""
    (tmp_path / "overlap.toml").write_text("[" + ".".join(["t"] * 1000) + "]\nx = 1\n")
    ran = overlap("config", cwd=tmp_path)
    ran.assert_plain()
    assert ran.code == 2, ran.text
    assert re.search(r"overlap\.toml: table \[t\.t\.t\.t\] is nested more than 4 levels deep", ran.err), ran.err
    (tmp_path / "overlap.toml").write_text("[t.t.t]\nx = 1\n[index]\nfps = 3\n")
    ok = overlap("config", cwd=tmp_path)
    assert ok.code == 0, ok.text
    assert re.search(r"index\.fps\s.*3", ok.out), ok.out


@pytest.mark.parametrize("raw", ['"yes"', '"no"', '"on"', "1", '"true"'])
def test_on_off_settings_in_a_file_take_only_true_or_false(tmp_path: Path, raw: str) -> None:
    """``anonymize_paths = "yes"`` (or 1, "true") was accepted silently: now exit 2 saying what
    is expected; ``true`` is read as true, and the environment's "yes" still means yes."""
    (tmp_path / "overlap.toml").write_text(f"[export]\nanonymize_paths = {raw}\n")
    ran = overlap("config", "--json", cwd=tmp_path)
    ran.assert_plain()
    assert ran.code == 2, ran.text
    assert "for export.anonymize_paths (from " in ran.err
    assert "must be true or false (a TOML boolean, without quotes)" in ran.err, ran.err


def test_true_and_false_and_environment_words_still_work(tmp_path: Path) -> None:
    from overlap_desktop.config import load_config

    (tmp_path / "overlap.toml").write_text("[export]\nanonymize_paths = true\n")
    none = tmp_path / "none.toml"
    assert load_config(cwd=tmp_path, environ={}, user_file=none)["export.anonymize_paths"] is True
    env = {"OVERLAP_EXPORT_ANONYMIZE_PATHS": "no"}
    assert load_config(cwd=tmp_path, environ=env, user_file=none)["export.anonymize_paths"] is False


# --------------------------------------------------------------------------- rosbag2 metadata.yaml


def _alias_bomb(folder: Path, levels: int = 9) -> Path:
    """A rosbag2 folder whose ``metadata.yaml`` lists 10^levels file names through nested
    aliases (the file stays under 2 KB)."""
    from tests.fixtures_recordings import footage, write_rosbag2

    write_rosbag2(folder, footage(seconds=0.3), with_jpeg=False)
    meta = folder / "metadata.yaml"
    text = meta.read_text()
    (db,) = folder.glob("*.db3")
    lines = [f"  lol0: &a0 [{', '.join([db.name] * 10)}]"]
    for i in range(1, levels):
        lines.append(f"  lol{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]")
    head, rest = text.split("rosbag2_bagfile_information:\n", 1)
    text = head + "rosbag2_bagfile_information:\n" + "\n".join(lines) + "\n" + rest
    text = re.sub(r"  relative_file_paths:\n(  - .*\n)+", f"  relative_file_paths: *a{levels - 1}\n", text)
    meta.write_text(text)
    assert meta.stat().st_size < 4096 and "*a8" in text
    return folder


def test_a_yaml_alias_bomb_in_rosbag2_metadata_is_refused(tmp_path: Path) -> None:
    """A 10^9-entry aliased ``relative_file_paths``: refused from the parser's events, before
    anything is expanded (was: 1.6 GB and 33-53 s, then "out of memory while decoding")."""
    pytest.importorskip("rosbags")
    bag = _alias_bomb(tmp_path / "bomb_bag2")
    ran = overlap("index", bag, "--index", tmp_path / "idx", "-q", cwd=tmp_path)
    ran.assert_plain()
    assert ran.code == 4, ran.text
    assert re.search(r"bomb_bag2: metadata\.yaml uses a YAML alias \(\*name\); rosbag2 never writes them", ran.text), \
        ran.text
    assert "out of memory" not in ran.text


def test_rosbag2_metadata_of_the_wrong_shape_is_refused_and_an_honest_one_reads(tmp_path: Path) -> None:
    """Types are checked before use (a mapping where file names belong); a real bag's
    metadata passes the same checks."""
    pytest.importorskip("rosbags")
    from overlap_desktop.core.ingest.readers.rosbag import _bag2_metadata
    from overlap_desktop.errors import MediaError
    from tests.fixtures_recordings import footage, write_rosbag2

    honest = write_rosbag2(tmp_path / "honest", footage(seconds=0.3), with_jpeg=False)
    info = _bag2_metadata(honest)
    assert info is not None and info["relative_file_paths"] == [p.name for p in honest.glob("*.db3")]
    meta = honest / "metadata.yaml"
    meta.write_text(re.sub(r"  relative_file_paths:\n(  - .*\n)+", "  relative_file_paths: {a: 1}\n",
                           meta.read_text()))
    with pytest.raises(MediaError, match=r"relative_file_paths must be a list of file names, not dict"):
        _bag2_metadata(honest)
