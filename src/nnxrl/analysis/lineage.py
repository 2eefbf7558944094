"""What a PBT run found, from its records: each seed's members ranked at the end,
the winner's lineage (which member's weights it carried at each update, through
every copy), and the hyperparameter schedule along that lineage; drawn as
``pbt_lineage.png`` and written as ``pbt.json`` by ``nnxrl sweep-report``.

A record of member m at update u holds ``hp/<key>`` (the values update u trained
with) and ``pbt/donor`` (the member m copied after update u, -1: none). Walking back
from the winner's last update, a copy after update u means that up to u the
weights were the donor's, so the lineage continues in the donor.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

METRIC = "episode_return_window"


@dataclass(frozen=True)
class Lineage:
    """One seed's winner and the way it came."""

    seed: int
    ranking: list[dict]  # members best first: member, setting, final return, values now
    members: list[int]  # [U] whose weights the lineage carried at each update
    updates: list[int]  # [U]
    values: dict[str, list[float]]  # key -> [U] the value each update trained with
    schedule: list[dict]  # {"from_update": u, key: value, ...} wherever a value changed
    copies: int  # copies along the lineage


def lineages(records: list[dict], keys: list[str], num_seeds: int) -> list[Lineage]:
    """Each seed's Lineage from a PBT run's records (member m: setting m // S, seed
    m % S; ``keys`` the explored keys)."""
    table: dict[int, dict[int, dict]] = {}  # member -> update -> record
    for r in records:
        table.setdefault(r["setting"] * num_seeds + r["seed"], {})[r["update"]] = r
    last = min(max(rows) for rows in table.values())
    return [one_lineage(table, keys, seed, num_seeds, last) for seed in range(num_seeds)]


def one_lineage(
    table: dict[int, dict[int, dict]], keys: list[str], seed: int, num_seeds: int, last: int
) -> Lineage:
    members = sorted(m for m in table if m % num_seeds == seed)
    ranking = sorted(
        (
            {
                "member": m,
                "setting": m // num_seeds,
                "final_return": final(table[m][last]),
                **{k: table[m][last][f"hp/{k}"] for k in keys},
            }
            for m in members
        ),
        key=ranked_return,
        reverse=True,
    )
    current, carried = ranking[0]["member"], []
    for update in range(last, 0, -1):  # back through every copy
        donor = int(table[current][update].get("pbt/donor", -1))
        if donor >= 0 and update < last:
            current = donor
        carried.append(current)
    carried.reverse()
    updates = list(range(1, last + 1))
    values = {
        k: [table[m][u][f"hp/{k}"] for m, u in zip(carried, updates, strict=True)] for k in keys
    }
    copies = sum(a != b for a, b in zip(carried, carried[1:], strict=False))
    return Lineage(seed, ranking, carried, updates, values, schedule_of(updates, values), copies)


def ranked_return(row: dict) -> float:
    """A ranking row's final return, a diverged member's (None) below every other."""
    return -np.inf if row["final_return"] is None else row["final_return"]


def final(record: dict) -> float | None:
    value = record.get(METRIC)
    return None if value is None or not np.isfinite(value) else float(value)


def schedule_of(updates: list[int], values: dict[str, list[float]]) -> list[dict]:
    """The piecewise-constant schedule: one entry wherever any value changes."""
    schedule, previous = [], None
    for i, update in enumerate(updates):
        now = {k: v[i] for k, v in values.items()}
        if now != previous:
            schedule.append({"from_update": update, **now})
            previous = now
    return schedule


def plot_lineages(found: list[Lineage], keys: list[str], title: str, out: Path) -> None:
    """One panel per explored key: its value against the update along each seed's
    winning lineage (log scale for positive values spanning 10x or more)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(keys), figsize=(5 * len(keys), 3.6), squeeze=False)
    for ax, key in zip(axes[0], keys, strict=True):
        for lineage in found:
            ax.step(
                lineage.updates, lineage.values[key], where="post", label=f"seed {lineage.seed}"
            )
        every = [v for lineage in found for v in lineage.values[key]]
        if min(every) > 0 and max(every) / min(every) >= 10:
            ax.set_yscale("log")
        ax.set(xlabel="update", ylabel=key)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def as_json(found: list[Lineage]) -> list[dict[str, Any]]:
    return [
        {
            "seed": x.seed,
            "ranking": x.ranking,
            "winner": x.ranking[0]["member"],
            "copies": x.copies,
            "schedule": x.schedule,
        }
        for x in found
    ]
