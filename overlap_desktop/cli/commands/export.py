"""``overlap export``: write a ``.ovlm`` manifest of the index (or part of it)."""

from __future__ import annotations

import argparse
from pathlib import Path

from overlap_desktop import api
from overlap_desktop.api import ExitCode, UsageError
from overlap_desktop.cli.commands.key import ask_passphrase
from overlap_desktop.cli.framework import CliContext, Command, safe_terminal
from overlap_desktop.cli.guards import Output, add_force_argument, check_outputs


def _add(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="export only indexed files at or under these paths (default: the whole index)")
    p.add_argument("-o", "--output", required=True, metavar="FILE.ovlm", help="manifest to write (replaced atomically)")
    p.add_argument("--label", default=None, help="free text shown to the buyer (e.g. \"Q3 kitchen teleop\")")
    p.add_argument("--anonymize-paths", action="store_true", default=None,
                   help="replace file names by file-NNNNNN.ext and stream keys by stream-N "
                        "(default: config export.anonymize_paths)")
    p.add_argument("--fps", type=float, default=None,
                   help="fingerprints kept per second of footage (default: config export.fps, 1)")
    p.add_argument("--stamp-time", action="store_true",
                   help="record the current UTC time in the manifest (then re-exports differ byte-wise)")
    sg = p.add_mutually_exclusive_group()
    sg.add_argument("--sign", dest="sign", action="store_true", default=None,
                    help="sign the manifest with your key (the default when you have one: `overlap key create`)")
    sg.add_argument("--no-sign", dest="sign", action="store_false", help="write an unsigned manifest")
    add_force_argument(p)
    g = p.add_argument_group("annotations (hashed n-grams, no text; docs/manifest-spec.md TEXT_NGRAMS)")
    g.add_argument("--annotations", nargs="+", metavar="FILE", default=None,
                   help="annotation text to carry as keyed n-gram hashes, so a buyer can check its "
                        "evaluation set against it: text (one per line), JSONL/JSON, a LeRobot folder, "
                        "MCAP string topics")
    g.add_argument("--annotation-field", action="append", dest="annotation_fields", metavar="NAME",
                   help="JSON field holding the annotation text (repeatable; default: every string field)")
    g.add_argument("--annotation-tokenizer", default=None, metavar="ID",
                   help="tokenizer id: alnum-lower-v1 (default) or whitespace-v1")


def _run(args: argparse.Namespace, ctx: CliContext) -> int:
    cfg = ctx.config
    fps = cfg["export.fps"] if args.fps is None else args.fps
    if not fps > 0:
        raise UsageError(f"--fps must be positive, not {args.fps}")
    if args.label is not None and (any(ord(ch) < 32 or 127 <= ord(ch) < 160 for ch in args.label)
                                   or len(args.label.encode("utf-8", "surrogatepass")) > 4096):
        raise UsageError("--label must be one line of at most 4096 bytes without control characters")
    anonymize = cfg["export.anonymize_paths"] if args.anonymize_paths is None else True
    check_outputs([Output(Path(args.output), "-o", "manifest")],
                  inputs=[Path(a) for a in args.annotations or []], index_path=cfg.index_path, force=args.force)
    passphrase = None
    if args.sign is not False:
        found = api.signing_key_info()
        if found is None and args.sign:
            raise UsageError("--sign needs a signing key: make one with `overlap key create --name \"Your company\"`")
        if found is not None and found[1]:
            passphrase = ask_passphrase(f"Passphrase of the signing key ({found[0].fingerprint}): ")
    with ctx.progress("Exporting") as progress:
        s = api.export_manifest(None, Path(args.output), paths=[Path(p) for p in args.paths] or None,
                                label=args.label, anonymize=bool(anonymize), fps=float(fps),
                                created=True if args.stamp_time else None, config=cfg,
                                annotations=[Path(a) for a in args.annotations] if args.annotations else None,
                                annotation_fields=args.annotation_fields,
                                annotation_tokenizer=args.annotation_tokenizer, sign=args.sign,
                                passphrase=passphrase, progress=progress)
    ctx.print(f"wrote {s.path}")
    ctx.print(f"  Merkle root  {s.root}")
    if s.signed_by is not None:
        ctx.print(f"  signed by    {safe_terminal(s.signed_by)}, key {s.key_fingerprint}")
        ctx.print(f"               (the signature covers content root {s.signed_root})")
    else:
        ctx.print("  signature    none (unsigned" + (": --no-sign)" if args.sign is False
                                                   else "; make a key with `overlap key create` to sign)"))
    ctx.print(f"  files        {s.files} ({s.streams} streams, {s.samples} fingerprints at <= {fps:g} fps)")
    ctx.print(f"  footage      {s.hours:.3f} h")
    per_hour = f" ({s.bytes / s.hours / 1000:.1f} KB per footage hour)" if s.hours > 0 else ""
    ctx.print(f"  size         {s.bytes} bytes{per_hour}")
    if args.annotations:
        info = api.inspect_manifest(s.path, record_vendor=False).get("text_ngrams") or {}
        counts = ", ".join(f"n={n}: {c}" for n, c in (info.get("counts") or {}).items())
        ctx.print(f"  annotations  {info.get('documents', 0)} texts as keyed n-gram hashes "
                  f"({info.get('tokenizer')}; {counts})")
    return int(ExitCode.OK)


COMMAND = Command("export", "export a .ovlm manifest (fingerprints, no pixels) to send to a buyer", _add, _run,
                  order=30, description="Write a manifest of the indexed files: names (optionally "
                                        "anonymised), sizes, SHA-256 digests and ~1 fps fingerprints, bound "
                                        "by a Merkle root. The same index exported twice gives the same "
                                        "bytes and root.")
