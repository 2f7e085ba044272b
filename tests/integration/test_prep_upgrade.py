"""Fingerprints of the previous normalisation (prep v1, before the contrast stretch) meet v2.

* An offer's manifest written by v1 is compared with a v2 library as is: its usable codes are
  what v2 makes for the same pictures (ordinary footage bit for bit).
* A v2 offer meets a v1 library: refused in plain words with the next step (index again),
  by both the comparison and the offer check the app runs first.
* The next index run brings a v1 library up to date: every v1 file is fingerprinted again and
  the library then says v2.
"""

from __future__ import annotations

import json
from pathlib import Path

import apsw
import pytest

from overlap_desktop import api
from overlap_desktop.core.ingest.fingerprint import ALGO_ID
from overlap_desktop.core.ingest.prep import PREP_ID, PREP_PREDECESSORS
from overlap_desktop.core.manifest.encode import encode_manifest
from overlap_desktop.core.manifest.parse import read_manifest
from overlap_desktop.errors import ManifestError

V1 = PREP_PREDECESSORS[0]


def _make_v1(index_dir: Path) -> None:
    """Turn an index into what v1 wrote: its meta names v1, its files' settings name no prep."""
    conn = apsw.Connection(str(index_dir / "index.sqlite3"))
    try:
        with conn:
            conn.execute("UPDATE meta SET value = ? WHERE key = 'prep_id'", (V1,))
            for fid, settings in list(conn.execute("SELECT id, settings FROM files")):
                s = json.loads(settings)
                s.pop("prep", None)
                conn.execute("UPDATE files SET settings = ? WHERE id = ?", (json.dumps(s, sort_keys=True), fid))
    finally:
        conn.close()


@pytest.fixture
def library(clip_folder: Path, tmp_path: Path) -> tuple[Path, Path, api.Config]:
    lab = tmp_path / "lab"
    cfg = api.load_config({"index.path": str(lab)})
    assert not api.index_paths([clip_folder], index=lab, config=cfg).failed
    manifest = tmp_path / "offer.ovlm"
    with api.open_index(lab) as idx:
        assert idx.prep_id == PREP_ID
        api.export_manifest(idx, manifest, label="same footage")
    return lab, manifest, cfg


def test_a_v1_manifest_is_compared_with_a_v2_library(library: tuple[Path, Path, api.Config], tmp_path: Path) -> None:
    lab, manifest, cfg = library
    m = read_manifest(manifest)
    data, _ = encode_manifest(m.files, label=m.label, algo_id=ALGO_ID, prep_id=V1)
    old = tmp_path / "offer-v1.ovlm"
    old.write_bytes(data)
    assert api.inspect_manifest(old)["prep_id"] == V1  # what the file says is shown as is
    read = read_manifest(old, expect_algo=ALGO_ID, expect_prep=PREP_ID)
    assert read.prep_id == PREP_ID and read.prep_id_written == V1
    check = api.check_offer(old, lab, config=cfg)
    assert check.compatible is True, check.why
    report = api.compare(old, lab, config=cfg)
    assert all(f.matched_seconds > 0.8 * f.duration_s for f in report.files), [
        (f.query_file, f.matched_seconds, f.duration_s) for f in report.files]


def test_a_v2_manifest_meets_a_v1_library_with_the_next_step(library: tuple[Path, Path, api.Config]) -> None:
    lab, manifest, cfg = library
    _make_v1(lab)
    check = api.check_offer(manifest, lab, config=cfg)
    assert check.compatible is False
    assert "index your footage again" in check.why and V1 in check.why
    with pytest.raises(ManifestError, match="index your footage again"):
        api.compare(manifest, lab, config=cfg)


def test_the_next_index_run_brings_a_v1_library_up_to_date(library: tuple[Path, Path, api.Config],
                                                          clip_folder: Path) -> None:
    lab, manifest, cfg = library
    _make_v1(lab)
    summary = api.index_paths([clip_folder], index=lab, config=cfg)
    assert not summary.failed
    assert summary.indexed == 3 and summary.skipped == 0  # every v1 file fingerprinted again
    with api.open_index(lab) as idx:
        assert idx.prep_id == PREP_ID
    again = api.index_paths([clip_folder], index=lab, config=cfg)
    assert again.indexed == 0  # and only once
    report = api.compare(manifest, lab, config=cfg)
    assert all(f.matched_seconds > 0.8 * f.duration_s for f in report.files)


def test_an_unknown_normalisation_is_still_refused(library: tuple[Path, Path, api.Config], tmp_path: Path) -> None:
    lab, manifest, cfg = library
    m = read_manifest(manifest)
    data, _ = encode_manifest(m.files, algo_id=ALGO_ID, prep_id="sq192-something-else-v9")
    other = tmp_path / "offer-other.ovlm"
    other.write_bytes(data)
    check = api.check_offer(other, lab, config=cfg)
    assert check.compatible is False and "cannot be compared" in check.why
    with pytest.raises(ManifestError, match="sq192-something-else-v9"):
        api.compare(other, lab, config=cfg)
