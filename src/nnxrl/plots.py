"""Learning curves from runs' ``metrics.jsonl``, for a paper or a quick look.

Each run is one curve: a statistic across its seeds (mean, or the interquartile mean
as rliable recommends for few seeds) with a 95 % bootstrap confidence interval of
that statistic, optionally smoothed over a trailing window of updates first. Curves
are drawn against env steps per seed, so runs with different batch sizes or
chunking line up. Several metrics give stacked panels sharing the x axis.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from nnxrl.logging.jsonl import read_records
from nnxrl.logging.records import records_to_arrays

DEFAULT_METRIC = "episode_return_window"  # falls back to episode_return in older runs
BOOTSTRAP_SAMPLES = 2000
LABELS = {
    "episode_return": "return (update's episodes)",
    "episode_return_window": "return (last {window} episodes)",
    "episode_length": "episode length",
    "loss/total": "total loss",
    "stats/explained_variance": "explained variance",
}


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


def plot_runs(
    run_dirs: Sequence[str | Path],
    metrics: Sequence[str] | str = (DEFAULT_METRIC,),
    out: str | Path = "plot.png",
    *,
    smooth: int = 1,
    statistic: str = "mean",
    interval: bool = True,
    labels: Sequence[str] | None = None,
    title: str | None = None,
) -> dict:
    """Draw one panel per metric with one curve per run (``statistic`` across seeds,
    ``smooth``-update trailing mean per seed first, a 95 % bootstrap CI band when
    ``interval`` and a run has > 1 seed); write ``out`` (PNG, SVG or PDF, by its
    suffix). ``labels``: one legend entry per curve (default: the run's name, a sweep
    setting's values); ``title``: the figure's (default: env, algorithm, seeds, what
    line and band show). A band from fewer than MIN_SEEDS seeds is said to be so under
    the title. Returns what was drawn: title, labels (one per run) and ylabels (one
    per panel)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    check_format(out)
    runs = [run for d in run_dirs for run in load_runs(d)]
    names = legend_names(runs, labels)
    fig, axes = plt.subplots(
        len(metrics), 1, figsize=(7, 1 + 3.5 * len(metrics)), sharex=True, squeeze=False
    )
    ylabels, curves = [], []
    for ax, metric in zip(axes[:, 0], metrics, strict=True):
        curves.append(draw_panel(ax, runs, names, metric, smooth, statistic, interval))
        ylabels.append(axis_label(metric, runs))
        ax.set_ylabel(ylabels[-1])
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("env steps (per seed)")
    axes[0, 0].legend()
    title = title or figure_title(runs, statistic, interval, smooth)
    caveat = few_seeds_caveat(runs) if interval else ""
    heading = "\n".join(textwrap.wrap(title, 80) + ([caveat] if caveat else []))
    axes[0, 0].set_title(heading, fontsize=10)
    drawn = [line.get_label() for line in axes[0, 0].get_lines()]
    fig.tight_layout()
    fig.savefig(Path(out), dpi=120, bbox_inches="tight")  # nothing clipped
    plt.close(fig)
    return {"title": title, "caveat": caveat, "labels": drawn, "ylabels": ylabels, "curves": curves}


def legend_names(runs: Sequence[Run], labels: Sequence[str] | None) -> list[str]:
    """One legend entry per curve: ``labels`` (one each), else ``run_label``'s."""
    if labels is None:
        return [run_label(r, runs) for r in runs]
    if len(labels) != len(runs):
        names = ", ".join(r.name for r in runs)
        raise ValueError(
            f"--label: {len(labels)} given for {len(runs)} curves ({names}); give one per curve"
        )
    return list(labels)


def draw_panel(
    ax: Any,
    runs: Sequence[Run],
    names: list[str],
    metric: str,
    smooth: int,
    statistic: str,
    interval: bool,
) -> list[tuple]:
    """One metric's curves, a band each where a run has more than one seed; returns
    (env steps, center, low, high) per run."""
    curves = []
    for run, name in zip(runs, names, strict=True):
        values = smooth_trailing(metric_of(run, metric), smooth)
        center, low, high = across_seeds(values, statistic, interval)
        shown = np.isfinite(center)
        (line,) = ax.plot(run.env_steps[shown], center[shown], label=name)
        curves.append((run.env_steps[shown], center[shown], low[shown], high[shown]))
        if interval and run.num_seeds > 1:
            ax.fill_between(
                run.env_steps[shown], low[shown], high[shown], color=line.get_color(), alpha=0.2
            )
    return curves


FORMATS = (".png", ".svg", ".pdf")
MIN_SEEDS = 5  # a bootstrap band from fewer seeds is noted as indicative


def check_format(out: str | Path) -> None:
    if Path(out).suffix.lower() not in FORMATS:
        raise ValueError(
            f"--out {out}: the figure's format comes from its suffix; give a "
            f"{', '.join(FORMATS)} file"
        )


def few_seeds_caveat(runs: Sequence[Run]) -> str:
    """What the band is worth when a run has fewer than MIN_SEEDS seeds (and more than
    one: one seed has no band)."""
    few = sorted({r.num_seeds for r in runs if 1 < r.num_seeds < MIN_SEEDS})
    if not few:
        return ""
    counts = " or ".join(map(str, few))
    return f"(bands from {counts} seeds: a bootstrap of fewer than {MIN_SEEDS} is indicative only)"


def load_runs(run_dir: str | Path) -> list[Run]:
    """A run directory's config (env, algorithm, seeds) and metrics.jsonl as arrays:
    one Run, or for a sweep one per setting (named ``<run>/setting_<k>``)."""
    run_dir = Path(run_dir)
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{run_dir}: no metrics.jsonl (is it an nnxrl run directory?)")
    config = {}
    if (run_dir / "config.yaml").is_file():
        config = yaml.safe_load((run_dir / "config.yaml").read_text(errors="replace")) or {}
        config = config if isinstance(config, dict) else {}
    records = read_records(path)
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
        run_of(f"{name}/setting_{k}" if k is not None else name, config, rows)
        for k, rows in sorted(by_setting.items(), key=lambda item: item[0] or 0)
    ]
    names = {metric for run in runs for metric in run.metrics}
    for run in runs:  # a setting that diverged at once has no metric but that flag
        shape = (run.num_seeds, len(run.env_steps))
        run.metrics.update({m: np.full(shape, np.nan) for m in names - set(run.metrics)})
    return runs


def load_run(run_dir: str | Path) -> Run:
    """A run directory that is not a sweep, as one Run."""
    return load_runs(run_dir)[0]


def run_of(name: str, config: dict, records: list[dict]) -> Run:
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


def across_seeds(
    values: np.ndarray, statistic: str = "mean", interval: bool = True, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[S, U] -> (statistic, CI low, CI high), each [U]: ``statistic`` ('mean' or 'iqm',
    the mean of the middle 50 % of seeds) over the seeds with a value, and the 2.5 and
    97.5 percentiles of that statistic over BOOTSTRAP_SAMPLES resamples of the seeds
    (percentile bootstrap, fixed seed; the band is the point when one seed has a value)."""
    num_seeds, num_updates = values.shape
    center = row_statistic(values.T, statistic)
    low, high = center.copy(), center.copy()
    if not interval or num_seeds < 2:
        return center, low, high
    picks = np.random.default_rng(seed).integers(0, num_seeds, (BOOTSTRAP_SAMPLES, num_seeds))
    for j in np.flatnonzero(np.isfinite(center)):
        stats = row_statistic(values[picks, j], statistic)  # [samples]
        low[j], high[j] = np.percentile(stats[np.isfinite(stats)], [2.5, 97.5])
    return center, low, high


def row_statistic(rows: np.ndarray, statistic: str) -> np.ndarray:
    """[R, S] -> [R]: each row's mean or interquartile mean over its finite values
    (IQM: sorted values with floor(n/4) trimmed from each end, n the finite count);
    NaN for a row without any."""
    ordered = np.sort(rows, axis=1)  # NaN sorts last
    n = np.isfinite(ordered).sum(axis=1)
    cut = n // 4 if statistic == "iqm" else np.zeros_like(n)
    index = np.arange(rows.shape[1])
    keep = (index >= cut[:, None]) & (index < (n - cut)[:, None])
    total = np.where(keep, ordered, 0.0).sum(axis=1)
    count = keep.sum(axis=1)
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def run_label(run: Run, runs: Sequence[Run]) -> str:
    """The run's name (a sweep setting's: its values), plus what sets it apart when
    the runs differ."""
    same = len({(r.env, r.algo) for r in runs}) == 1
    seeds = f"{run.num_seeds} seed{'s' if run.num_seeds != 1 else ''}"
    name = ", ".join(f"{k}={v}" for k, v in run.hparams.items()) if run.hparams else run.name
    return f"{name} ({seeds})" if same else f"{name} ({run.algo}, {run.env}, {seeds})"


def axis_label(metric: str, runs: Sequence[Run]) -> str:
    windows = {r.return_window for r in runs}
    window = windows.pop() if len(windows) == 1 else "N"
    return LABELS.get(metric, metric).format(window=window)


def figure_title(runs: Sequence[Run], statistic: str, interval: bool, smooth: int) -> str:
    """Env and algorithm and seed count (when shared), what the line and band show."""
    parts = []
    if len({(r.env, r.algo) for r in runs}) == 1:
        parts += [runs[0].env, runs[0].algo.upper()]
    seeds = {r.num_seeds for r in runs}
    if len(seeds) == 1:
        n = seeds.pop()
        parts.append(f"{n} seed{'s' if n != 1 else ''}")
    what = {"mean": "mean", "iqm": "IQM"}[statistic] + " across seeds"
    if interval and any(r.num_seeds > 1 for r in runs):
        what += ", 95 % bootstrap CI"
    parts.append(what)
    if smooth > 1:
        parts.append(f"smoothed over {smooth} updates")
    return " · ".join(parts)
