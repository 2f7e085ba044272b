"""``overlap demo``: run the whole job on generated footage and show the report."""

from __future__ import annotations

import argparse
from contextlib import ExitStack
from pathlib import Path

from overlap_desktop.api import ExitCode, Progress, ProgressCallback
from overlap_desktop.cli.framework import CliContext, Command

__all__ = ["COMMAND"]


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", metavar="DIR", type=Path, default=None,
                   help="folder for the demo's footage, index, manifest and report (default: 'demo' in "
                        "the platform data folder; a previous demo there is replaced)")


class _StepBars:
    """Turns the demo's step announcements into one progress bar per step."""

    def __init__(self, ctx: CliContext) -> None:
        self.ctx = ctx
        self.stack = ExitStack()
        self.bar: ProgressCallback | None = None

    def __call__(self, p: Progress) -> None:
        if p.stage == "demo":
            self.close()
            if p.total is not None and p.done < p.total and p.message:
                if not self.ctx.quiet:
                    self.ctx.note(f"[{int(p.done) + 1}/{int(p.total)}] {p.message}")
                self.bar = self.stack.enter_context(self.ctx.progress("    "))
            return
        if self.bar is not None:
            self.bar(p)

    def close(self) -> None:
        self.stack.close()
        self.bar = None


def _run(args: argparse.Namespace, ctx: CliContext) -> int:
    from overlap_desktop import api
    from overlap_desktop.api import default_demo_dir

    out = args.out if args.out is not None else default_demo_dir()
    bars = _StepBars(ctx)
    try:
        result = api.run_demo(out, progress=bars)
    finally:
        bars.close()
    ctx.print(f"Demo finished in {result.seconds:.0f} s.")
    ctx.print()
    ctx.print(result.headline)
    for line in result.details:
        ctx.print(f"  {line}")
    ctx.print()
    ctx.print("What the demo planted in the offer (the truth to check the report against):")
    for plant in result.planted:
        ctx.print(f"  {plant.offer_file}  {plant.description}")
    ctx.print()
    ctx.print(f"Report (open in a browser): {result.report_html}")
    ctx.print(f"Report (JSON):              {result.report_json}")
    ctx.print(f"Offer manifest:             {result.manifest}")
    ctx.print(f"Lab index:                  {result.index}")
    ctx.print()
    ctx.print("Next, with your own footage:  overlap index YOUR_FOLDER   then   "
              "overlap compare OFFER.ovlm --html report.html")
    return int(ExitCode.OK)


COMMAND = Command(
    name="demo",
    help="run the whole job on generated footage and write a report (start here)",
    add_arguments=_add_arguments,
    run=_run,
    order=1,
    description="Generate a small owned corpus and a vendor offer that hides slowed, mirrored and "
                "cropped copies of it among new footage; index, export and compare them; write "
                "report.html and report.json. Uses its own index: your index is not touched.",
)
