"""``overlap verify --audit``: the footage checked against the quote, with a receipt."""

from __future__ import annotations

import argparse
from pathlib import Path

from overlap_desktop import api
from overlap_desktop.api import ExitCode, UsageError
from overlap_desktop.cli.commands.inspect import safe
from overlap_desktop.cli.framework import CliContext


def add_audit_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("audit (check the footage is what was quoted)")
    g.add_argument("--audit", action="store_true",
                   help="also decode each delivered file the way indexing does and check that the quoted "
                        "fingerprints are those of its footage; with a library (--index, or the configured "
                        "one) the delivered footage is screened again; -o and --html then write the receipt")
    g.add_argument("--add", action="store_true",
                   help="with --audit: add the delivered files to the library in the same pass (after the "
                        "re-screen, which compares with the library as it stood before the delivery)")
    g.add_argument("--no-crops", action="store_true",
                   help="with --audit: do not search crops of the delivered frames in the library (the "
                        "search finds cropped copies a quote cannot show; its CPU cost is in "
                        "docs/capacity.md)")
    g.add_argument("--no-pixels", action="store_true",
                   help="with --audit: do not settle can't-tell stretches (nor second-check owned ones) with both "
                        "sides' pixels; that check reads the owned library files the re-screen matched")
    g.add_argument("--no-rescreen", action="store_true",
                   help="with --audit: check the fingerprints only, do not screen against a library")


def run_audit(args: argparse.Namespace, ctx: CliContext, threads: int) -> int:
    if args.add and args.no_rescreen:
        raise UsageError("--add puts the delivery into the library after the re-screen; drop --no-rescreen")
    status = api.library_status(config=ctx.config)
    use_index = not args.no_rescreen and (status.ready or args.add)
    if not args.no_rescreen and not use_index:
        ctx.note(f"no library at {safe(status.path)}: the fingerprints are checked, the footage is not screened "
                 "again (give --index DIR)")
    idx = api.open_index(ctx.config.index_path, config=ctx.config, readonly=not args.add) if use_index else None
    try:
        with ctx.progress("Auditing delivery") as progress:
            r = api.audit_delivery(Path(args.manifest), Path(args.data), index=idx, config=ctx.config,
                                   add=args.add, crops=not args.no_crops,
                                   pixels=not args.no_pixels, threads=threads, progress=progress)
    finally:
        if idx is not None:
            idx.close()
    for f in r.files:
        ctx.print(safe(api.file_line(f)))
        if f.check.fingerprints != "reproduced" or ctx.verbose:
            ctx.print(f"  {safe(f.check.words)}")
        for a, b, verdict, why in f.settled:
            ctx.print(f"  {a:g}-{b:g} s settled {verdict}: {safe(why)}")
    for x in r.verify.extra:
        ctx.print(f"EXTRA    {safe(x['path'])} ({x['size']} bytes, not in the manifest)")
    for w in r.warnings:
        ctx.note(f"overlap: {safe(w)}")
    if r.resumed:
        ctx.note(f"continued an interrupted audit: {r.resumed} file(s) were already decoded")
    if args.add:
        ctx.note(f"added {r.added} delivered file(s) to the library")
    ctx.print(safe(api.audit_verdict(r)) + f" (seal {r.verify.root[:16]}…)")
    ctx.print(f"Signature: {api.signature_sentence(r.verify.signature)}")
    receipt = api.make_receipt(r)
    if args.output:
        ctx.note(f"receipt written to {safe(api.write_receipt(receipt, Path(args.output)))} "
                 f"({'signed' if receipt['signature']['status'] == 'signed' else 'unsigned'})")
    if args.html:
        ctx.note(f"receipt page written to {safe(api.write_receipt_html(receipt, Path(args.html)))}")
    failed = not r.ok or (args.strict and not r.verify.exact)
    return int(ExitCode.CHECK_FAILED if failed else ExitCode.OK)
