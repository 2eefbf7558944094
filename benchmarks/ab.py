"""Throughput of two source trees of nnxrl side by side (a refactor's A/B check).

Each measurement is a fresh process that imports nnxrl from the given ``src``
folder, reads the config and compiles (the "compile s" column: from the start of
the process, imports included, to the end of the first chunk, since a tree may
import an env suite when it reads a config or when it builds the env), then times
training with logging off; the two trees take turns, ``--rounds`` times, and the
table gives medians and the ratio B/A.

    git worktree add ../before <commit>
    uv run python benchmarks/ab.py ../before/src src --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

MEASURE = r"""
import time
started = time.perf_counter()  # the first chunk's time counts every import
import importlib, json, sys
try:
    from nnxrl.parallel.devices import use_cpu_devices
except ImportError:  # trees from before parallel/
    from nnxrl.devices import use_cpu_devices
use_cpu_devices()
import jax
from nnxrl import config as C
try:
    from nnxrl.config import schedule
except ImportError:  # trees from before config/ was a package
    from nnxrl.run import schedule
name, path, overrides, chunks = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
if "compile_cache" in C.Config.__dataclass_fields__:  # time cold compiles on both sides
    overrides = [*overrides, "compile_cache.enabled=false"]
for module in ("nnxrl.run.programs", "nnxrl.programs", "nnxrl.train"):  # newest first
    try:
        compile_programs = importlib.import_module(module).compile_programs
        break
    except ImportError:
        continue
config = C.load(path, overrides)
programs = compile_programs(config)
if hasattr(programs, "chunk_programs"):  # a program per chunk length
    chunk = programs.chunk(schedule.updates_per_chunk(config))
else:
    chunk = programs.chunk
state, metrics = chunk(programs.init(), programs.hp)
jax.block_until_ready(metrics)
compile_s = time.perf_counter() - started
t = time.perf_counter()
for _ in range(chunks):
    state, metrics = chunk(state, programs.hp)
jax.block_until_ready(metrics)
steps = chunks * schedule.updates_per_chunk(config) * schedule.batch_size(config) * config.num_seeds
print(json.dumps({"compile_s": compile_s, "sps": steps / (time.perf_counter() - t)}))
"""

CASES = {
    "CartPole-v1, 1 seed": (
        "configs/ppo-cartpole.yaml",
        ["logging.updates_per_chunk=61", "logging.backends=[]"],
        8,
    ),
    "CartPole-v1, 8 seeds": (
        "configs/ppo-cartpole.yaml",
        ["num_seeds=8", "logging.updates_per_chunk=61", "logging.backends=[]"],
        4,
    ),
    "CartPole-v1, 2 seeds": (
        "configs/ppo-cartpole.yaml",
        ["num_seeds=2", "logging.updates_per_chunk=61", "logging.backends=[]"],
        4,
    ),
    "Asterix-MinAtar DQN, 2 seeds, 20k buffer": (
        "configs/dqn-asterix-minatar.yaml",
        [
            "num_seeds=2",
            "dqn.buffer_size=20000",
            "dqn.learning_starts=100",
            "logging.updates_per_chunk=500",
            "logging.backends=[]",
        ],
        2,
    ),
    "CartPole-v1 DQN, 4 seeds (its learning test's)": (
        "configs/dqn-cartpole.yaml",
        [
            "num_seeds=4",
            "dqn.learning_starts=100",
            "logging.updates_per_chunk=500",
            "logging.backends=[]",
        ],
        2,
    ),
    "CartPole-v1 PQN, 1 seed": (
        "configs/pqn-cartpole.yaml",
        ["logging.updates_per_chunk=61", "logging.backends=[]"],
        2,
    ),
    "Craftax-Symbolic PPO-TrXL (M = 128), 64 envs": (
        "configs/ppo-trxl-craftax-symbolic.yaml",
        ["env.num_envs=64", "logging.updates_per_chunk=1", "logging.backends=[]"],
        1,
    ),
    "RepeatPrevious PPO-TrXL (M = 8)": (
        "configs/ppo-trxl-repeat-previous.yaml",
        ["logging.updates_per_chunk=10", "logging.backends=[]"],
        2,
    ),
    "RepeatPrevious PPO GRU (its recall test's)": (
        "configs/ppo-rnn-repeat-previous.yaml",
        ["logging.updates_per_chunk=50", "logging.backends=[]"],
        2,
    ),
    "RepeatPrevious PQN LSTM (its recall test's)": (
        "configs/pqn-rnn-repeat-previous.yaml",
        ["network.kind=lstm", "logging.updates_per_chunk=50", "logging.backends=[]"],
        2,
    ),
    "Craftax-Symbolic PPO-GRU, 64 envs": (
        "configs/ppo-rnn-craftax-symbolic.yaml",
        ["env.num_envs=64", "logging.updates_per_chunk=2", "logging.backends=[]"],
        2,
    ),
    # the tests' smoke runs: most of their time is compiling (fast_compile's programs)
    "CartPole-v1, 32 tiny updates, fast_compile (tests/cli_runs.py)": (
        "configs/ppo-cartpole.yaml",
        ["total_env_steps=2048", "ppo.num_steps=16", "network.width=16", "fast_compile=true"],
        1,
    ),
    "Craftax-Classic-Symbolic, 2 tiny updates, fast_compile (tests/cli_runs.py)": (
        "configs/ppo-craftax-classic-symbolic.yaml",
        [
            *["fast_compile=true", "env.num_envs=8", "env.reset_ratio=4", "ppo.num_steps=8"],
            *["total_env_steps=128", "ppo.num_minibatches=2", "ppo.num_epochs=1"],
            *["network.width=64", "logging.updates_per_chunk=1", "logging.backends=[]"],
        ],
        1,
    ),
    "Craftax-Classic-Symbolic, 1 seed": (
        "configs/ppo-craftax-classic-symbolic.yaml",
        ["total_env_steps=1048576", "logging.updates_per_chunk=1", "logging.backends=[]"],
        2,
    ),
}


def measure(src: str, case: str) -> dict:
    path, overrides, chunks = CASES[case]
    env = {**os.environ, "PYTHONPATH": src}
    args = [sys.executable, "-c", MEASURE, case, path, json.dumps(overrides), str(chunks)]
    done = subprocess.run(args, capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("src_a")
    parser.add_argument("src_b")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cases", nargs="*", default=list(CASES))
    args = parser.parse_args()
    rows = []
    for case in args.cases:
        results: dict[str, list[dict]] = {"a": [], "b": []}
        for r in range(args.rounds):
            for side, src in (("a", args.src_a), ("b", args.src_b)):
                results[side].append(measure(src, case))
                print(f"{case} round {r + 1} {side}: {results[side][-1]}", flush=True)
        med = {
            side: {k: statistics.median(x[k] for x in v) for k in ("compile_s", "sps")}
            for side, v in results.items()
        }
        rows.append((case, med))
    print("\n| run | A env steps/s | B env steps/s | B/A | A compile s | B compile s |")
    print("|---|---:|---:|---:|---:|---:|")
    for case, m in rows:
        a, b = m["a"], m["b"]
        print(
            f"| {case} | {a['sps']:,.0f} | {b['sps']:,.0f} | {b['sps'] / a['sps']:.2f} "
            f"| {a['compile_s']:.1f} | {b['compile_s']:.1f} |"
        )


if __name__ == "__main__":
    main()
