"""``overlap key create|show``: the vendor's signing key (issue 37, docs/cli.md "key")."""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from pathlib import Path

from overlap_desktop import api
from overlap_desktop.api import ConfigError, ExitCode, UsageError
from overlap_desktop.cli.framework import CliContext, Command, safe_terminal
from overlap_desktop.cli.guards import Output, add_force_argument, check_outputs

__all__ = ["COMMAND", "ask_passphrase"]


def ask_passphrase(prompt: str, *, confirm: bool = False) -> str:
    """The passphrase from ``OVERLAP_KEY_PASSPHRASE``, else typed at a hidden prompt.

    Raises:
        ConfigError: no variable and no terminal to ask on (a pipeline).
    """
    env = os.environ.get(api.PASSPHRASE_ENV)
    if env:
        return env
    if not sys.stdin or not sys.stdin.isatty():
        raise ConfigError(f"a passphrase is needed but there is no terminal to ask on: set {api.PASSPHRASE_ENV}")
    first = getpass.getpass(prompt)
    if confirm and getpass.getpass("Type it again: ") != first:
        raise UsageError("the two passphrases differ; nothing was changed")
    if not first:
        raise UsageError("an empty passphrase protects nothing; leave out --passphrase instead")
    return first


def _add(p: argparse.ArgumentParser) -> None:
    # One positional action rather than nested subcommands, so the common options (-q, -v)
    # work after it like after every other command.
    p.add_argument("action", choices=("create", "show"),
                   help="create: make your signing key (once); show: print your public key and fingerprint")
    p.add_argument("--name", default=None, help="create: your company's name, as buyers will see it")
    p.add_argument("--passphrase", action="store_true",
                   help=f"create: protect the key with a passphrase (asked for, or taken from {api.PASSPHRASE_ENV})")
    p.add_argument("-o", "--output", type=Path, default=None, metavar="FILE.pub",
                   help="show: also write the public key file buyers pin with `overlap vendors trust`")
    add_force_argument(p)


def _run(args: argparse.Namespace, ctx: CliContext) -> int:
    if args.action == "create":
        if not args.name:
            raise UsageError('key create needs --name "Your company" (the name buyers will see)')
        passphrase = ask_passphrase("Passphrase for the new key: ", confirm=True) if args.passphrase else None
        key = api.create_signing_key(args.name, passphrase=passphrase)
        ctx.print(f"made a signing key for {safe_terminal(key.name)}")
        ctx.print(f"  fingerprint  {key.fingerprint}")
        ctx.print(f"  kept in      {api.signing_key_file()} (readable by you only"
                  + (", passphrase-protected)" if passphrase else ")"))
        ctx.print("  Back this file up somewhere safe: if it is lost, manifests can no longer be signed with "
                  "this key; if someone copies it, they can sign as you. Give buyers the fingerprint (e.g. in "
                  "the contract) and the output of `overlap key show`.")
        return int(ExitCode.OK)
    found = api.signing_key_info()
    if found is None:
        raise ConfigError("no signing key yet: make one with `overlap key create --name \"Your company\"`")
    key, encrypted = found
    text = api.public_key_text(key)
    if args.output is not None:
        check_outputs([Output(args.output, "-o", "pubkey")], index_path=ctx.config.index_path, force=args.force)
        api.atomic_write_bytes(args.output, text.encode("utf-8"))
        ctx.note(f"public key written to {args.output}")
    ctx.print(text.rstrip("\n"))
    ctx.note(f"(private key in {api.signing_key_file()}{', passphrase-protected' if encrypted else ''})")
    return int(ExitCode.OK)


COMMAND = Command("key", "your vendor signing key: create it once, show its public part", _add, _run, order=32,
                  description="A vendor's Ed25519 signing key. `key create --name NAME` makes it; every "
                              "`overlap export` then signs the manifest (unless --no-sign). `key show` prints "
                              "the public key file and fingerprint buyers use to recognise you.")
