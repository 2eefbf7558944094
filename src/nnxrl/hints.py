"""What a refusal or a hint tells a person to type next: the names closest to one they
mistyped (the standard library's close-match search, so every lookup suggests the
same way) and nnxrl's commands written so that they paste into the shell they ran
nnxrl from."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable


def closest(name: object, known: Iterable[object], n: int = 3, cutoff: float = 0.6) -> list[str]:
    """Up to ``n`` of ``known`` closest to ``name``, closest first (none under ``cutoff``)."""
    return difflib.get_close_matches(str(name), [str(k) for k in known], n=n, cutoff=cutoff)


def did_you_mean(name: object, known: Iterable[object], n: int = 1, prefix: str = "") -> str:
    """ "did you mean X?" ("X, Y or Z?" for ``n`` > 1) for the names of ``known`` closest
    to ``name``, each written after ``prefix``; "" when none is close."""
    names = [f"{prefix}{c}" for c in closest(name, known, n)]
    if not names:
        return ""
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
    return f"did you mean {listed}?"


def command(args: str) -> str:
    """``nnxrl ARGS`` as the person should type it: ``uv run nnxrl ARGS`` when this
    process was started by ``uv run`` (its shell has no nnxrl on its PATH), else as is
    (an activated environment, or nnxrl installed)."""
    launcher = "uv run " if os.environ.get("UV_RUN_RECURSION_DEPTH") else ""
    return f"{launcher}nnxrl {args}"
