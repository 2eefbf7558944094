"""Turning a chunk of device metrics into records (host side, off the training thread).

A record is one update of one member of the population: a seed, or in a sweep one
seed of one setting. Its identity is in ``ID_KEYS``; every other key is a metric.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

# Episode means are undefined when no episode ended in an update: reported as None.
EPISODE_PREFIXES = ("episode_", "achievements/")  # return, length, a suite's own results
# The rolling return over the last N episodes is defined once any episode has ended.
WINDOW_KEYS = ("episode_return_window",)
# Who and when a record is (not metrics): a sweep's records add "setting" (its index)
# and "hparams" (its values, dotted config key -> value).
ID_KEYS = ("update", "env_steps", "seed", "setting", "hparams")
# In a sweep a member whose update met a NaN or inf keeps its last good state (the
# others train on); its records then hold only this flag.
DIVERGED = "diverged"


@dataclass(frozen=True)
class Members:
    """Who each row of a chunk's ``[M, L]`` metrics is: seed m of a plain run, or in a
    sweep seed ``m % num_seeds`` of setting ``settings[m // num_seeds]``."""

    num_seeds: int
    settings: tuple[tuple[int, dict], ...] | None = None  # (index, values): a sweep

    @property
    def count(self) -> int:
        return self.num_seeds * (len(self.settings) if self.settings else 1)

    def identity(self, m: int) -> dict:
        """The record keys that say who row ``m`` is."""
        if not self.settings:
            return {"seed": m}
        index, values = self.settings[m // self.num_seeds]
        return {"setting": index, "hparams": dict(values), "seed": m % self.num_seeds}

    def row(self, record: Mapping) -> int:
        """The row of the member a record belongs to."""
        if not self.settings:
            return record["seed"]
        position = [index for index, _ in self.settings].index(record["setting"])
        return position * self.num_seeds + record["seed"]


def metric_items(record: Mapping) -> Iterator[tuple[str, Any]]:
    """(name, value) of every metric of a record or aggregate with a value."""
    for name, value in record.items():
        if name not in ID_KEYS and name != "num_seeds" and value is not None:
            yield name, value


def series_prefix(record: Mapping, per_seed: bool) -> str:
    """Where a tracker files a record's (``per_seed``) or an aggregate's series:
    '' / 'seed_<i>' for a plain run, 'setting_<k>' / 'setting_<k>/seed_<i>' in a sweep."""
    parts = []
    if "setting" in record:
        parts.append(f"setting_{record['setting']}")
    if per_seed:
        parts.append(f"seed_{record['seed']}")
    return "/".join(parts)


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


def merged(batches: list[LogBatch]) -> LogBatch:
    """Consecutive chunks as one: their records and aggregates in order, the last
    chunk's throughput and time."""
    if len(batches) == 1:
        return batches[0]
    return LogBatch(
        records=[r for b in batches for r in b.records],
        aggregates=[a for b in batches for a in b.aggregates],
        sps=batches[-1].sps,
        elapsed=batches[-1].elapsed,
    )


def chunk_to_records(
    metrics: Mapping[str, np.ndarray],
    first_update: int,
    batch_size: int,
    members: Members | None = None,
) -> list[dict]:
    """metrics: name -> [M, L] arrays for M members (seeds; ``members`` says who they
    are) and L updates starting at update ``first_update`` (1-based). Returns M * L
    records in update order, members inner. A sweep's ``nonfinite`` rows become
    records that hold only ``diverged: true``."""
    arrays = {k: np.asarray(v) for k, v in metrics.items()}
    nonfinite = arrays.pop("nonfinite", None)
    num_rows, num_updates = arrays["episode_count"].shape
    members = members or Members(num_rows)
    records = []
    for j in range(num_updates):
        update = first_update + j
        for s in range(num_rows):
            record = {"update": update, "env_steps": update * batch_size, **members.identity(s)}
            if nonfinite is not None and nonfinite[s, j]:
                records.append({**record, DIVERGED: True})
                continue
            count = int(arrays["episode_count"][s, j])
            in_window = int(arrays.get("episodes_in_window", arrays["episode_count"])[s, j])
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
    """Per update (and in a sweep per setting): mean, std, min, max across seeds of
    every numeric metric (None values are left out; a metric with none left is
    omitted). A sweep's aggregates carry the setting's index and values.

    The statistics are computed a metric at a time over every update of the chunk
    (``numpy`` along rows of equal length, the values numpy gives one row alone):
    update by update they cost SAC's 20,000-update run 6 s of the host's time."""
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault((r["update"], r.get("setting")), []).append(r)
    out, columns = [], {}  # (metric, count of values) -> (aggregates, their values)
    for (update, setting), rows in groups.items():
        agg, values = aggregate_head(update, setting, rows), metric_values(rows)
        for name, row_values in values.items():
            agg.update(dict.fromkeys(stat_keys(name)))  # the keys in order, filled below
            taken = columns.setdefault((name, len(row_values)), ([], []))
            taken[0].append(agg)
            taken[1].append(row_values)
        out.append(agg)
    for (name, _), (aggs, rows_of_values) in columns.items():
        fill_stats(name, aggs, np.asarray(rows_of_values, dtype=np.float64))
    return out


def aggregate_head(update: int, setting: int | None, rows: list[dict]) -> dict:
    """An aggregate's identity: update, env steps, a sweep's setting, the seed count."""
    agg = {"update": update, "env_steps": rows[0]["env_steps"]}
    if setting is not None:
        agg.update(setting=setting, hparams=rows[0]["hparams"])
    agg["num_seeds"] = len(rows)
    return agg


def metric_values(rows: list[dict]) -> dict[str, list]:
    """Each metric with a value in ``rows``: its values in row order (metrics in the
    order they first appear)."""
    values: dict[str, list] = {}
    for r in rows:
        for name, value in metric_items(r):
            values.setdefault(name, []).append(value)
    return values


@functools.cache
def stat_keys(name: str) -> tuple[str, ...]:
    """The keys of a metric's four statistics in an aggregate."""
    return (f"{name}/mean", f"{name}/std", f"{name}/min", f"{name}/max")


def fill_stats(name: str, aggs: list[dict], values: np.ndarray) -> None:
    """values [A, n]: one row of ``name``'s n values per aggregate of ``aggs``."""
    stats = zip(
        values.mean(axis=1).tolist(),
        values.std(axis=1).tolist(),
        values.min(axis=1).tolist(),
        values.max(axis=1).tolist(),
        strict=True,
    )
    for agg, row in zip(aggs, stats, strict=True):
        agg.update(zip(stat_keys(name), row, strict=True))


def records_to_arrays(records: list[dict], members: int | Members) -> dict[str, np.ndarray]:
    """Per-member records -> name: [M, U] float arrays (NaN for null and where a
    member diverged), plus 'update' and 'env_steps' [U]. ``members``: the seeds (an
    int) or who the rows are (a sweep's Members)."""
    members = members if isinstance(members, Members) else Members(members)
    updates = sorted({r["update"] for r in records})
    position = {u: j for j, u in enumerate(updates)}
    names = sorted({k for r in records for k in r} - set(ID_KEYS))
    out = {name: np.full((members.count, len(updates)), np.nan) for name in names}
    steps = np.zeros(len(updates), np.int64)
    for r in records:
        j = position[r["update"]]
        steps[j] = r["env_steps"]
        row = members.row(r)
        for name in names:
            value = r.get(name)
            out[name][row, j] = np.nan if value is None else value
    return {"update": np.asarray(updates, np.int64), "env_steps": steps, **out}
