"""Learning curves of PQN and PPO at equal env steps, through the CLI and `nnxrl plot`.

    uv run python benchmarks/learning_curves.py                      # CartPole + Asterix
    uv run python benchmarks/learning_curves.py --asterix-steps 1e7 --seeds 4

CartPole-v1: each algorithm's shipped config (configs/{pqn,ppo}-cartpole.yaml), 5 x
10^5 env steps, --seeds seeds. Asterix-MinAtar: configs/pqn-asterix-minatar.yaml
(purejaxql's MinAtar settings) against PPO on the same 128 envs x 32 steps and the
same conv torso and widths (configs/ppo-cartpole.yaml's PPO settings otherwise: not
tuned for MinAtar), cut to --asterix-steps each. Writes one PNG per env (mean +- std
of the training episodes' return over seeds) and prints a table of final returns and
wall-clock seconds.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from nnxrl.analysis.plots import plot_runs
from nnxrl.cli import main as cli

ASTERIX_PPO = [
    "env.id=Asterix-MinAtar",
    "env.num_envs=128",
    "network.num_layers=1",
    "network.width=128",
    "network.activation=relu",
    "network.conv_features=[16]",
    "ppo.num_steps=32",
]


def train(out: Path, config: str, overrides: list[str]) -> float:
    """Train through the CLI; returns the wall-clock seconds it took."""
    args = ["train", config, "--out", str(out), "--set", "logging.backends=[]"]
    t = time.perf_counter()
    assert cli(args + sum((["--set", s] for s in overrides), [])) == 0, out
    return time.perf_counter() - t


def final_return(out: Path) -> float:
    """Mean training-episode return over the last 5 % of updates and all seeds."""
    records = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    last = max(r["update"] for r in records)
    tail = [
        r["episode_return"]
        for r in records
        if r["update"] > last - max(1, last // 20) and r["episode_return"] is not None
    ]
    return float(np.mean(tail))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--asterix-steps", type=float, default=1e6)
    parser.add_argument("--runs", default="runs/curves", help="where the runs are written")
    parser.add_argument("--out", default="docs", help="where the PNGs are written")
    args = parser.parse_args()
    runs, out = Path(args.runs), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    seeds = f"num_seeds={args.seeds}"
    steps = f"total_env_steps={int(args.asterix_steps)}"
    plan = {
        "CartPole-v1": [
            ("PQN", "configs/pqn-cartpole.yaml", [seeds]),
            ("PPO", "configs/ppo-cartpole.yaml", [seeds]),
        ],
        "Asterix-MinAtar": [
            ("PQN", "configs/pqn-asterix-minatar.yaml", [seeds, steps]),
            ("PPO", "configs/ppo-cartpole.yaml", [seeds, steps, *ASTERIX_PPO]),
        ],
    }
    rows = []
    for env, variants in plan.items():
        dirs = []
        for name, config, overrides in variants:
            run = runs / f"{env}-{name}"
            seconds = train(run, config, overrides)
            dirs.append(run)
            rows.append((env, name, final_return(run), seconds))
        png = out / f"pqn-vs-ppo-{env.lower()}.png"
        plot_runs(dirs, "episode_return", png)
        print(f"wrote {png}")
    print("\n| env | algorithm | final return (last 5 %) | wall-clock s |")
    print("|---|---|---:|---:|")
    for env, name, ret, seconds in rows:
        print(f"| {env} | {name} | {ret:.2f} | {seconds:.0f} |")


if __name__ == "__main__":
    main()
