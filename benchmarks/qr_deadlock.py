"""Does a LAPACK QR inside a compiled program hang the XLA CPU runtime?

Flax's orthogonal initialiser takes the QR of a Gaussian matrix with
``jnp.linalg.qr``, which on CPU is a LAPACK custom call inside the program. An
earlier version of nnxrl saw that call deadlock "in about half of the test sessions
that ran other programs first", and so initialises networks on the host. This script
tries to reproduce it: each trial is a fresh process with two CPU devices that first
runs other programs (a PPO chunk on CartPole), then jit-compiles and runs an
orthogonal initialisation of PPO-sized matrices for 8 seeds (vmapped, sharded over
the two devices) with LAPACK's QR, and the same with the QR written in jnp
(``nnxrl.networks.initializers.orthogonal``, Gram-Schmidt). A trial that does not finish
within the time limit counts as a hang.

    uv run python benchmarks/qr_deadlock.py --trials 10
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

TRIAL = r"""
import os, sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
import jax, jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
from nnxrl import config as C
from nnxrl.run.programs import compile_programs
from nnxrl.config import schedule

config = C.load("configs/ppo-cartpole.yaml", ["num_seeds=2", "total_env_steps=8192",
                                              "logging.backends=[]"])
programs = compile_programs(config)          # other programs first
state, metrics = programs.chunk(schedule.updates_per_chunk(config))(programs.init(), programs.hp)
jax.block_until_ready(metrics)

shapes = [(4, 64), (64, 64), (64, 2), (64, 1), (1345, 512), (512, 512), (512, 17)]
kind = sys.argv[1]
if kind == "lapack":
    init = jax.nn.initializers.orthogonal(jnp.sqrt(2.0))
else:
    from nnxrl.networks.initializers import orthogonal
    init = orthogonal(jnp.sqrt(2.0))

def one_seed(key):
    keys = jax.random.split(key, len(shapes))
    return [init(k, s) for k, s in zip(keys, shapes)]

keys = jax.random.split(jax.random.key(0), 8)
mesh = jax.make_mesh((2,), ("seed",))
keys = jax.device_put(keys, NamedSharding(mesh, P("seed")))
out = jax.jit(jax.vmap(one_seed))(keys)
jax.block_until_ready(out)
print("ok", flush=True)
"""


def trial(kind: str, timeout: float) -> tuple[str, float]:
    t = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-c", TRIAL, kind], capture_output=True, text=True, timeout=timeout
        )
        result = "ok" if done.stdout.strip().endswith("ok") else "error"
        if result == "error":
            print(done.stderr[-2000:], file=sys.stderr)
    except subprocess.TimeoutExpired:
        result = "hang"
    return result, time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    counts = {kind: {"ok": 0, "hang": 0, "error": 0} for kind in ("lapack", "jnp")}
    seconds = {kind: [] for kind in counts}
    for i in range(args.trials):
        for kind in counts:
            result, took = trial(kind, args.timeout)
            counts[kind][result] += 1
            seconds[kind].append(took)
            print(f"trial {i + 1} {kind}: {result} in {took:.1f} s", flush=True)
    print("\n| QR in the init program | trials | finished | hung | errors | median s |")
    print("|---|---:|---:|---:|---:|---:|")
    for kind, c in counts.items():
        median = sorted(seconds[kind])[len(seconds[kind]) // 2]
        print(f"| {kind} | {args.trials} | {c['ok']} | {c['hang']} | {c['error']} | {median:.1f} |")


if __name__ == "__main__":
    main()
