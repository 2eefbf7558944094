"""Finished runs read back from their folders: ``config.yaml`` and ``metrics.jsonl``
as arrays per seed and update (``Run``), for plots, scores and comparisons, and the
curves' trailing smoothing."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

from nnxrl.logging.jsonl import read_records
from nnxrl.logging.records import records_to_arrays
from nnxrl.store import lock

DEFAULT_METRIC = "episode_return_window"  # falls back to episode_return in older runs


@dataclass(frozen=True)
class Run:
    """A run's metrics: name -> [S, U] per seed and update (NaN where undefined)."""

    name: str
    env: str
    algo: str
    num_seeds: int
    return_window: int
    env_steps: np.ndarray  # [U] env steps per seed after each update
    metrics: dict[str, np.ndarray]
    config: dict = field(default_factory=dict)  # the run's config.yaml
    hparams: dict = field(default_factory=dict)  # a sweep setting's values (dotted keys)
    version: str = ""  # the nnxrl that trained it (run.json: version and git commit)


def load_runs(run_dir: str | Path) -> list[Run]:
    """A run directory's config (env, algorithm, seeds) and metrics.jsonl as arrays:
    one Run, or for a sweep one per setting (named ``<run>/setting_<k>``)."""
    run_dir = Path(run_dir)
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{run_dir}: no metrics.jsonl (is it an nnxrl run directory?)")
    config = run_config(run_dir)
    version = trained_by(run_dir)
    live = bool(lock.holder(run_dir))  # a run still training: its whole updates so far
    records = read_records(path, live=live)
    records = whole_updates(records) if live else records
    if not records:
        raise ValueError(f"{path} holds no records yet: nothing to plot (has the run started?)")
    for number, r in enumerate(records, 1):
        if not isinstance(r.get("seed"), int):
            raise ValueError(f"{path}, line {number}: a record without an integer 'seed'")
    by_setting: dict = {}
    for r in records:
        by_setting.setdefault(r.get("setting"), []).append(r)
    name = run_dir.resolve().name
    runs = [
        run_of(f"{name}/setting_{k}" if k is not None else name, config, rows, version)
        for k, rows in sorted(by_setting.items(), key=lambda item: item[0] or 0)
    ]
    names = {metric for run in runs for metric in run.metrics}
    for run in runs:  # a setting that diverged at once has no metric but that flag
        shape = (run.num_seeds, len(run.env_steps))
        run.metrics.update({m: np.full(shape, np.nan) for m in names - set(run.metrics)})
    return runs


def whole_updates(records: list[dict]) -> list[dict]:
    """``records`` without their last update if it lacks some member's record (a run
    being written writes an update's records one member after another)."""
    counts = Counter(r["update"] for r in records)
    if len(counts) > 1 and counts[records[-1]["update"]] < max(counts.values()):
        return [r for r in records if r["update"] != records[-1]["update"]]
    return records


def run_config(run_dir: Path) -> dict:
    """The run's ``config.yaml`` as the mapping nnxrl wrote ({} where there is none); a
    ValueError naming the file where it is not YAML or not a mapping."""
    path = run_dir / "config.yaml"
    if not path.is_file():
        return {}
    remedy = (
        "restore it (the config the run was started with) or move it away to read the "
        "run's metrics alone"
    )
    try:
        config = yaml.safe_load(path.read_text(errors="replace"))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ValueError(f"{path}{where}: not valid YAML ({problem}); {remedy}") from None
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise ValueError(
            f"{path} holds a YAML {type(config).__name__}, not the mapping of settings "
            f"nnxrl writes there; {remedy}"
        )
    return config


def trained_by(run_dir: Path) -> str:
    """The nnxrl version (and git commit) run.json records; "" where it has none."""
    try:
        meta = json.loads((run_dir / "run.json").read_text(errors="replace"))
    except (OSError, ValueError):
        return ""
    if not isinstance(meta, dict):
        return ""
    commit = meta.get("git_commit")
    return f"{meta.get('nnxrl', '?')}" + (f" (git {str(commit)[:12]})" if commit else "")


def load_run(run_dir: str | Path) -> Run:
    """A run directory that is not a sweep, as one Run."""
    return load_runs(run_dir)[0]


def run_of(name: str, config: dict, records: list[dict], version: str = "") -> Run:
    """One run's (or one setting's) records as a Run."""
    num_seeds = max((r["seed"] for r in records), default=-1) + 1
    arrays = records_to_arrays(records, num_seeds)
    env_steps = arrays.pop("env_steps")
    arrays.pop("update")
    return Run(
        name=name,
        env=str(config.get("env", {}).get("id", "?")),
        algo=str(config.get("algo", "ppo")),
        num_seeds=num_seeds,
        return_window=int(config.get("logging", {}).get("return_window", 100)),
        env_steps=env_steps,
        metrics=arrays,
        config=config,
        hparams=dict(records[0].get("hparams") or {}),
        version=version,
    )


def metric_of(run: Run, metric: str) -> np.ndarray:
    """[S, U] values of ``metric`` (the default falls back to episode_return)."""
    if metric == DEFAULT_METRIC and metric not in run.metrics:
        metric = "episode_return"
    if metric not in run.metrics:
        known = ", ".join(sorted(run.metrics))
        raise KeyError(f"{run.name}: metric {metric!r} is not in metrics.jsonl (it has: {known})")
    return run.metrics[metric]


def smooth_trailing(values: np.ndarray, window: int) -> np.ndarray:
    """[S, U] -> [S, U]: each seed's mean over its last ``window`` updates, ignoring
    undefined (NaN) values; NaN where the whole window is undefined."""
    if window <= 1:
        return values
    defined = np.isfinite(values)
    sums = np.cumsum(np.where(defined, values, 0.0), axis=1)
    counts = np.cumsum(defined, axis=1)
    pad = np.zeros((values.shape[0], 1))
    sums = np.concatenate([pad, sums], axis=1)
    counts = np.concatenate([pad, counts], axis=1)
    start = np.maximum(np.arange(values.shape[1]) + 1 - window, 0)
    total = sums[:, 1:] - sums[:, start]
    n = counts[:, 1:] - counts[:, start]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / np.maximum(n, 1), np.nan)
