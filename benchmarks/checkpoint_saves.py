"""What one periodic checkpoint costs: the seconds of ``checkpoint.save`` in a small run
that saves after every update, per config, from one or two source trees, each run a
fresh process, the trees alternated, medians over the saves after the first and over
``--rounds``. The configs are the small runs the tests save most: CartPole PPO on one
device, its GRU and E3B variants with each seed's envs split over the 2 devices, DQN
with its replay buffer.

    uv run python benchmarks/checkpoint_saves.py src                   # this tree
    uv run python benchmarks/checkpoint_saves.py ../before/src src     # A/B

A save blocks the training loop, so on a 2-core machine its seconds are the run's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
SMALL = ["total_env_steps=2048", "logging.backends=[]", "checkpoint.every_updates=1"]
PPO = ["ppo.num_steps=32", "ppo.num_minibatches=2"]
CASES = {
    "ppo": ("configs/ppo-cartpole.yaml", PPO),
    "ppo-gru": (
        "configs/ppo-cartpole.yaml",
        [*PPO, "network.kind=gru", "network.width=32", "mesh.envs=2"],
    ),
    "e3b": (
        "configs/e3b-craftax-classic-symbolic.yaml",
        [
            *(*PPO, "env.id=CartPole-v1", "env.num_envs=4", "env.reset_ratio=1"),
            *("network.width=32", "intrinsic.options={latent_size: 8, width: 32}", "mesh.envs=2"),
        ],
    ),
    "dqn": (
        "configs/dqn-cartpole.yaml",
        ["env.num_envs=4", "dqn.num_steps=32", "dqn.buffer_size=512", "dqn.learning_starts=64"],
    ),
}
MEASURE = r"""
import json, sys, tempfile, time
from nnxrl import config as config_lib
from nnxrl.parallel.devices import use_cpu_devices
use_cpu_devices()
from nnxrl.run.training import run_training
from nnxrl.store import checkpoint
times, save = [], checkpoint.save
def timed(*args, **kwargs):
    t = time.perf_counter()
    try:
        return save(*args, **kwargs)
    finally:
        times.append(time.perf_counter() - t)
checkpoint.save = timed
config = config_lib.load(sys.argv[1], json.loads(sys.argv[2]))
run_training(config, tempfile.mkdtemp() + "/run", quiet=True)
print(json.dumps(times))
"""


def measure(src: str, case: str) -> list[float]:
    path, overrides = CASES[case]
    env = {**os.environ, "PYTHONPATH": src}
    args = [sys.executable, "-c", MEASURE, str(ROOT / path), json.dumps([*overrides, *SMALL])]
    done = subprocess.run(args, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{case} with {src} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])[1:]  # after the first


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("srcs", nargs="+", help="one or two src folders")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    args = parser.parse_args()
    per_save: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for case in args.cases:
            for src in args.srcs:
                per_save.setdefault((case, src), []).append(statistics.median(measure(src, case)))
    print("\nseconds per periodic checkpoint (medians)")
    print("| config | " + " | ".join(args.srcs) + " |")
    print("|---|" + "---:|" * len(args.srcs))
    for case in args.cases:
        row = [f"{statistics.median(per_save[case, src]):.3f}" for src in args.srcs]
        print(f"| {case} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
