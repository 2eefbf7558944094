"""The figures of a comparison (``comparison.py``), drawn with rliable's own plotting
(``rliable.plot_utils``): the aggregates with their intervals, the performance
profiles, the IQM along training and the probabilities of improvement. Each is
written as PNG (for a look), SVG or PDF (for a paper)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from nnxrl.analysis.interval_estimates import AGGREGATES as STATISTICS
from nnxrl.analysis.interval_estimates import NAMES

Comparison = Any  # nnxrl.analysis.comparison.Comparison (not imported: it imports this module)

FORMATS = ("png", "svg", "pdf")


def draw_figures(c: Comparison, out: Path, fmt: str = "png") -> list[Path]:
    """intervals, profiles, sample_efficiency and (two methods or more) improvement,
    as ``out/<name>.<fmt>``; nothing without an env every method has."""
    import matplotlib

    matplotlib.use("Agg")
    if fmt not in FORMATS:
        raise ValueError(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if not c.shared:
        return []
    where = f"over {', '.join(c.shared)}"
    written = [
        save(draw_intervals(c, where), out / f"intervals.{fmt}"),
        save(draw_profiles(c, where), out / f"profiles.{fmt}"),
        save(draw_sample_efficiency(c, where), out / f"sample_efficiency.{fmt}"),
    ]
    if c.improvement:
        written.append(save(draw_improvement(c), out / f"improvement.{fmt}"))
    return written


def draw_intervals(c: Comparison, where: str) -> Any:
    from rliable import plot_utils

    shown = [s for s in STATISTICS if all(c.aggregate[m][s] is not None for m in c.methods)]
    points = {m: np.array([c.aggregate[m][s][0] for s in shown]) for m in c.methods}
    intervals = {m: np.array([c.aggregate[m][s][1:] for s in shown]).T for m in c.methods}
    fig, _ = plot_utils.plot_interval_estimates(
        points,
        intervals,
        metric_names=[NAMES[s] for s in shown],
        algorithms=c.methods,
        xlabel=f"score {where} (95 % stratified-bootstrap CI)",
        row_height=0.6,
        subfigure_width=3.6,
        xlabel_y_coordinate=-0.35 - 0.6 / len(c.methods),
    )
    for ax in np.ravel(fig.axes):
        ax.tick_params(axis="x", labelsize="medium", labelrotation=30)
    return fig


def draw_profiles(c: Comparison, where: str) -> Any:
    import matplotlib.pyplot as plt
    from rliable import plot_utils

    fig, ax = plt.subplots(figsize=(6, 4))
    p = c.profiles
    plot_utils.plot_performance_profiles(
        p["points"],
        p["taus"],
        performance_profile_cis=p["intervals"],
        ax=ax,
        xlabel=r"score ($\tau$)",
        ylabel=r"fraction of runs with score $> \tau$",
        labelsize="large",
        ticklabelsize="medium",
    )
    ax.legend(loc="lower left", fontsize="small")
    ax.set_title(f"performance profiles {where}", fontsize="medium")
    return fig


def draw_sample_efficiency(c: Comparison, where: str) -> Any:
    import matplotlib.pyplot as plt
    from rliable import plot_utils

    fig, ax = plt.subplots(figsize=(6, 4))
    curves = c.curves
    plot_utils.plot_sample_efficiency_curve(
        curves["steps"],
        curves["points"],
        curves["intervals"],
        algorithms=c.methods,
        ax=ax,
        xlabel="env steps (per seed)",
        ylabel="IQM score",
        labelsize="large",
        ticklabelsize="medium",
        marker=".",
    )
    ax.legend(loc="lower right", fontsize="small")
    ax.set_title(f"IQM along training {where} (95 % CI)", fontsize="medium")
    return fig


def draw_improvement(c: Comparison) -> Any:
    from rliable import plot_utils

    points = {pair: v[0] for pair, v in c.improvement.items()}
    intervals = {pair: np.array(v[1:]) for pair, v in c.improvement.items()}
    ax = plot_utils.plot_probability_of_improvement(
        points, intervals, figsize=(5, 0.6 + 0.5 * len(points))
    )
    return ax.figure


def save(fig: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.savefig(path, bbox_inches="tight", dpi=120)
    plt.close(fig)
    return path
