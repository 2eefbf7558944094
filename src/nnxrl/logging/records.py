"""Turning a chunk of device metrics into records (host side, off the training thread)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

# Episode means are undefined when no episode ended in an update: reported as None.
EPISODE_PREFIXES = ("episode_return", "episode_length", "achievements/")
# The rolling return over the last N episodes is defined once any episode has ended.
WINDOW_KEYS = ("episode_return_window",)


@dataclass(frozen=True)
class LogBatch:
    """What every backend receives for one chunk of updates.

    records: one per update per seed, update-major (update 1 seeds 0..S-1, update 2 ...).
    aggregates: one per update: each metric's mean, std, min and max across seeds.
    sps: env steps per second over all seeds, measured on the host for this chunk.
    """

    records: list[dict]
    aggregates: list[dict]
    sps: float | None
    elapsed: float  # seconds of training (compilation excluded) when the chunk finished


def chunk_to_records(
    metrics: Mapping[str, np.ndarray], first_update: int, batch_size: int
) -> list[dict]:
    """metrics: name -> [S, L] arrays for S seeds and L updates starting at update
    ``first_update`` (1-based). Returns S * L records in update order, seeds inner."""
    arrays = {k: np.asarray(v) for k, v in metrics.items()}
    num_seeds, num_updates = arrays["episode_count"].shape
    records = []
    for j in range(num_updates):
        update = first_update + j
        for s in range(num_seeds):
            count = int(arrays["episode_count"][s, j])
            in_window = int(arrays.get("episodes_in_window", arrays["episode_count"])[s, j])
            record = {"update": update, "env_steps": update * batch_size, "seed": s}
            for name, values in arrays.items():
                value = float(values[s, j])
                if name in ("episode_count", "episodes_in_window"):
                    value = int(value)
                elif name in WINDOW_KEYS:
                    value = value if in_window > 0 else None
                elif (count == 0 and name.startswith(EPISODE_PREFIXES)) or not math.isfinite(value):
                    value = None
                record[name] = value
            records.append(record)
    return records


def aggregate(records: list[dict]) -> list[dict]:
    """Per update: mean, std, min, max across seeds of every numeric metric (None
    values are left out; a metric with none left is omitted)."""
    by_update: dict[int, list[dict]] = {}
    for r in records:
        by_update.setdefault(r["update"], []).append(r)
    out = []
    for update, rows in by_update.items():
        agg = {"update": update, "env_steps": rows[0]["env_steps"], "num_seeds": len(rows)}
        for name in rows[0]:
            if name in ("update", "env_steps", "seed"):
                continue
            values = [r[name] for r in rows if r[name] is not None]
            if values:
                v = np.asarray(values, dtype=np.float64)
                agg.update(
                    {
                        f"{name}/mean": float(v.mean()),
                        f"{name}/std": float(v.std()),
                        f"{name}/min": float(v.min()),
                        f"{name}/max": float(v.max()),
                    }
                )
        out.append(agg)
    return out


def records_to_arrays(records: list[dict], num_seeds: int) -> dict[str, np.ndarray]:
    """Per-seed records -> name: [S, U] float arrays (NaN for null), plus 'update' and
    'env_steps' [U]."""
    updates = sorted({r["update"] for r in records})
    position = {u: j for j, u in enumerate(updates)}
    names = sorted({k for r in records for k in r} - {"update", "env_steps", "seed"})
    out = {name: np.full((num_seeds, len(updates)), np.nan) for name in names}
    steps = np.zeros(len(updates), np.int64)
    for r in records:
        j = position[r["update"]]
        steps[j] = r["env_steps"]
        for name in names:
            value = r.get(name)
            out[name][r["seed"], j] = np.nan if value is None else value
    return {"update": np.asarray(updates, np.int64), "env_steps": steps, **out}
