"""A plain run's hyperparameter schedule (``hp_schedule``): traced keys that change
value at given updates, e.g. the schedule a population-based training run found
(``best_schedule.yaml`` of ``nnxrl sweep-report``), trained again from scratch.

    hp_schedule:
      - {from_update: 1, ppo.learning_rate: 1.0e-3}
      - {from_update: 41, ppo.learning_rate: 2.5e-4}

An entry's values hold from its update until a later entry changes them; before the
first entry, and for keys no entry names, the config's own values hold. The values
are traced (they enter the compiled chunk as arguments), so a change costs no
compilation: the run loop ends a chunk before each change and hands the next chunk
the new values (``run/loop.py``), and every record carries ``hp/<key>``, the value
its update trained with.

It works on plain data (it imports no config class), so that ``config.validate``
and ``config/schedule.py`` can call it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nnxrl.sweeps.space import plain

FROM = "from_update"


def changes(entries: Sequence[dict]) -> list[tuple[int, dict[str, Any]]]:
    """(first update, the values it changes) of every entry, in the config's order
    (``config.validate`` checks that the updates increase)."""
    return [(int(e[FROM]), {k: plain(v) for k, v in e.items() if k != FROM}) for e in entries]


def keys(entries: Sequence[dict]) -> list[str]:
    """Every key the schedule changes, in order of first mention."""
    return list(dict.fromkeys(k for _, values in changes(entries) for k in values))


def values_at(entries: Sequence[dict], update: int) -> dict[str, Any]:
    """The scheduled values update ``update`` (1-based) trains with: those of the
    latest entry at or before it, key by key (keys not yet set are absent)."""
    now: dict[str, Any] = {}
    for first, values in changes(entries):
        if first <= update:
            now.update(values)
    return now


def cuts(entries: Sequence[dict]) -> list[int]:
    """The updates after which a chunk must end: the update before each change."""
    return [first - 1 for first, _ in changes(entries) if first > 1]


def updates_to_next_change(entries: Sequence[dict], done: int) -> int | None:
    """With ``done`` updates done, how many the next chunk may take before a change;
    None when no change lies ahead."""
    ahead = [cut - done for cut in cuts(entries) if cut > done]
    return min(ahead) if ahead else None


def series(entries: Sequence[dict], config_data: dict, first: int, count: int) -> dict:
    """``hp/<key>`` -> the value each of updates first..first+count-1 trains with, for
    every scheduled key (``config_data``: the config as plain data, whose values hold
    before a key's first change)."""
    out = {}
    for key in keys(entries):
        node = config_data
        for part in key.split("."):
            node = node[part]
        out[f"hp/{key}"] = [
            float(values_at(entries, u).get(key, plain(node))) for u in range(first, first + count)
        ]
    return out
