"""Rewrite the ``if TYPE_CHECKING:`` block at the end of overlap_desktop/api.py from its ``_EXPORTS`` table.

The api resolves its names lazily (fast GUI start-up), so type checkers only see them through that
block; this keeps the two in step after a module moves. Run: ``python tools/sync_api_typing.py``
(tests/unit/test_layers.py fails until the block matches the table).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

API = Path(__file__).resolve().parents[1] / "overlap_desktop" / "api.py"
MARK = "if TYPE_CHECKING:  # pragma: no cover"


def exports(source: str) -> dict[str, str]:
    """The literal ``_EXPORTS`` table of api.py."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "_EXPORTS":
            return dict(ast.literal_eval(node.value))  # type: ignore[arg-type]
    raise SystemExit(f"{API}: no _EXPORTS table found")


def block(table: dict[str, str]) -> str:
    """The TYPE_CHECKING block importing every exported name from its module."""
    by_module: dict[str, list[str]] = defaultdict(list)
    for name, module in table.items():
        by_module[module].append(name)
    lines = [MARK + " - for type checkers and IDEs only",
             "    # The same names as _EXPORTS, written by tools/sync_api_typing.py (tests/unit/test_layers.py",
             "    # keeps the two in step), so `api.open_index(...)` in the shells is type-checked, not Any."]
    for module in sorted(by_module):
        names = ", ".join(sorted(by_module[module]))
        lines.append(f"    from {module} import {names}")
    return "\n".join(lines) + "\n"


def main() -> int:
    source = API.read_text(encoding="utf-8")
    head, sep, _ = source.partition(MARK)
    if not sep:
        raise SystemExit(f"{API}: the `{MARK}` block is missing")
    API.write_text(head + block(exports(source)), encoding="utf-8")
    # Sorted and wrapped the project's way (isort rules in pyproject.toml).
    subprocess.run([sys.executable, "-m", "ruff", "check", "--quiet", "--fix", "--select", "I001", str(API)],
                   check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
