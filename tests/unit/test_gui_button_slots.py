"""A button's ``clicked`` (and an action's ``triggered``) carries ``checked``: a bool that Qt hands
to any slot with room for it. A method with an optional first parameter, connected directly,
gets ``False`` as that parameter ("Create a signing key…" got it as the company's name and
opened nothing). This scan of the GUI's source finds such connections without running Qt.
"""

from __future__ import annotations

import ast
from pathlib import Path

GUI = Path(__file__).resolve().parents[2] / "overlap_desktop" / "gui"
SIGNALS = {"clicked", "triggered"}


def _methods(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    out: dict[str, ast.FunctionDef] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    out.setdefault(item.name, item)
    return out


def offending_connections(source: str) -> list[str]:
    """``"line: name"`` for each ``clicked``/``triggered`` connected straight to a method that
    would take the ``checked`` bool as a positional parameter."""
    tree = ast.parse(source)
    methods = _methods(tree)
    bad: list[str] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "connect" and isinstance(node.func.value, ast.Attribute)
                and node.func.value.attr in SIGNALS and node.args):
            continue
        slot = node.args[0]
        if isinstance(slot, ast.Attribute) and isinstance(slot.value, ast.Name) and slot.value.id == "self":
            fn = methods.get(slot.attr)
            if fn is not None and len(fn.args.args) + len(fn.args.posonlyargs) > 1:
                bad.append(f"{node.lineno}: {slot.attr}")
        elif isinstance(slot, ast.Lambda) and slot.args.args and not slot.args.defaults:
            bad.append(f"{node.lineno}: lambda without a default for checked")
    return bad


def test_the_scan_finds_the_pattern_and_passes_the_fixes() -> None:
    broken = ("class B:\n    def __init__(self):\n        self.b.clicked.connect(self.open)\n"
              "    def open(self, name=''):\n        pass\n")
    assert offending_connections(broken) == ["3: open"]
    fixed = broken.replace("connect(self.open)", "connect(lambda: self.open())")
    assert offending_connections(fixed) == []
    plain = broken.replace("def open(self, name='')", "def open(self)")
    assert offending_connections(plain) == []
    keyed = broken.replace("def open(self, name='')", "def open(self, *, name='')")
    assert offending_connections(keyed) == []


def test_no_button_hands_checked_to_a_parameter() -> None:
    found = {p.name: offending_connections(p.read_text(encoding="utf-8")) for p in sorted(GUI.glob("*.py"))}
    assert {k: v for k, v in found.items() if v} == {}
