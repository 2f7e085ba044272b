"""``overlap verify``: check a delivery folder against the quoted manifest."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from overlap_desktop import api
from overlap_desktop.cli.commands.inspect import safe
from overlap_desktop.cli.framework import CliContext, Command
from overlap_desktop.errors import ExitCode, InputError


def _add(p: argparse.ArgumentParser) -> None:
    p.add_argument("manifest", metavar="MANIFEST", help="the .ovlm file the delivery was quoted with")
    p.add_argument("--data", required=True, metavar="DIR", help="the delivered files (searched recursively)")
    p.add_argument("-o", "--output", metavar="FILE.json", help="write the full result as JSON")
    p.add_argument("--threads", type=int, default=None,
                   help="hashing threads (default: config verify.threads; 0 = one per core)")


def _write_json(path: Path, data: object) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", path=path) from exc


def _run(args: argparse.Namespace, ctx: CliContext) -> int:
    threads = ctx.config["verify.threads"] if args.threads is None else max(0, args.threads)
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
    verdict = "delivery matches the manifest exactly" if r.ok else "delivery differs from the manifest"
    ctx.print(f"{verdict}: {r.matched} of {len(r.entries)} files matched, {r.altered} altered, "
              f"{r.missing} missing, {len(r.extra)} extra (root {r.root[:16]}…)")
    if args.output:
        _write_json(Path(args.output), r.to_dict())
        ctx.note(f"wrote {args.output}")
    return int(ExitCode.OK if r.ok else ExitCode.CHECK_FAILED)


COMMAND = Command("verify", "check delivered files against the quoted manifest (sha256, bit for bit)", _add,
                  _run, order=60,
                  description="Hash every delivered file and report, per manifest entry, matched / altered / "
                              "missing, plus extra files. Exit 0 for an exact delivery, 3 when it differs, "
                              "4 when the manifest is refused.")
