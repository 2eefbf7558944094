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
from pathlib import Path
from typing import Any

import numpy as np

from nnxrl.analysis import interval_estimates as ie
from nnxrl.analysis.runs import DEFAULT_METRIC, Run, load_runs, metric_of, smooth_trailing

BOOTSTRAP_SAMPLES = 2000
LABELS = {
    "episode_return": "return (update's episodes)",
    "episode_return_window": "return (last {window} episodes)",
    "episode_length": "episode length",
    "loss/total": "total loss",
    "stats/explained_variance": "explained variance",
}


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
    the title. Returns what was drawn: title, metrics, labels (one per run) and
    ylabels (one per panel)."""
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
    drawn_metrics = {"metrics": metrics, "labels": drawn, "ylabels": ylabels, "curves": curves}
    return {"title": title, "caveat": caveat, **drawn_metrics}


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


def across_seeds(
    values: np.ndarray, statistic: str = "mean", interval: bool = True, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[S, U] -> (statistic, CI low, CI high), each [U]: ``statistic`` ('mean' or 'iqm',
    the mean of the middle 50 % of seeds) over the seeds with a value, and its 95 %
    percentile bootstrap interval over BOOTSTRAP_SAMPLES resamples of the seeds
    (``interval_estimates``: the one trimmed mean and the one bootstrap; fixed seed;
    the band is the point for one seed)."""
    cut = 0.25 if statistic == "iqm" else 0.0

    def over_seeds(x: np.ndarray) -> np.ndarray:  # [..., S, 1, U] -> [..., U]
        return ie.trimmed_mean(np.moveaxis(x[..., 0, :], -2, -1), cut)

    runs = values[:, None, :]  # the seeds as runs of one task
    center = over_seeds(runs)
    if not interval or values.shape[0] < 2:
        return center, center.copy(), center.copy()
    _, (low, high) = ie.interval(
        over_seeds, (runs,), BOOTSTRAP_SAMPLES, np.random.default_rng(seed)
    )
    return (
        center,
        np.where(np.isfinite(center), low, center),
        np.where(np.isfinite(center), high, center),
    )


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
