"""Fingerprints of the records of six small runs, for checking that a change of the
code's structure changes no number: run it before and after, and compare the tables.

    uv run python benchmarks/same_records.py [OUT_DIR]

Runs (each through the CLI, as a user would): PPO on CartPole (2 seeds, 100
updates), PQN on CartPole (40 updates), tiny Craftax-Classic-Symbolic runs of PPO
with RND and of PPO with a GRU, DQN on CartPole (2 seeds, 500 gradient steps on
3-step returns) and SAC on Pendulum (2 seeds, 744 gradient steps). Prints one row per
run: the update count and the SHA-256 of its ``metrics.jsonl``.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

from nnxrl.cli import main as cli

TINY_CRAFTAX = [
    "env.num_envs=8",
    "env.reset_ratio=4",
    "ppo.num_steps=8",
    "total_env_steps=256",
    "ppo.num_minibatches=2",
    "ppo.num_epochs=1",
    "network.width=64",
]
QUIET = ["logging.backends=[]", "checkpoint.enabled=false"]
RUNS = {
    "ppo-cartpole": ("configs/ppo-cartpole.yaml", ["num_seeds=2", "total_env_steps=51200"]),
    "pqn-cartpole": ("configs/pqn-cartpole.yaml", ["total_env_steps=81920"]),
    "ppo-rnd-craftax": ("configs/rnd-craftax-classic-symbolic.yaml", TINY_CRAFTAX),
    "ppo-gru-craftax": (
        "configs/ppo-rnn-craftax-classic-symbolic.yaml",
        [*TINY_CRAFTAX, "ppo.num_minibatches=2"],
    ),
    "dqn-cartpole": (
        "configs/dqn-cartpole.yaml",
        ["num_seeds=2", "total_env_steps=6000", "dqn.learning_starts=1000"],
    ),
    "sac-pendulum": ("configs/sac-pendulum.yaml", ["num_seeds=2", "total_env_steps=1000"]),
}


def fingerprint(out: Path, config: str, overrides: list[str]) -> tuple[int, str]:
    args = ["train", config, "--out", str(out)]
    for item in [*overrides, *QUIET]:
        args += ["--set", item]
    if cli(args) != 0:
        raise SystemExit(f"{config} failed: {' '.join(args)}")
    data = (out / "metrics.jsonl").read_bytes()
    updates = {json.loads(line)["update"] for line in data.splitlines()}
    return len(updates), hashlib.sha256(data).hexdigest()[:16]


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
    print("| run | updates | sha256(metrics.jsonl) |\n|---|---|---|")
    for name, (config, overrides) in RUNS.items():
        updates, digest = fingerprint(root / name, config, overrides)
        print(f"| {name} | {updates} | {digest} |", flush=True)


if __name__ == "__main__":
    main()
