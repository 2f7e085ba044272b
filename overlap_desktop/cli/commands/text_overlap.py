"""``overlap text-overlap``: n-gram contamination check between annotation sets."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from overlap_desktop import api
from overlap_desktop.cli.framework import CliContext, Command
from overlap_desktop.errors import ExitCode


def _add(p: argparse.ArgumentParser) -> None:
    p.add_argument("--test", nargs="+", required=True, metavar="FILE",
                   help="test/evaluation examples: text (one per line), JSONL, JSON, a LeRobot folder, MCAP")
    p.add_argument("--train", nargs="+", required=True, metavar="FILE", help="training text sources")
    p.add_argument("--tokenizer", default="alnum-lower-v1",
                   help="tokenizer id: alnum-lower-v1 (default) or whitespace-v1")
    p.add_argument("--n", type=int, default=None, help="force the n-gram size (default: from the test set)")
    p.add_argument("--percentile", type=float, default=5.0, help="percentile of test lengths for n (default 5)")
    p.add_argument("--min-n", type=int, default=8, help="smallest n (default 8)")
    p.add_argument("--max-n", type=int, default=13, help="largest n (default 13)")
    p.add_argument("--field", action="append", dest="fields", metavar="NAME",
                   help="JSON field(s) holding the text (default: every string field)")
    p.add_argument("--workers", type=int, default=0, help="worker processes (0 = one per core)")
    p.add_argument("-o", "--output", metavar="FILE.json", help="write the full result as JSON")
    p.add_argument("--fail-on-match", action="store_true",
                   help="exit 3 when any test example shares an n-gram with the training text")


def _run(args: argparse.Namespace, ctx: CliContext) -> int:
    with ctx.progress("Scanning training text") as progress:
        result = api.text_overlap([Path(p) for p in args.test], [Path(p) for p in args.train],
                                  tokenizer=args.tokenizer, n=args.n, percentile=args.percentile,
                                  min_n=args.min_n, max_n=args.max_n, fields=args.fields,
                                  workers=args.workers, progress=progress)
    ctx.print(f"n = {result.n} ({result.tokenizer}); {len(result.matched_examples)} of {result.examples} "
              f"test examples share an n-gram with the training text ({result.matched_percent:.1f}%).")
    if result.too_short:
        ctx.print(f"{result.too_short} test examples are shorter than n and could not be checked.")
    shown: set[int] = set()
    for mt in result.matches:
        if mt.example in shown:
            continue
        shown.add(mt.example)
        ctx.print(f"  example {mt.example} (token {mt.position}): {mt.ngram!r} "
                  f"in {mt.train_source} {mt.train_locator}")
    if args.output:
        Path(args.output).write_text(json.dumps(result.to_dict(), indent=2, ensure_ascii=False), encoding="utf-8")
        ctx.note(f"wrote {args.output}")
    if args.fail_on_match and result.matched_examples:
        return int(ExitCode.CHECK_FAILED)
    return int(ExitCode.OK)


COMMAND = Command("text-overlap", "check annotation text for n-gram overlap (contamination)", _add, _run,
                  order=90, description="Report every test example sharing an n-gram with the training "
                                        "text (GPT-3 appendix method: n = 5th percentile of test lengths, "
                                        "clamped to 8..13).")
