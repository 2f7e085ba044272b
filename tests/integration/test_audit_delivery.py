"""The delivery audit end to end: the forged-quote attack, the honest quote, a one-sample
change, ``--add``, resume after an interruption, and the signed receipt (CLI in-process through
``main``). The delivery and its quotes: tests/audit_world.py.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from overlap_desktop.cli.main import main
from overlap_desktop.config import load_config
from overlap_desktop.core.audit.reproduce import NOT_REPRODUCED, PARTLY, REPRODUCED
from overlap_desktop.core.audit.run import audit_delivery
from overlap_desktop.core.index.store import open_index
from overlap_desktop.core.manifest.export import write_manifest
from overlap_desktop.core.manifest.format import ManifestFile, ManifestStream
from overlap_desktop.core.manifest.parse import read_manifest
from overlap_desktop.errors import Cancelled, ExitCode
from tests.audit_world import build_world


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_world(tmp_path_factory.mktemp("audit"))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([*argv, "-q"])
    out, err = capsys.readouterr()
    return code, out, err


def test_forged_quote_passes_the_bytes_check_and_fails_the_audit(world: dict[str, Path], tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # Today's check: every quoted file present and exact.
    code, out, _ = run(capsys, "verify", str(world["forged"]), "--data", str(world["delivery"]))
    assert code == ExitCode.OK, out
    # The audit: the fingerprints are not those of the bytes, and the re-screen finds the copy.
    receipt = tmp_path / "receipt.json"
    code, out, err = run(capsys, "verify", str(world["forged"]), "--data", str(world["delivery"]), "--audit",
                         "--index", str(world["lab"]), "-o", str(receipt))
    assert code == ExitCode.CHECK_FAILED, out + err
    assert "the quoted fingerprints of take-07.mp4 are not those of its bytes: 0 of" in out
    assert "quoted 12 s new; delivered: 12 s owned, a copy of clip0.mp4 re-encoded" in out
    data = json.loads(receipt.read_text(encoding="utf-8"))
    take = next(f for f in data["files"] if f["name"] == "take-07.mp4")
    assert take["bytes"] == "exact" and take["fingerprints"] == NOT_REPRODUCED
    assert take["owned_seconds"] >= 11.5 and take["quoted"]["new_seconds"] >= 11.5
    fresh = next(f for f in data["files"] if f["name"] == "fresh.mp4")
    # The look-alike that must stay as quoted: footage the lab never owned audits clean and stays new.
    assert fresh["fingerprints"] == REPRODUCED and fresh["owned_seconds"] == 0 and fresh["new_seconds"] >= 11.5
    assert data["library"]["same_as_quote"] is False


def test_honest_codes_marked_unusable_are_screened_from_the_delivered_footage(
        world: dict[str, Path], tmp_path: Path) -> None:
    """A quote with the copy's true codes, every sample marked unusable: the quote's screen cannot
    judge it; the fingerprints reproduce (they are the bytes' own), and the re-screen, made from the
    delivered footage's own flags, finds the copy and marks the changed verdict."""
    honest = read_manifest(world["honest"])
    files = []
    for f in honest.files:
        if f.name == "take-07.mp4":
            fp = f.streams[0].fingerprints
            fp.usable = np.zeros(len(fp), bool)
            f = ManifestFile(f.name, f.size, f.sha256, f.duration_s,
                             [ManifestStream(f.streams[0].key, f.streams[0].fps, fp)])
        files.append(f)
    write_manifest(files, tmp_path / "hidden.ovlm", algo_id=honest.algo_id, prep_id=honest.prep_id)
    cfg = load_config({"index.path": str(world["lab"])}, environ={})
    with open_index(world["lab"], config=cfg, readonly=True) as idx:
        r = audit_delivery(tmp_path / "hidden.ovlm", world["delivery"], index=idx, config=cfg,
                           state_dir=tmp_path / "state")
    take = next(f for f in r.files if f.name == "take-07.mp4")
    assert not r.same_as_quote and take.quoted is not None and take.final is not None
    assert take.quoted.owned == 0.0 and take.final.owned >= 11.5 and take.changed


def test_honest_quote_audits_clean(world: dict[str, Path], tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "verify", str(world["honest"]), "--data", str(world["delivery"]), "--audit",
                         "--index", str(world["lab"]))
    assert code == ExitCode.OK, out + err
    assert "not those of its bytes" not in out
    # The honest quote already said what the delivery shows: take-07 owned, unchanged at delivery.
    assert "quoted 12 s owned; delivered: 12 s owned, a copy of clip0.mp4 re-encoded" in out


def test_one_changed_sample_reads_partly_reproduced_with_its_span(world: dict[str, Path], tmp_path: Path) -> None:
    honest = read_manifest(world["honest"])
    files = []
    for f in honest.files:
        if f.name == "fresh.mp4":
            fp = f.streams[0].fingerprints
            codes = fp.codes.copy()
            codes[5, 0] ^= 0xFF  # one sample, 256 bits turned
            fp.codes = codes
            f = ManifestFile(f.name, f.size, f.sha256, f.duration_s,
                             [ManifestStream(f.streams[0].key, f.streams[0].fps, fp)])
            t5 = float(fp.times_ns[5]) / 1e9
        files.append(f)
    write_manifest(files, tmp_path / "one.ovlm", algo_id=honest.algo_id, prep_id=honest.prep_id)
    r = audit_delivery(tmp_path / "one.ovlm", world["delivery"], config=load_config({}, environ={}),
                       state_dir=tmp_path / "state")
    fresh = next(f for f in r.files if f.name == "fresh.mp4")
    assert fresh.check.fingerprints == PARTLY
    (span,) = fresh.check.streams[0].differing
    assert span[0] == pytest.approx(t5) and span[1] == pytest.approx(t5 + 1.0)
    assert f"differing at {t5:g}-{t5 + 1:g} s" in fresh.check.words
    assert not r.ok
    assert next(f for f in r.files if f.name == "take-07.mp4").check.fingerprints == REPRODUCED


def test_add_puts_the_delivery_into_the_library_after_the_rescreen(world: dict[str, Path], tmp_path: Path) -> None:
    lab = shutil.copytree(world["lab"], tmp_path / "lab")
    cfg = load_config({"index.path": str(lab)}, environ={})
    with open_index(lab, config=cfg) as idx:
        before = {f.path for f in idx.files()}
        r = audit_delivery(world["honest"], world["delivery"], index=idx, config=cfg, add=True,
                           state_dir=tmp_path / "state")
        after = {f.path for f in idx.files()}
    assert r.ok and r.added == 2
    assert r.same_as_quote  # an honest quote of this version: the quote's screen stands for the delivery's
    # The re-screen saw the library before the delivery: fresh.mp4 new (not owned by itself).
    fresh = next(f for f in r.files if f.name == "fresh.mp4")
    assert fresh.final is not None and fresh.final.owned == 0 and fresh.final.new >= 11.5
    assert {Path(p).name for p in after - before} == {"take-07.mp4", "fresh.mp4"}
    # What was added is what indexing the delivery stores.
    assert main(["index", str(world["delivery"]), "--index", str(tmp_path / "ref"), "-q"]) == 0
    with open_index(tmp_path / "ref", readonly=True) as ref, open_index(lab, readonly=True) as got:
        want = {Path(f.path).name: key_fp for f, *key_fp in ref.streams()}
        have = {Path(f.path).name: key_fp for f, *key_fp in got.streams() if Path(f.path).name in want}
    for name, (key, fp) in want.items():
        k2, fp2 = have[name]
        assert key == k2 and np.array_equal(fp.codes, fp2.codes) and np.array_equal(fp.times_ns, fp2.times_ns)
    assert not r.warnings
    # Audited again, the delivery is in the library: said plainly.
    with open_index(lab, config=cfg) as idx:
        again = audit_delivery(world["honest"], world["delivery"], index=idx, config=cfg, state_dir=tmp_path / "s2")
    assert any("already in the library" in w for w in again.warnings)


def test_a_cancelled_audit_resumes_without_decoding_finished_files_again(world: dict[str, Path],
                                                                         tmp_path: Path) -> None:
    cfg = load_config({}, environ={})
    seen: list[str] = []

    def cancel_after_first() -> bool:
        return len({s for s in seen}) > 1

    def progress(p: object) -> None:
        cur = getattr(p, "current", None)
        if cur:
            seen.append(str(cur))

    with pytest.raises(Cancelled):
        audit_delivery(world["honest"], world["delivery"], config=cfg, state_dir=tmp_path / "state",
                       progress=progress, cancel=cancel_after_first)
    r = audit_delivery(world["honest"], world["delivery"], config=cfg, state_dir=tmp_path / "state")
    assert r.ok and r.resumed == 1
    assert not any((tmp_path / "state").rglob("*.json"))  # a finished audit leaves nothing behind


def test_the_receipt_is_signed_with_the_buyers_key_and_inspect_checks_it(
        world: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = run(capsys, "key", "create", "--name", "Lab Buyer")
    assert code == 0
    receipt, page = tmp_path / "receipt.json", tmp_path / "receipt.html"
    code, out, err = run(capsys, "verify", str(world["forged"]), "--data", str(world["delivery"]), "--audit",
                         "--index", str(world["lab"]), "-o", str(receipt), "--html", str(page))
    assert code == ExitCode.CHECK_FAILED, out + err
    data = json.loads(receipt.read_text(encoding="utf-8"))
    assert data["schema"] == "overlap.receipt/1" and data["signature"]["status"] == "signed"
    assert data["signature"]["signer"] == "Lab Buyer"
    assert data["manifest"]["root"] == read_manifest(world["forged"]).root
    assert {f["name"]: f["sha256"] for f in data["files"]} == {
        p.name: _sha(p) for p in world["delivery"].iterdir()}
    html = page.read_text(encoding="utf-8")
    assert "take-07.mp4" in html and "not reproduced" in html and "(changed)" in html
    code, out, _ = run(capsys, "inspect", str(receipt))
    assert code == 0 and "signed by Lab Buyer" in out and "the signature verifies" in out
    # Edited after signing: a verdict turned to "reproduced" is refused.
    take = next(f for f in data["files"] if f["name"] == "take-07.mp4")
    take["fingerprints"] = "reproduced"
    data["totals"]["fingerprints"] = {"reproduced": 2, "partly reproduced": 0, "not reproduced": 0,
                                      "not checked": 0}
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(data), encoding="utf-8")
    code, out, err = run(capsys, "inspect", str(edited))
    assert code == ExitCode.INPUT_REFUSED and "signature does not verify" in err
    # A manifest still inspects as a manifest.
    code, out, _ = run(capsys, "inspect", str(world["honest"]))
    assert code == 0 and "valid overlap manifest" in out
