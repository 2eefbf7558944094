"""Stratified-bootstrap interval estimates of aggregate scores (Agarwal et al. 2021),
vectorised over the bootstrap samples.

The statistics are rliable's (``rliable.metrics``: the same definitions, checked
against it in the tests): for scores ``x`` [N runs, E tasks],

    mean            = mean_e mean_n x[n, e]
    median          = median_e mean_n x[n, e]
    IQM             = the mean of the middle 50 % of all N * E scores (25 % trimmed)
    optimality gap  = gamma - mean_{n,e} min(x[n, e], gamma)       (gamma = 1)
    P(X > Y)        = mean_e P(x[., e] > y[., e]), ties counting half (Mann-Whitney U)

and the intervals rliable's percentile stratified bootstrap: each sample redraws
the N runs of every task with replacement, within the task (the tasks are fixed);
X and Y are redrawn independently. rliable draws its samples one at a time
(``arch``'s bootstrap, a Python loop): 4.3 s here for 2,000 samples of the four
aggregates and P(X > Y) of two methods on two envs, against 0.016 s for all samples
drawn at once as index arrays (272x, ``benchmarks/compare.py``; the bounds agree
to 0.015, Monte Carlo error). That measurement is why this module exists.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

CONFIDENCE = 0.95
AGGREGATES = ("median", "iqm", "mean", "optimality_gap")  # the order ``aggregates`` gives
NAMES = {"median": "Median", "iqm": "IQM", "mean": "Mean", "optimality_gap": "Optimality gap"}


def aggregates(x: np.ndarray, gamma: float = 1.0) -> np.ndarray:
    """[..., N, E] -> [..., 4]: median, IQM, mean and optimality gap (see above)."""
    task_means = x.mean(axis=-2)
    flat = x.reshape(*x.shape[:-2], -1)
    return np.stack(
        [
            np.median(task_means, axis=-1),
            trimmed_mean(flat, 0.25),
            task_means.mean(axis=-1),
            gamma - np.minimum(flat, gamma).mean(axis=-1),
        ],
        axis=-1,
    )


def trimmed_mean(x: np.ndarray, cut: float) -> np.ndarray:
    """[..., M] -> [...]: the mean of the values left when int(cut * n) of the lowest
    and as many of the highest are cut (``scipy.stats.trim_mean``'s rule), n the
    number of defined (not NaN) values; NaN where none is. cut 0.25: the IQM."""
    m = x.shape[-1]
    ordered = np.sort(x, axis=-1)  # NaN sorts last
    if not np.isnan(x).any():  # every value defined: one slice (measured faster)
        k = int(cut * m)
        return ordered[..., k : m - k].mean(axis=-1)
    n = np.isfinite(ordered).sum(axis=-1)
    k = (cut * n).astype(int)
    index = np.arange(m)
    keep = (index >= k[..., None]) & (index < (n - k)[..., None])
    count = keep.sum(axis=-1)
    total = np.where(keep, ordered, 0.0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def probability_of_improvement(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """[..., Nx, E], [..., Ny, E] -> [...]: P(X > Y), ties counting half, averaged
    over the tasks."""
    a, b = x[..., :, None, :], y[..., None, :, :]
    per_task = ((a > b) + 0.5 * (a == b)).mean(axis=(-3, -2))
    return per_task.mean(axis=-1)


def above(x: np.ndarray, taus: np.ndarray) -> np.ndarray:
    """[..., N, E] -> [..., T]: the fraction of all runs scoring above each tau (a
    performance profile: rliable's score distribution)."""
    flat = x.reshape(*x.shape[:-2], -1)
    return (flat[..., None] > taus).mean(axis=-2)


def resample(x: np.ndarray, reps: int, rng: np.random.Generator) -> np.ndarray:
    """[N, E, ...] -> [reps, N, E, ...]: each task's runs redrawn with replacement."""
    n, e = x.shape[:2]
    runs = rng.integers(0, n, size=(reps, n, e))
    return x[runs, np.arange(e)]


def interval(
    statistic: Callable[..., np.ndarray],
    samples: tuple[np.ndarray, ...],
    reps: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """(the statistic of ``samples``, its [2, ...] percentile interval): each
    sample [N, E, ...] redrawn within tasks, independently of the others."""
    point = statistic(*samples)
    drawn = statistic(*(resample(x, reps, rng) for x in samples))
    tail = 100 * (1 - CONFIDENCE) / 2
    if not np.isnan(drawn).any():
        return point, np.percentile(drawn, [tail, 100 - tail], axis=0)
    with warnings.catch_warnings():  # a point no draw defines stays NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        return point, np.nanpercentile(drawn, [tail, 100 - tail], axis=0)


def along(x: np.ndarray, statistic: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """[..., N, E, K] -> [..., K]: ``statistic`` of [N, E] scores at each of K points."""
    return statistic(np.moveaxis(x, -1, -3))
