"""``python -m overlap_desktop`` runs the CLI."""

from __future__ import annotations

from overlap_desktop.cli.main import run

run()
