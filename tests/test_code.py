"""The code's shape: no function of the package or the examples runs over 50 lines
(docstring included), so each reads on one screen."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parents[1]
MAX_LINES = 50


def test_no_function_is_longer_than_fifty_lines():
    long = []
    for path in sorted([*(ROOT / "src").rglob("*.py"), *(ROOT / "examples").glob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines})")
    assert long == []
