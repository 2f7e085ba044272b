"""``overlap vendors list|trust|forget``: the vendor keys this buyer recognises (issue 37)."""

from __future__ import annotations

import argparse
from pathlib import Path

from overlap_desktop import api
from overlap_desktop.api import ExitCode, UsageError
from overlap_desktop.cli.framework import CliContext, Command, safe_terminal

__all__ = ["COMMAND"]


def _add(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = sub.add_parser("list", help="the vendors and keys recorded so far")
    ls.add_argument("--json", action="store_true", help="print as JSON")
    t = sub.add_parser("trust", help="pin a vendor's key from the public key file they gave you",
                       description="Pin the key in a vendor's public key file (from `overlap key show` on "
                                   "their side, e.g. attached to the contract). It replaces any key recorded "
                                   "for that name; compare the fingerprint with the one in the contract first.")
    t.add_argument("keyfile", metavar="KEYFILE", type=Path, help="the vendor's public key file")
    f = sub.add_parser("forget", help="forget the key recorded for a vendor (the next one seen is recorded)")
    f.add_argument("name", metavar="NAME", help="the vendor's name")


def _run(args: argparse.Namespace, ctx: CliContext) -> int:
    if args.action == "list":
        vendors = api.known_vendors()
        if args.json:
            ctx.print_json([v.to_dict() for v in vendors])
            return int(ExitCode.OK)
        if not vendors:
            ctx.print("no vendor keys recorded yet (the first signed manifest from a vendor records its key)")
        for v in vendors:
            how = "pinned" if v.source == "pinned" else "first seen"
            ctx.print(f"{v.fingerprint}  {safe_terminal(v.name, max_len=120)}  ({how} {v.since})")
        return int(ExitCode.OK)
    if args.action == "trust":
        if not args.keyfile.is_file():
            raise UsageError("no such public key file", path=args.keyfile)
        pinned, replaced = api.trust_key_file(args.keyfile)
        ctx.print(f"pinned {safe_terminal(pinned.name)}: key {pinned.fingerprint}")
        if replaced is not None and replaced.public_key != pinned.public_key:
            ctx.print(f"  (replaces key {replaced.fingerprint}, recorded {replaced.since})")
        return int(ExitCode.OK)
    gone = api.forget_vendor(args.name)
    if gone is None:
        raise UsageError(f"no key is recorded for {args.name!r} (see `overlap vendors list`)")
    ctx.print(f"forgot {safe_terminal(gone.name)} (key {gone.fingerprint})")
    return int(ExitCode.OK)


COMMAND = Command("vendors", "vendor keys you recognise: list, pin from a key file, forget", _add, _run, order=37,
                  description="Signed manifests name their vendor and key. The first signed manifest under a "
                              "vendor name records its key (trust on first use); a later one with another key "
                              "is flagged. Pin a key from a contract with `vendors trust KEYFILE`.")
