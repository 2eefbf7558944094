"""Learning curves from runs' ``metrics.jsonl``: mean +- std across seeds over env steps."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from nnxrl.logging.jsonl import read_records


def load_curve(run_dir: str | Path, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(env_steps, mean, std) over seeds for each update where some seed has a value."""
    path = Path(run_dir) / "metrics.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{run_dir}: no metrics.jsonl (is it an nnxrl run directory?)")
    values: dict[int, list[float]] = defaultdict(list)
    seen_metric = False
    for record in read_records(path):
        if metric in record:
            seen_metric = True
            if record[metric] is not None:
                values[record["env_steps"]].append(record[metric])
    if not seen_metric:
        raise KeyError(f"{run_dir}: metric {metric!r} is not in metrics.jsonl")
    steps = np.array(sorted(values))
    mean = np.array([np.mean(values[s]) for s in steps])
    std = np.array([np.std(values[s]) for s in steps])
    return steps, mean, std


def plot_runs(run_dirs: Sequence[str | Path], metric: str, out: str | Path) -> list[str]:
    """One curve per run (mean with a +-std band), overlaid, with a legend; writes ``out``
    and returns the legend's labels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for run_dir in run_dirs:
        steps, mean, std = load_curve(run_dir, metric)
        (line,) = ax.plot(steps, mean, label=Path(run_dir).name)
        ax.fill_between(steps, mean - std, mean + std, color=line.get_color(), alpha=0.2)
    ax.set_xlabel("env steps (per seed)")
    ax.set_ylabel(metric)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    labels = [line.get_label() for line in ax.get_lines()]
    fig.savefig(Path(out), dpi=120)
    plt.close(fig)
    return labels
