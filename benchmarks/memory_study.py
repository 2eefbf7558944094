"""Why a memory kind does or does not learn a memory task: one config trained under
several variants (each a list of overrides), 4 seeds each, side by side.

    uv run python benchmarks/memory_study.py --config configs/ppo-rnn-repeat-previous.yaml \
        --variant "as shipped=" --variant "width 128=network.width=128"
    uv run python benchmarks/memory_study.py --config configs/ppo-rnn-repeat-previous.yaml \
        --set network.kind=lstm --variant "lr 1e-3=ppo.learning_rate=1e-3" \
        --seed-offset 1000 --curves docs/memory_curves.json

A variant is ``NAME=OVERRIDE;OVERRIDE...`` (an empty list: the config as it is); ``--set``
applies to every variant. Each variant is one ``nnxrl train`` in a fresh process. Its
row: each seed's final return (the mean ``episode_return`` of its last 10 updates, as
``tests/test_learning.py`` measures it), their mean, how many seeds reach 0.9, and the
wall seconds. ``--curves FILE`` adds every variant's mean return per update (over the
seeds) to a JSON file; ``--plot FILE`` draws that file's curves (with no variant:
only draws them, as for ``docs/memory_curves.png``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
LAST = 10  # updates averaged for a seed's final return


def main() -> None:
    args = parse_args()
    if args.plot and not args.variant:  # draw a curves file only
        plot(json.loads(Path(args.curves).read_text()), args.plot, args.title)
        return
    if not args.config or not args.variant:
        sys.exit(
            "memory_study.py: give --config and at least one --variant (or --curves and --plot)"
        )
    print(f"{args.config} {' '.join(args.set)} (seed offset {args.seed_offset})")
    print("| variant | mean | seeds >= 0.9 | per seed | s |")
    print("|---|---:|---:|---|---:|")
    curves = load_curves(args.curves)
    for name, overrides in map(parse_variant, args.variant):
        finals, curve, seconds = train(args.config, [*args.set, *overrides], args.seed_offset)
        per_seed = ", ".join(f"{x:.2f}" for x in finals)
        good = int(np.sum(finals >= 0.9))
        print(f"| {name} | {finals.mean():.3f} | {good} | {per_seed} | {seconds:.0f} |", flush=True)
        label = f"{name} | {' '.join(args.set)} | offset {args.seed_offset}"
        curves[label] = curve
    if args.curves:
        Path(args.curves).write_text(json.dumps(curves, indent=1))
    if args.plot:
        plot(curves, args.plot, args.title)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="the config every variant starts from")
    parser.add_argument("--variant", action="append", default=[], help="NAME=OVERRIDE;...")
    parser.add_argument("--set", action="append", default=[], help="an override for every variant")
    parser.add_argument("--seed-offset", type=int, default=0)
    parser.add_argument("--curves", help="a JSON file the variants' mean curves are added to")
    parser.add_argument("--plot", help="draw the curves (of --curves) into this PNG")
    parser.add_argument("--title", default="", help="the plot's title")
    return parser.parse_args()


def parse_variant(text: str) -> tuple[str, list[str]]:
    name, _, rest = text.partition("=")
    return name.strip(), [o.strip() for o in rest.split(";") if o.strip()]


def train(config: str, overrides: list[str], seed_offset: int) -> tuple[np.ndarray, list, float]:
    """One run in a fresh process: each seed's final return, the mean curve
    [(env steps, mean return)], wall seconds."""
    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-m", "nnxrl", "train", config, "--out", f"{out}/run"]
        sets = ["logging.backends=[]", "checkpoint.enabled=false", f"seed={seed_offset}"]
        for o in [*sets, *overrides]:
            command += ["--set", o]
        started = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            sys.exit(f"{' '.join(overrides)} failed:\n{done.stderr[-3000:]}")
        lines = Path(f"{out}/run/metrics.jsonl").read_text().splitlines()
    records = [json.loads(x) for x in lines]
    return final_returns(records), mean_curve(records), seconds


def final_returns(records: list[dict]) -> np.ndarray:
    """Each seed's mean episode_return over its last ``LAST`` updates."""
    last = max(r["update"] for r in records)
    by_seed: dict[int, list[float]] = {}
    for r in records:
        if r["update"] > last - LAST and r["episode_return"] is not None:
            by_seed.setdefault(r["seed"], []).append(r["episode_return"])
    return np.asarray([np.mean(v) for _, v in sorted(by_seed.items())])


def mean_curve(records: list[dict]) -> list[tuple[int, float]]:
    """[(env steps, the seeds' mean episode_return)] per update that ended episodes."""
    by_update: dict[int, list[float]] = {}
    steps: dict[int, int] = {}
    for r in records:
        if r["episode_return"] is not None:
            by_update.setdefault(r["update"], []).append(r["episode_return"])
            steps[r["update"]] = r["env_steps"]
    return [(steps[u], float(np.mean(v))) for u, v in sorted(by_update.items())]


def load_curves(path: str | None) -> dict:
    if path and Path(path).exists():
        return json.loads(Path(path).read_text())
    return {}


def plot(curves: dict, path: str, title: str = "") -> None:
    """Each variant's mean return against env steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for label, curve in curves.items():
        steps, returns = zip(*curve, strict=True)
        ax.plot(steps, returns, label=label, linewidth=1)
    ax.set(xlabel="env steps", ylabel="return (mean of 4 seeds)", ylim=(0, 1.02), title=title)
    ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
