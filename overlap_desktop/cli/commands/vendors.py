"""``overlap vendors list|trust|forget``: the vendor keys this buyer recognises (issue 37)."""

from __future__ import annotations

import argparse
from pathlib import Path

from overlap_desktop import api
from overlap_desktop.api import ExitCode, UsageError
from overlap_desktop.cli.framework import CliContext, Command, safe_terminal

__all__ = ["COMMAND"]


def _add(p: argparse.ArgumentParser) -> None:
    # One positional action rather than nested subcommands, so -q and -v work after it too.
    p.add_argument("action", choices=("list", "trust", "forget"),
                   help="list: the vendors and keys recorded; trust KEYFILE: pin a vendor's key from the public "
                        "key file they gave you (replaces the key recorded for that name); forget NAME: drop "
                        "the key recorded for a vendor")
    p.add_argument("target", nargs="?", default=None, metavar="KEYFILE|NAME",
                   help="trust: the vendor's public key file; forget: the vendor's name")
    p.add_argument("--json", action="store_true", help="list: print as JSON")


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
            ctx.print(f"{v.fingerprint}  {safe_terminal(v.name, max_len=120)}{api.mixed_script_mark(v.mixed_scripts)}"
                      f"  ({how} {v.since})")
        return int(ExitCode.OK)
    if args.target is None:
        raise UsageError(f"vendors {args.action} needs {'a KEYFILE' if args.action == 'trust' else 'a NAME'}")
    if args.action == "trust":
        keyfile = Path(args.target)
        if not keyfile.is_file():
            raise UsageError("no such public key file", path=keyfile)
        pinned, replaced = api.trust_key_file(keyfile)
        ctx.print(f"pinned {safe_terminal(pinned.name)}{api.mixed_script_mark(pinned.mixed_scripts)}: key "
                  f"{pinned.fingerprint}")
        if replaced is not None and replaced.public_key != pinned.public_key:
            ctx.print(f"  (replaces key {replaced.fingerprint}, recorded {replaced.since})")
        return int(ExitCode.OK)
    gone = api.forget_vendor(args.target)
    if gone is None:
        raise UsageError(f"no key is recorded for {args.target!r} (see `overlap vendors list`)")
    ctx.print(f"forgot {safe_terminal(gone.name)}{api.mixed_script_mark(gone.mixed_scripts)} (key {gone.fingerprint})")
    return int(ExitCode.OK)


COMMAND = Command("vendors", "vendor keys you recognise: list, pin from a key file, forget", _add, _run, order=37,
                  description="Signed manifests name their vendor and key. The first signed manifest under a "
                              "vendor name records its key (trust on first use); a later one with another key "
                              "is flagged. Pin a key from a contract with `vendors trust KEYFILE`.")
