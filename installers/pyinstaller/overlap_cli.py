"""Frozen entry point of the ``overlap`` console executable (see overlap.spec)."""

from __future__ import annotations

import multiprocessing
import sys

if __name__ == "__main__":
    # Worker processes of a frozen app re-run this executable; let them do their job.
    multiprocessing.freeze_support()
    from overlap_desktop.cli.main import main

    sys.exit(main(sys.argv[1:]))
