"""A run's score per seed, on a scale shared across envs: what ``nnxrl compare``
aggregates.

A seed's score is its rolling return (``episode_return_window``, the mean of its
last ``logging.return_window`` episodes) mapped through the env's declared range,
``(return - low) / (high - low)``: 0 is the declared floor, 1 the best possible.
Craftax envs are scored as their scoreboard is, from the achievements: the
geometric mean of the success rates in percent, ``exp(mean_i ln(1 + s_i)) - 1``
(Hafner 2021, Crafter's score; 100 when every achievement is always unlocked), over
the last 5 % of updates, divided by 100.

``SCORE_RANGES`` declares the range of the envs nnxrl ships where one is known (the
lowest and highest return an episode can have); others (MinAtar, Brax, registered
envs) need one given (``--range ENV=LOW:HIGH``), or are compared on raw returns when
they are the only env.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from nnxrl.analysis.runs import Run, metric_of, smooth_trailing

RETURN = "episode_return_window"
CRAFTAX_SCORE = "craftax_score"  # the achievements' score, % of the best
TAIL = 0.05  # Craftax: the share of the last updates its achievement rates average

SCORE_RANGES: dict[str, tuple[float, float]] = {
    "CartPole-v1": (0.0, 500.0),  # +1 per step, at most 500 steps
    "StatelessCartPole-v1": (0.0, 500.0),
    "Acrobot-v1": (-500.0, 0.0),  # -1 per step until the goal, at most 500 steps
    "MountainCar-v0": (-200.0, 0.0),  # -1 per step, at most 200 steps
    "Pendulum-v1": (-200 * (math.pi**2 + 0.1 * 8**2 + 0.001 * 2**2), 0.0),  # 200 steps
    "MemoryChain-bsuite": (-1.0, 1.0),  # +1 or -1 for the one answer
    "RepeatPrevious-v0": (0.0, 1.0),  # 1 / (length - delay) per right answer
    "DeepSea-bsuite": (-0.01, 1.0),  # the treasure (1) less at most 0.01 of move costs
}


@dataclass(frozen=True)
class Scored:
    """A run's scores: per seed at its end, and per seed along the run."""

    final: np.ndarray  # [S] each seed's score at the last update
    curve: np.ndarray  # [S, U] each seed's score after each update (NaN: none yet)
    normalised: bool  # mapped to [0, 1] by a declared range (or Craftax's %)
    source: str  # what the score is: "episode_return_window in [low, high]", ...


def score_run(
    run: Run, ranges: Mapping[str, tuple[float, float]] | None = None, metric: str | None = None
) -> Scored:
    """``run``'s scores (see the module docstring): of ``metric`` if given (a range
    for it is the caller's), else the env's own score. ``ranges`` adds to or
    overrides ``SCORE_RANGES``; an env without one is scored on raw values."""
    ranges = {**SCORE_RANGES, **(ranges or {})}
    craftax = run.env.startswith("Craftax") and any(
        m.startswith("achievements/") for m in run.metrics
    )
    if metric is None and craftax and run.env not in ranges:
        curve = craftax_score(run) / 100.0
        return Scored(last_defined(curve), curve, True, f"{CRAFTAX_SCORE} / 100")
    metric = metric or RETURN
    if run.env in ranges:
        low, high = ranges[run.env]
        curve = (metric_of(run, metric) - low) / (high - low)
        return Scored(last_defined(curve), curve, True, f"{metric} in [{low:g}, {high:g}]")
    curve = metric_of(run, metric)
    return Scored(last_defined(curve), curve, False, f"{metric} (raw: no range declared)")


def craftax_score(run: Run) -> np.ndarray:
    """[S, U] Crafter's score in percent after each update: the geometric mean of
    1 + every achievement's success rate (%), less 1, the rates averaged over the
    last 5 % of updates (at least one) up to that update."""
    window = max(1, round(TAIL * len(run.env_steps)))
    names = sorted(m for m in run.metrics if m.startswith("achievements/"))
    rates = np.stack([smooth_trailing(run.metrics[m], window) for m in names])  # [A, S, U]
    with np.errstate(invalid="ignore"):
        return np.expm1(np.log1p(100.0 * rates).mean(axis=0))


def last_defined(curve: np.ndarray) -> np.ndarray:
    """[S, U] -> [S]: each seed's last finite value (NaN for a seed without one)."""
    out = np.full(curve.shape[0], np.nan)
    for s, row in enumerate(curve):
        finite = np.flatnonzero(np.isfinite(row))
        if finite.size:
            out[s] = row[finite[-1]]
    return out
