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


ALGORITHM_FILES = (
    "src/nnxrl/algos/ppo.py",
    "src/nnxrl/algos/pqn.py",
    "examples/custom_algorithm.py",
)
SHARED_RUN = 6


def test_algorithm_files_share_no_run_of_six_lines():
    """PPO, PQN and the A2C example supply only what differs to the one skeleton
    (``algos/on_policy.py``): no run of six code lines (stripped, blank lines and
    comments skipped) appears in two of them."""
    runs: dict[tuple[str, ...], str] = {}
    shared = []
    for name in ALGORITHM_FILES:
        lines = [x.strip() for x in (ROOT / name).read_text().splitlines()]
        lines = [x for x in lines if x and not x.startswith("#")]
        for i in range(len(lines) - SHARED_RUN + 1):
            run = tuple(lines[i : i + SHARED_RUN])
            if runs.setdefault(run, name) != name:
                shared.append(f"{runs[run]} and {name}: {run[0]!r} ...")
    assert shared == []
