"""What the interval estimates of `nnxrl compare` cost: rliable's own stratified
bootstrap (``rliable.library.get_interval_estimates``, samples drawn one at a time)
against nnxrl's vectorised one (``nnxrl/analysis/interval_estimates.py``), on the same
scores: 2 methods x 2 envs x 10 seeds, the four aggregates and the probability of
improvement, 2,000 samples each.

    uv run python benchmarks/compare.py [--reps 2000] [--repeats 3]

Both are timed in alternation; medians, the ratio and the largest difference
between the two intervals' bounds (the draws differ, so they agree to Monte Carlo
error, not exactly) are printed.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np

from nnxrl.analysis import interval_estimates as ie


def rliable_estimates(table: dict, reps: int) -> tuple[dict, dict]:
    from rliable import library, metrics

    def aggregates(s: np.ndarray) -> np.ndarray:
        return np.array(
            [
                metrics.aggregate_median(s),
                metrics.aggregate_iqm(s),
                metrics.aggregate_mean(s),
                metrics.aggregate_optimality_gap(s),
            ]
        )

    state = np.random.RandomState(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # arch's note on random_state
        _, per_method = library.get_interval_estimates(
            table, aggregates, reps=reps, random_state=state
        )
        pair = {"a,b": (table["a"], table["b"])}
        _, poi = library.get_interval_estimates(
            pair, metrics.probability_of_improvement, reps=reps, random_state=state
        )
    return per_method, poi


def nnxrl_estimates(table: dict, reps: int) -> tuple[dict, dict]:
    rng = np.random.default_rng(0)
    per_method = {m: ie.interval(ie.aggregates, (x,), reps, rng)[1] for m, x in table.items()}
    pair = (table["a"], table["b"])
    poi = {"a,b": ie.interval(ie.probability_of_improvement, pair, reps, rng)[1]}
    return per_method, poi


def timed(fn, *args) -> tuple[float, tuple]:
    start = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    table = {"a": rng.normal(0.6, 0.2, (10, 2)), "b": rng.normal(0.5, 0.2, (10, 2))}
    seconds: dict[str, list[float]] = {"rliable": [], "nnxrl": []}
    for _ in range(args.repeats):
        t, theirs = timed(rliable_estimates, table, args.reps)
        seconds["rliable"].append(t)
        t, ours = timed(nnxrl_estimates, table, args.reps)
        seconds["nnxrl"].append(t)
    gap = max(float(np.max(np.abs(np.ravel(theirs[0][m]) - np.ravel(ours[0][m])))) for m in table)
    gap = max(gap, float(np.max(np.abs(np.ravel(theirs[1]["a,b"]) - np.ravel(ours[1]["a,b"])))))
    slow, fast = (statistics.median(seconds[k]) for k in ("rliable", "nnxrl"))
    print(f"| bootstrap ({args.reps} samples) | median seconds | vs rliable |")
    print("|---|---:|---:|")
    print(f"| rliable (one sample at a time) | {slow:.3f} | 1.0 |")
    print(f"| nnxrl (vectorised) | {fast:.4f} | {slow / fast:.0f}x faster |")
    print(f"\nlargest difference between the two intervals' bounds: {gap:.4f}")


if __name__ == "__main__":
    main()
