"""``overlap inspect``: verify a manifest and summarise it."""

from __future__ import annotations

import argparse
from pathlib import Path

from overlap_desktop import api
from overlap_desktop.api import ExitCode
from overlap_desktop.cli.framework import CliContext, Command, safe_terminal


def safe(text: object) -> str:
    """Show untrusted text on a terminal: control, bidi, zero-width and other invisible
    format characters, line/paragraph separators and undecodable bytes of a local name
    are shown as ``[U+XXXX]`` (the same rule as reports, :func:`safe_terminal`)."""
    return safe_terminal(text)


def _add(p: argparse.ArgumentParser) -> None:
    p.add_argument("manifest", metavar="MANIFEST", help="the .ovlm file (or a delivery audit's receipt, .json)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--files", action="store_true", help="also list every file")


def _is_json(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(64).lstrip()[:1] == b"{"
    except OSError:
        return False  # the manifest reader says why


def _receipt(args: argparse.Namespace, ctx: CliContext) -> int:
    """A delivery audit's receipt: signature and totals checked (refused with exit 4 when edited)."""
    r = api.check_receipt(Path(args.manifest))
    if args.json:
        ctx.print_json(r)
        return int(ExitCode.OK)
    check = r["check"]
    signed = (f"signed by {safe(check['signer'])}, key {check['fingerprint']}: the signature verifies"
              if check["signature"] == "valid" else "unsigned (nothing shows who made it)")
    ctx.print(f"{safe(args.manifest)}: valid overlap receipt ({r['schema']}), {signed}")
    ctx.print(f"  verdict      {safe(r['verdict_text'])}")
    ctx.print(f"  quote seal   {r['manifest']['root']}")
    ctx.print(f"  quote        {api.signature_sentence(r['manifest']['signature'])}")
    ctx.print(f"  audited      {r['checked']} by overlap {safe(r['tool_version'])}")
    for f in r["files"]:
        ctx.print(f"  {safe(f['name'])}: bytes {f['bytes']}, fingerprints {f['fingerprints']}"
                  + (f"; {safe(f['verdict_words'])}" if f.get("verdict_words") else ""))
    return int(ExitCode.OK)


def _run(args: argparse.Namespace, ctx: CliContext) -> int:
    if _is_json(Path(args.manifest)):
        return _receipt(args, ctx)
    info = api.inspect_manifest(Path(args.manifest))
    if args.json:
        if not args.files:
            info = {k: v for k, v in info.items() if k != "file_list"}
        ctx.print_json(info)
        return int(ExitCode.OK)
    ctx.print(f"{safe(args.manifest)}: valid overlap manifest ({info['format']}), Merkle root verified")
    ctx.print(f"  label        {safe(info['label']) or '(none)'}")
    ctx.print(f"  files        {info['files']} ({info['streams']} streams, {info['samples']} fingerprints)"
              + ("; names anonymised" if info["anonymized"] else ""))
    ctx.print(f"  footage      {info['hours']:.3f} h ({info['indeterminate_hours']:.3f} h indeterminate)")
    ctx.print(f"  sampling     {', '.join(f'{x:g}' for x in info['sampling']) or '-'} fps")
    ctx.print(f"  algo / prep  {info['algo_id']} / {info['prep_id']}")
    ctx.print(f"  root         {info['root']}")
    sig = info.get("signature") or {}
    ctx.print(f"  signature    {api.signature_sentence(sig)}")
    if sig.get("status") == "signed":
        ctx.print(f"               signed {sig['signed_at']} over content root {sig['signed_root']}")
    if api.signature_changed(sig):
        ctx.note(f"overlap: WARNING: {api.signature_sentence(sig)}")
    ctx.print(f"  created      {info['created'] or '(not recorded)'} by {safe(info['creator']) or '(unknown)'}")
    per_hour = f" ({info['bytes_per_hour'] / 1000:.1f} KB/h)" if info["bytes_per_hour"] else ""
    ctx.print(f"  size         {info['bytes']} bytes{per_hour}")
    tn = info.get("text_ngrams")
    if tn:
        counts = ", ".join(f"n={n}: {c}" for n, c in tn["counts"].items())
        ctx.print(f"  annotations  keyed n-gram hashes of {tn['documents']} texts ({tn['tokenizer']}; "
                  f"{counts}); compare --eval checks your evaluation set against them")
    else:
        ctx.print("  annotations  none (no annotation n-gram hashes)")
    eps = info.get("episodes") or {}
    if eps.get("streams"):
        ctx.print(f"  episodes     {eps['spans']} episode spans on {eps['streams']} streams")
    for s in info["optional_sections"]:
        ctx.print(f"  note: optional section {s['name']} v{s['version']} ({s['bytes']} bytes) not "
                  "understood by this version; it is covered by the root but ignored")
    if args.files:
        for f in info["file_list"]:
            ctx.print(f"  {safe(f['name'])}  {f['size']} B  {f['duration_s']:.1f} s  {f['sha256'][:16]}…")
    return int(ExitCode.OK)


COMMAND = Command("inspect", "verify a .ovlm manifest and show what it contains", _add, _run, order=35,
                  description="Parse a manifest strictly (refusing any defect with exit 4), recompute its "
                              "Merkle root and summarise it: label, files, hours, sampling, algo/prep. Given "
                              "a delivery audit's receipt (JSON), check its signature and totals instead.")
