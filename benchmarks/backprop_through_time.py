"""The gradient of a GRU's and an LSTM's unroll: JAX's own transpose of the scan
against the backpropagation through time written out in ``nnxrl/networks/gru.py`` and
``lstm.py``, at the sizes the project trains (seeds x batch, steps, width).

    uv run python benchmarks/backprop_through_time.py            # 3 rounds
    uv run python benchmarks/backprop_through_time.py --rounds 5

Each measurement is a fresh process timing ``jax.grad`` of the unroll (U, the initial
state and W x) under ``jit``, with the seeds ``vmap``ped as training does; the two
take turns, and the table gives medians and the ratio written / JAX's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

SIZES = {  # name: (seeds, batch, steps, width)
    "RepeatPrevious recall test (PPO, PQN)": (2, 4, 32, 128),
    "Craftax PPO-RNN, 64 envs / 8 minibatches": (1, 8, 64, 512),
}

MEASURE = r"""
import json, sys, time
import jax, jax.numpy as jnp
from nnxrl.networks.gru import gru_scan, gru_step
from nnxrl.networks.lstm import lstm_scan, lstm_step
kind, way, seeds, b, t, h = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
scan, step, gates, states = {
    "gru": (gru_scan, gru_step, 3, 1), "lstm": (lstm_scan, lstm_step, 4, 2)}[kind]

def by_jax(u, state, wx, start):
    def one(s, inputs):
        s, _ = step(u, s, *inputs)
        return s, s[:, -h:]
    return jax.lax.scan(one, state, (wx, start))

core = scan if way == "written" else by_jax
def loss(u, state, wx, start):
    last, outputs = core(u, state, wx, start)
    return jnp.sum(outputs ** 2) + jnp.sum(last)

keys = jax.random.split(jax.random.key(0), 4)
u = jax.random.normal(keys[0], (seeds, h, gates * h)) / h ** 0.5
state = jax.random.normal(keys[1], (seeds, b, states * h))
wx = jax.random.normal(keys[2], (seeds, t, b, gates * h))
start = jax.random.bernoulli(keys[3], 0.05, (seeds, t, b))
grad = jax.jit(jax.vmap(jax.grad(loss, argnums=(0, 1, 2))))
jax.block_until_ready(grad(u, state, wx, start))
calls = max(20, int(4e6 / (seeds * b * t * h)))
began = time.perf_counter()
for _ in range(calls):
    out = grad(u, state, wx, start)
jax.block_until_ready(out)
print(json.dumps({"ms": (time.perf_counter() - began) / calls * 1e3}))
"""


def measure(kind: str, way: str, size: tuple[int, int, int, int]) -> float:
    """Milliseconds per gradient, in a fresh process."""
    args = [sys.executable, "-c", MEASURE, kind, way, *map(str, size)]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[-1])["ms"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    rounds = parser.parse_args().rounds
    print("| size (seeds x batch, steps, width) | kind | JAX's ms | written ms | written / JAX's |")
    print("|---|---|---:|---:|---:|")
    for name, size in SIZES.items():
        for kind in ("gru", "lstm"):
            times = {"jax": [], "written": []}
            for _ in range(rounds):
                for way in times:
                    times[way].append(measure(kind, way, size))
            jax_ms, ours = (statistics.median(times[w]) for w in ("jax", "written"))
            shape = f"{size[0]} x {size[1]}, {size[2]}, {size[3]}"
            ratio = ours / jax_ms
            print(f"| {name} ({shape}) | {kind} | {jax_ms:.2f} | {ours:.2f} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
