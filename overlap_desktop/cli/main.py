"""Entry point of the ``overlap`` command: ``main(argv) -> exit code``.

Tests call :func:`main` in-process. Errors the user can cause are
:class:`~overlap_desktop.errors.OverlapError` and print one clear line; anything else
is a bug, reported as such with exit code 1 (the traceback only with ``--verbose``).
"""

from __future__ import annotations

import argparse
import logging
import sys
import traceback
from collections.abc import Sequence

from overlap_desktop import __version__
from overlap_desktop.api import ExitCode, OverlapError
from overlap_desktop.cli.commands import discover_commands
from overlap_desktop.cli.framework import CliContext

__all__ = ["build_parser", "main"]


def _common(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("common options")
    g.add_argument("--index", metavar="DIR", default=argparse.SUPPRESS,
                   help="index folder (default: $OVERLAP_INDEX, overlap.toml, or the platform data folder)")
    g.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                   help="no progress bars")
    g.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                   help="show technical detail of errors")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="overlap",
        description="Find out how much of a video dataset offer you already own, "
                    "without exchanging footage.")
    parser.add_argument("--version", action="version", version=f"overlap {__version__}")
    _common(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for cmd in discover_commands():
        p = sub.add_parser(cmd.name, help=cmd.help, description=cmd.description or cmd.help)
        cmd.add_arguments(p)
        _common(p)
        p.set_defaults(_command=cmd)
    return parser


#: Exit status when the reader of our output went away mid-command (128 + SIGPIPE, the
#: status a shell shows for a process killed by a closed pipe).
_EXIT_PIPE_CLOSED = 141


class _SafeFormatter(logging.Formatter):
    """Log lines name local files (a skipped symlink loop, say): their control
    characters are shown as ``[U+XXXX]`` so a hostile name cannot rewrite the terminal."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        from overlap_desktop.cli.framework import safe_terminal

        return f"{record.levelname} {record.name}: {safe_terminal(record.message)}"


def _configure_logging(verbose: bool) -> None:
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        if type(handler) is logging.StreamHandler:  # the one basicConfig made (not a test harness's)
            handler.setFormatter(_SafeFormatter())


class _ArgumentError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit status (never raises except SystemExit
    from ``--help``/``--version``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    cmd = getattr(args, "_command", None)
    if cmd is None:
        parser.print_help(sys.stderr)
        return int(ExitCode.USAGE)
    ctx = CliContext(quiet=getattr(args, "quiet", False), verbose=getattr(args, "verbose", False))
    if getattr(args, "index", None):
        ctx.overrides["index.path"] = args.index
    _configure_logging(ctx.verbose)
    try:
        code = int(cmd.run(args, ctx))
        ctx.flush()
        return code
    except BrokenPipeError:
        # Output escaped our writers (a library wrote to a closed pipe): the reader is
        # gone, which is how `overlap ... | head` ends, not a bug.
        ctx.pipe_closed(ctx.out)
        ctx.pipe_closed(ctx.err)
        return _EXIT_PIPE_CLOSED
    except KeyboardInterrupt:
        ctx.note("overlap: interrupted; finished work was kept")
        return int(ExitCode.INTERRUPTED)
    except OverlapError as exc:
        from overlap_desktop.cli.framework import safe_terminal

        # The message may name a local file or quote a manifest: never raw on the terminal.
        ctx.note(f"overlap {cmd.name}: error: {safe_terminal(exc)}")
        if exc.detail and ctx.verbose:
            ctx.note(safe_terminal(exc.detail))
        ctx.flush()
        return int(exc.exit_code)
    except Exception as exc:
        failed_write = _write_failure(exc)
        if failed_write is not None:
            # A full disk, a file-size limit or a failing disk met by code that did not
            # translate it: still a plain error naming the file, never "internal error".
            from overlap_desktop.cli.framework import safe_terminal

            ctx.note(f"overlap {cmd.name}: error: {safe_terminal(failed_write)}")
            if ctx.verbose:
                traceback.print_exc(file=ctx.err)
            ctx.flush()
            return int(failed_write.exit_code)
        # a bug: say so plainly, keep the traceback for --verbose
        ctx.note(f"overlap {cmd.name}: internal error (this is a bug; rerun with --verbose for details)")
        if ctx.verbose:
            traceback.print_exc(file=ctx.err)
        return int(ExitCode.INTERNAL)


def _write_failure(exc: BaseException) -> OverlapError | None:
    """The plain error for a write that failed outside overlap (an OS error whose errno
    means no space, a file-size limit, a quota or a failing disk; SQLite's I/O and
    disk-full errors), or None for anything else (a bug)."""
    from overlap_desktop.api import WRITE_ERRNOS, WriteError, write_failure_reason

    if isinstance(exc, OSError) and exc.errno in WRITE_ERRNOS:
        return WriteError(f"cannot write: {write_failure_reason(exc.errno)}", path=exc.filename or None)
    # SQLite's errors by name: the shell does not import the database library itself.
    if type(exc).__module__ == "apsw" and type(exc).__name__ in ("IOError", "FullError"):
        return WriteError(f"cannot write the index database or a file beside it (SQLite: {exc}); check the free "
                          "space and file-size limits of the index's disk, then run again")
    return None


def run() -> None:
    """Console-script entry point."""
    __import__("multiprocessing").freeze_support()  # frozen bundle: a worker process starts here (issue 18)
    import signal

    if hasattr(signal, "SIGXFSZ"):
        # Under a file-size limit (ulimit -f) a write past it would kill the process without a
        # word; ignored, the write fails with EFBIG and the user reads which file and why.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    run()
