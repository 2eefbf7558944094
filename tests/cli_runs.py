"""Shared helpers for tests that train through the CLI with tiny overrides."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from nnxrl.cli import main

ROOT = Path(__file__).parents[1]
CARTPOLE = str(ROOT / "configs/ppo-cartpole.yaml")
# 40 updates of CartPole, 4 envs x 32 steps, in chunks of 4, checkpointed every 20 (an
# Orbax save takes 0.2-0.5 s however small the state: a test saves no more than it needs),
# compiled fast
SHORT_CARTPOLE = [
    "fast_compile=true",
    "total_env_steps=5120",
    "ppo.num_steps=32",
    "ppo.num_minibatches=2",
    "logging.backends=[]",
    "logging.updates_per_chunk=4",
    "checkpoint.every_updates=20",
]


def sets(overrides: list[str]) -> list[str]:
    """``--set`` before each override."""
    return sum((["--set", o] for o in overrides), [])


# CartPole at 2048 env steps: 32 updates of 4 envs x 16 steps, one per chunk; compiled
# fast (fast_compile: what these runs check is what is compiled or loaded, not how
# fast it runs), which took their two test files from 65 s to 55 s
CARTPOLE_32_UPDATES = [
    "total_env_steps=2048",
    "ppo.num_steps=16",
    "network.width=16",
    "fast_compile=true",
]


def train_logged(out: Path, overrides: list[str]) -> str:
    """``nnxrl train`` of tiny CartPole in a fresh process with JAX's compile log on
    (no trackers); its stderr, then its stdout."""
    args = sets(CARTPOLE_32_UPDATES + ["logging.backends=[]"] + overrides)
    cmd = [sys.executable, "-m", "nnxrl", "train", CARTPOLE, "--out", str(out), *args]
    env = {**os.environ, "JAX_LOG_COMPILES": "1", "JAX_EXPLAIN_CACHE_MISSES": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stderr + done.stdout


# Craftax at a size that compiles and runs in seconds: 2 updates of 8 envs x 8 steps,
# compiled fast (fast_compile: XLA's backend optimisations and CPU fusion emitters off).
TINY_CRAFTAX = [
    "fast_compile=true",
    "env.num_envs=8",
    "env.reset_ratio=4",
    "ppo.num_steps=8",
    "total_env_steps=128",
    "ppo.num_minibatches=2",
    "ppo.num_epochs=1",
    "network.width=64",
    "logging.backends=[]",
]
# Any Craftax config moved onto CartPole: 2 updates of 4 envs x 16 steps.
TINY_CARTPOLE = [
    "fast_compile=true",
    "env.id=CartPole-v1",
    "env.num_envs=4",
    "env.reset_ratio=1",
    "ppo.num_steps=16",
    "total_env_steps=128",
    "ppo.num_minibatches=2",
    "network.width=32",
    "logging.backends=[]",
]

# CartPole, 2 seeds, 16 updates of 4 envs x 32 steps handed over 2 at a time: the
# logging tests' run.
TWO_SEEDS_CARTPOLE = [
    "total_env_steps=2048",
    "ppo.num_steps=32",
    "num_seeds=2",
    "logging.updates_per_chunk=2",
    "fast_compile=true",
]

# The same sizes for PQN configs (its settings live in the pqn section).
TINY_PQN_CRAFTAX = [s.replace("ppo.", "pqn.") for s in TINY_CRAFTAX] + ["network.num_layers=2"]
TINY_PQN_CARTPOLE = [s.replace("ppo.", "pqn.") for s in TINY_CARTPOLE]


def train(out: Path, config: str, overrides: list[str]) -> list[dict]:
    """``nnxrl train config --out out --set ...``; returns the metrics.jsonl records."""
    args = ["train", config, "--out", str(out)]
    assert main(args + sum((["--set", s] for s in overrides), [])) == 0
    return [json.loads(x) for x in (Path(out) / "metrics.jsonl").read_text().splitlines()]
