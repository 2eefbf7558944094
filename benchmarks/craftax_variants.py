"""Throughput of PPO's variants on Craftax-Classic-Symbolic at the shipped settings:
each intrinsic add-on, and the recurrent policy, against plain PPO.

    uv run python benchmarks/craftax_variants.py                     # all, 1024 envs x 64 steps
    uv run python benchmarks/craftax_variants.py --variants PPO-RNN  # PPO and PPO-RNN
    uv run python benchmarks/craftax_variants.py --num-envs 256 --rounds 2   # quicker

Every variant is compiled first; then the variants take turns, one update each per
round (after one warm-up update each), so machine noise falls on all of them
alike. Reported: median env steps per second and the ratio to plain PPO. The
extra row runs ICM with half its update epochs: if the cost halves too, it is the
add-on's own arithmetic, not overhead around it.
"""

from __future__ import annotations

import argparse
import statistics
import time

from nnxrl.parallel.devices import use_cpu_devices

use_cpu_devices()  # before JAX starts, as the CLI does

import jax  # noqa: E402

from nnxrl import config as C  # noqa: E402
from nnxrl.config import schedule  # noqa: E402
from nnxrl.run.programs import compile_programs  # noqa: E402

VARIANTS = {  # name: (config, extra overrides)
    "PPO": ("configs/ppo-craftax-classic-symbolic.yaml", []),
    "PPO + ICM": ("configs/icm-craftax-classic-symbolic.yaml", []),
    "PPO + E3B": ("configs/e3b-craftax-classic-symbolic.yaml", []),
    "PPO + RND": ("configs/rnd-craftax-classic-symbolic.yaml", []),
    "PPO + ICM, 2 epochs": (
        "configs/icm-craftax-classic-symbolic.yaml",
        ["intrinsic.num_epochs=2"],
    ),
    "PPO-RNN": ("configs/ppo-rnn-craftax-classic-symbolic.yaml", []),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--num-envs", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    args = parser.parse_args()
    variants = {name: VARIANTS[name] for name in VARIANTS if name == "PPO" or name in args.variants}
    overrides = [
        f"env.num_envs={args.num_envs}",
        f"total_env_steps={args.num_envs * 64 * (args.rounds + 1)}",
        "logging.updates_per_chunk=1",
        "logging.backends=[]",
    ]
    programs, compile_seconds, states = {}, {}, {}
    for name, (path, extra) in variants.items():
        config = C.load(path, overrides + extra)
        t = time.perf_counter()
        compiled = compile_programs(config)
        init, hp = compiled.init, compiled.hp
        chunk = compiled.chunk(schedule.updates_per_chunk(config))
        compile_seconds[name] = time.perf_counter() - t
        state, metrics = chunk(init(), hp)  # warm-up update
        jax.block_until_ready(metrics)
        programs[name], states[name] = (chunk, hp, schedule.batch_size(config)), state
        print(f"{name}: compiled in {compile_seconds[name]:.1f} s", flush=True)

    rates: dict[str, list[float]] = {name: [] for name in variants}
    for r in range(args.rounds):
        for name, (chunk, hp, batch) in programs.items():
            t = time.perf_counter()
            states[name], metrics = chunk(states[name], hp)
            jax.block_until_ready(metrics)
            rates[name].append(batch / (time.perf_counter() - t))
        print(f"round {r + 1}: " + ", ".join(f"{n} {v[-1]:,.0f}" for n, v in rates.items()))

    base = statistics.median(rates["PPO"])
    print(f"\nCraftax-Classic-Symbolic, {args.num_envs} envs x 64 steps, medians of {args.rounds}")
    print("| variant | compile s | env steps/s | of PPO | cost |")
    print("|---|---:|---:|---:|---:|")
    for name in variants:
        sps = statistics.median(rates[name])
        print(
            f"| {name} | {compile_seconds[name]:.1f} | {sps:,.0f} | {sps / base:.2f} | "
            f"{1 - sps / base:.0%} |"
        )


if __name__ == "__main__":
    main()
