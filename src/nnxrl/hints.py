"""What a refusal or a hint tells a person to type next: the names closest to one they
mistyped (the standard library's close-match search, so every lookup suggests the
same way) and nnxrl's commands written so that they paste into the shell they ran
nnxrl from."""

from __future__ import annotations

import difflib
import importlib.util
import os
import shlex
from collections.abc import Iterable
from pathlib import Path


def closest(name: object, known: Iterable[object], n: int = 3, cutoff: float = 0.6) -> list[str]:
    """Up to ``n`` of ``known`` closest to ``name``: those it abbreviates first ("lr" for
    learning_rate, "ent" for ent_coef), then the close matches (none under ``cutoff``)."""
    name, known = str(name)[:200], [str(k) for k in known]
    short = [k for k in known if abbreviates(name, k)]
    close = difflib.get_close_matches(name, known, n=n, cutoff=cutoff)
    return list(dict.fromkeys(short + close))[:n]


def abbreviates(short: str, name: str) -> bool:
    """Whether ``short`` is the initials of ``name``'s words ("lr": learning_rate) or,
    three characters or more, the start of it ("ent": ent_coef)."""
    words = [w for w in name.replace("-", "_").split("_") if w]
    initials = len(words) > 1 and short == "".join(w[0] for w in words)
    return short != name and (initials or (len(short) >= 3 and name.startswith(short)))


def first_few(names: list[str], n: int) -> str:
    """The first ``n`` of ``names``, comma-separated, with "..." where there are more."""
    return ", ".join(names[:n]) + (", ..." if len(names) > n else "")


def cut_long_words(text: str, limit: int = 200) -> str:
    """``text`` with each run of non-space characters longer than ``limit`` cut in its
    middle (a pasted value of 100,000 characters is not echoed back whole)."""
    keep = limit // 2

    def cut(word: str) -> str:
        if len(word) <= limit:
            return word
        return f"{word[:keep]}...({len(word) - 2 * keep:,} characters)...{word[-keep:]}"

    return " ".join(cut(w) if len(w) > limit else w for w in text.split(" "))


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


def bytecode_tip(dont_write: bool, module_file: str | None) -> str | None:
    """What to run once where Python may write no bytecode (``dont_write``:
    ``PYTHONDONTWRITEBYTECODE``) and the installed package of ``module_file`` (JAX's
    ``__init__.py``) has none: every start then compiles JAX, Flax and the rest from
    source, about 5 s (docs/performance.md). None when there is nothing to do."""
    if not dont_write or module_file is None:
        return None
    if Path(importlib.util.cache_from_source(module_file)).exists():
        return None
    if os.environ.get("UV_RUN_RECURSION_DEPTH"):
        fix = "uv sync --inexact --compile-bytecode"
    else:
        fix = f"python -m compileall -q {shlex.quote(str(Path(module_file).parents[1]))}"
    return (
        "Python writes no bytecode here (PYTHONDONTWRITEBYTECODE) and the installed "
        "packages have none, so each start compiles JAX and the rest from source (about "
        f"5 s); to keep their bytecode, once: {fix}"
    )
