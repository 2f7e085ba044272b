"""A hostile delivered file (a decompression bomb quoted as a recording) is refused by the audit's
decode as indexing refuses it: the file reads "not checked" with the reader's reason, the audit
goes on with the other files and exits 3, never a crash."""

from __future__ import annotations

import hashlib
from pathlib import Path

from overlap_desktop.config import load_config
from overlap_desktop.core.audit.reproduce import NOT_CHECKED, REPRODUCED
from overlap_desktop.core.audit.run import audit_delivery
from overlap_desktop.core.index.indexer import index_paths
from overlap_desktop.core.manifest.export import export_manifest, write_manifest
from overlap_desktop.core.manifest.format import ManifestFile, ManifestStream
from overlap_desktop.core.manifest.parse import read_manifest
from tests.footage import make_clip
from tests.reliability import hostile_recordings as H


def test_a_bomb_in_the_delivery_is_refused_and_named(tmp_path: Path) -> None:
    delivery = tmp_path / "delivery"
    make_clip(delivery / "good.mp4", 31, duration=6.0, fps=12.0, size=(160, 120))
    cfg = load_config({"index.path": str(tmp_path / "vendor")}, environ={})
    index_paths([delivery], config=cfg)
    export_manifest(tmp_path / "vendor", tmp_path / "honest.ovlm", config=cfg, sign=False)
    bomb = H.mcap_lz4_bomb(delivery / "run.mcap", 3 * H.GiB)
    honest = read_manifest(tmp_path / "honest.ovlm")
    good = honest.files[0]
    quoted = ManifestFile("run.mcap", bomb.stat().st_size, hashlib.sha256(bomb.read_bytes()).hexdigest(),
                          good.duration_s, [ManifestStream("/cam", good.streams[0].fps, good.streams[0].fingerprints)])
    write_manifest([good, quoted], tmp_path / "q.ovlm", algo_id=honest.algo_id, prep_id=honest.prep_id)
    r = audit_delivery(tmp_path / "q.ovlm", delivery, config=load_config({}, environ={}), state_dir=tmp_path / "st")
    by = {f.name: f for f in r.files}
    assert by["good.mp4"].check.fingerprints == REPRODUCED
    assert by["run.mcap"].bytes == "matched" and by["run.mcap"].check.fingerprints == NOT_CHECKED
    words = by["run.mcap"].check.words
    assert "run.mcap could not be checked: " in words and "MCAP" in words and not r.ok  # the reader's reason
