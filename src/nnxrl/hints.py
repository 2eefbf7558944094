"""What a refusal or a hint tells a person to type next: the names closest to one they
mistyped (the standard library's close-match search, so every lookup suggests the
same way) and nnxrl's commands written so that they paste into the shell they ran
nnxrl from."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable


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
