"""``overlap verify``: check a delivery folder against the quoted manifest."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from overlap_desktop import api
from overlap_desktop.api import MAX_THREADS, ExitCode, InputError, UsageError, atomic_write_bytes
from overlap_desktop.cli.commands._verify_audit import add_audit_arguments, run_audit
from overlap_desktop.cli.commands.inspect import safe
from overlap_desktop.cli.framework import CliContext, Command
from overlap_desktop.cli.guards import Output, add_force_argument, check_outputs


def _add(p: argparse.ArgumentParser) -> None:
    p.add_argument("manifest", metavar="MANIFEST", help="the .ovlm file the delivery was quoted with")
    p.add_argument("--data", required=True, metavar="DIR", help="the delivered files (searched recursively)")
    p.add_argument("-o", "--output", metavar="FILE.json", help="write the full result as JSON")
    p.add_argument("--html", metavar="FILE.html",
                   help="write a verification report for people (self-contained HTML) to file with the "
                        "purchase")
    p.add_argument("--strict", action="store_true",
                   help="also exit 3 when files that are not in the quote were delivered (system files such "
                        "as Thumbs.db and .DS_Store are always ignored)")
    p.add_argument("--threads", type=int, default=None,
                   help="hashing threads (default: config verify.threads; 0 = one per core)")
    add_audit_arguments(p)
    add_force_argument(p)


def _printable_names(data: Any) -> Any:
    """JSON-ready copy of ``data`` whose strings are valid Unicode.

    A delivered file whose name is not UTF-8 (possible on Linux) reaches us as a
    string with lone surrogates, which no UTF-8 writer accepts; such a name is
    written with its undecodable bytes as ``\\xNN`` escapes (and shown the same way
    on the terminal), so the result is still written and the file still named.
    """
    if isinstance(data, str):
        try:
            data.encode("utf-8")
        except UnicodeEncodeError:
            return os.fsencode(data).decode("utf-8", "backslashreplace")
        return data
    if isinstance(data, dict):
        return {_printable_names(k): _printable_names(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [_printable_names(v) for v in data]
    return data


def _write_json(path: Path, data: object) -> None:
    text = json.dumps(_printable_names(data), indent=2, ensure_ascii=False) + "\n"
    atomic_write_bytes(path, text.encode("utf-8"), error_type=InputError)


def _run(args: argparse.Namespace, ctx: CliContext) -> int:
    if args.threads is not None and not 0 <= args.threads <= MAX_THREADS:
        raise UsageError(f"--threads must be between 0 and {MAX_THREADS}, not {args.threads}")
    threads = ctx.config["verify.threads"] if args.threads is None else args.threads
    outputs = [Output(Path(args.output), "-o", "json")] if args.output else []
    if args.html:
        outputs.append(Output(Path(args.html), "--html", "html"))
    if outputs:
        check_outputs(outputs, inputs=[Path(args.manifest)], folders=[Path(args.data)],
                      index_path=ctx.config.index_path, force=args.force)
    if args.audit:
        return run_audit(args, ctx, int(threads))
    if args.add:
        raise UsageError("--add works with --audit (the fingerprints the audit computes are what is added)")
    with ctx.progress("Hashing delivery") as progress:
        r = api.verify_delivery(Path(args.manifest), Path(args.data), threads=int(threads), progress=progress)
    for e in r.entries:
        if e.status == "altered":
            ctx.print(f"ALTERED  {safe(e.name)}: {e.reason}")
        elif e.status == "missing":
            ctx.print(f"MISSING  {safe(e.name)} ({e.size} bytes)")
        elif e.renamed:
            ctx.print(f"RENAMED  {safe(e.name)} -> {safe(e.delivered or '')} (same bytes)")
    for x in r.extra:
        ctx.print(f"EXTRA    {safe(x['path'])} ({x['size']} bytes, not in the manifest)")
    for u in r.unreadable:
        ctx.print(f"UNREADABLE {safe(u['path'])}: {u['error']}")
    if ctx.verbose:
        for x in r.ignored:
            ctx.print(f"IGNORED  {safe(x['path'])} (system file)")
    ctx.print(api.verify_verdict(r) + f" (seal {r.root[:16]}…)")
    # The evidence a lab files in a dispute: who signed the quote, with which key, over which root.
    ctx.print(f"Signature: {api.signature_sentence(r.signature)}")
    if r.signature.get("status") == "signed":
        ctx.print(f"  signed {r.signature.get('signed_at')}; key fingerprint {r.signature.get('fingerprint')}; "
                  f"content root {r.signature.get('signed_root')}; manifest root {r.root}")
    if args.output:
        # Names exactly as delivered, but ones that are not valid UTF-8 written escaped.
        _write_json(Path(args.output), r.to_dict())
        ctx.note(f"wrote {safe(args.output)}")
    if args.html:
        ctx.note(f"verification report written to {safe(api.write_verify_html(r, Path(args.html)))}")
    failed = not r.complete or (args.strict and not r.exact)
    if r.complete and failed:
        ctx.note("--strict: files not in the quote (or unreadable files) were delivered: exit status 3")
    return int(ExitCode.CHECK_FAILED if failed else ExitCode.OK)


COMMAND = Command("verify", "check delivered files against the quoted manifest (sha256, bit for bit)", _add,
                  _run, order=60,
                  description="Hash every delivered file and report, per manifest entry, present and "
                              "exact / altered / missing, plus files not in the quote (system files such as "
                              "Thumbs.db and .DS_Store are ignored). Exit 0 when every quoted file is "
                              "present and exact (extras listed; with --strict extras fail too), 3 when "
                              "quoted files are altered or missing, 4 when the manifest is refused.")
