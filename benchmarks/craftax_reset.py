"""How to reset many Craftax worlds at once on a CPU: vmap vs chunked lax.map, with
XLA CPU's default YNNPACK fusions, with them kept to dots and their neighbours
(``LIBRARY_FUSION_TYPE_DOT``), and kept to single dots (nnxrl's choice).

    uv run python benchmarks/craftax_reset.py [--num-envs 1024]

Prints compile and run seconds (median of 3) for each variant.
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
from craftax.craftax_env import make_craftax_env_from_name

from nnxrl.envs.craftax_env import YNN_DOTS_ONLY

OPTIONS = {
    "default": {},
    "YNN dots with neighbours": {"xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_DOT"},
    "YNN single dots (nnxrl)": dict(YNN_DOTS_ONLY),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--num-envs", type=int, default=1024)
    parser.add_argument("--env", default="Craftax-Classic-Symbolic-v1")
    args = parser.parse_args()
    chunk = 16
    env = make_craftax_env_from_name(args.env, auto_reset=False)
    params = env.default_params
    keys = jax.random.split(jax.random.key(0), args.num_envs)

    def reset(key):
        return env.reset(key, params)

    variants = {
        "vmap": lambda k: jax.vmap(reset)(k),
        f"lax.map, chunks of {chunk}": lambda k: jax.lax.map(reset, k, batch_size=chunk),
    }
    print(f"| {args.num_envs} worlds | XLA options | compile s | reset s |")
    print("|---|---|---:|---:|")
    for name, fn in variants.items():
        for label, options in OPTIONS.items():
            t = time.perf_counter()
            compiled = jax.jit(fn).lower(keys).compile(options)
            compile_s = time.perf_counter() - t
            times = []
            for _ in range(3):
                t = time.perf_counter()
                jax.block_until_ready(compiled(keys))
                times.append(time.perf_counter() - t)
            print(
                f"| {name} | {label} | {compile_s:.1f} | {statistics.median(times):.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
