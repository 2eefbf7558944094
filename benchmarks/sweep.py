"""Settings per hour: a sweep as one program against the same settings one by one.

PPO on CartPole (the shipped config: 4 envs x 128 steps per update), each setting a
learning rate drawn log-uniformly and trained for ``--steps`` env steps on 1 seed.
A population of P settings trains in one compiled program (``sweep:``); one by one,
each setting is its own ``nnxrl.train`` call, as a shell loop over ``--set`` would
run them (its compilation comes from the warm persistent cache after the first).
Settings per hour count the whole call, compilation included. The memory columns
are the compiled chunk's own figures (XLA's memory analysis): the run state it
carries and the temporary buffers it needs, both growing with P.

    uv run python benchmarks/sweep.py                  # populations 1 8 32 128
    uv run python benchmarks/sweep.py --populations 1 8 --steps 25600
    uv run python benchmarks/sweep.py --pbt-only       # what PBT costs over the sweep

The PBT table trains the same population as a plain sweep and with PBT (exploit
and explore every ``--pbt-interval`` updates inside the program), alternating the
two ``--rounds`` times, and compares their env steps/s (medians, compile excluded).

Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np

import nnxrl
from nnxrl.config import schedule
from nnxrl.run.programs import compile_programs

BASE = ["logging.backends=[]", "checkpoint.enabled=false", "num_seeds=1"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="ppo-cartpole")
    parser.add_argument("--populations", type=int, nargs="+", default=[1, 8, 32, 128])
    parser.add_argument("--steps", type=int, default=51200, help="env steps per setting")
    parser.add_argument(
        "--one-by-one", type=int, default=4, help="settings timed one by one (their mean is used)"
    )
    parser.add_argument("--pbt-population", type=int, default=32)
    parser.add_argument("--pbt-interval", type=int, default=10, help="updates between PBT steps")
    parser.add_argument("--rounds", type=int, default=3, help="PBT table: alternations")
    parser.add_argument("--pbt-only", action="store_true", help="only the PBT table")
    args = parser.parse_args()
    nnxrl.use_cpu_devices()
    base = [*BASE, f"total_env_steps={args.steps}"]
    pbt_table(args, base)
    if args.pbt_only:
        return

    rows = []
    for population in args.populations:
        config = nnxrl.load_config(args.config, [*base, *sweep_of(population)])
        memory = chunk_memory(config)
        started = time.perf_counter()
        result = nnxrl.train(config)
        seconds = time.perf_counter() - started
        rows.append(
            dict(
                how=f"one program, population {population}",
                settings=population,
                seconds=seconds,
                compile=result.compile_seconds,
                sps=result.env_steps_per_second,
                **memory,
            )
        )
    rates = [1e-4 * 10 ** (3 * i / max(args.one_by_one - 1, 1)) for i in range(args.one_by_one)]
    times, compiles, speeds = [], [], []
    for rate in rates:
        config = nnxrl.load_config(args.config, [*base, f"ppo.learning_rate={rate}"])
        started = time.perf_counter()
        result = nnxrl.train(config)
        times.append(time.perf_counter() - started)
        compiles.append(result.compile_seconds)
        speeds.append(result.env_steps_per_second)
    rows.append(
        dict(
            how=f"one by one (mean of {len(rates)})",
            settings=1,
            seconds=float(np.mean(times)),
            compile=float(np.mean(compiles)),
            sps=float(np.mean(speeds)),
            state_mb=rows[0]["state_mb"] if rows else float("nan"),
            temp_mb=rows[0]["temp_mb"] if rows else float("nan"),
        )
    )
    alone = rows[-1]["settings"] / rows[-1]["seconds"] * 3600
    print(
        f"\nPPO CartPole, {args.steps:,} env steps per setting, 1 seed, "
        f"{jax.device_count()} {jax.devices()[0].platform} device(s)\n"
    )
    print(
        "| how | wall s (compile s) | env steps/s | settings/hour | vs one by one "
        "| state MB | chunk temp MB |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        per_hour = r["settings"] / r["seconds"] * 3600
        print(
            f"| {r['how']} | {r['seconds']:.1f} ({r['compile']:.1f}) | {r['sps']:,.0f} "
            f"| {per_hour:,.0f} | {per_hour / alone:.1f}x | {r['state_mb']:.2f} "
            f"| {r['temp_mb']:.1f} |"
        )


def pbt_table(args: argparse.Namespace, base: list[str]) -> None:
    """Env steps/s of one population as a plain sweep and with PBT, side by side."""
    sweep = [*base, *sweep_of(args.pbt_population)]
    pbt = [*sweep, f"sweep.pbt={{interval: {args.pbt_interval}}}"]
    speeds: dict[str, list[float]] = {"sweep": [], "pbt": []}
    for _ in range(args.rounds):
        for name, overrides in (("sweep", sweep), ("pbt", pbt)):
            result = nnxrl.train(nnxrl.load_config(args.config, overrides))
            speeds[name].append(result.env_steps_per_second)
    plain, with_pbt = (float(np.median(speeds[k])) for k in ("sweep", "pbt"))
    print(
        f"\nPBT against the plain sweep: population {args.pbt_population}, "
        f"{args.steps:,} env steps per member, a PBT step every {args.pbt_interval} updates, "
        f"medians of {args.rounds} alternated runs\n"
    )
    print("| population | sweep env steps/s | PBT env steps/s | PBT / sweep |")
    print("|---:|---:|---:|---:|")
    print(f"| {args.pbt_population} | {plain:,.0f} | {with_pbt:,.0f} | {with_pbt / plain:.3f} |")
    rounds = {k: [round(x) for x in v] for k, v in speeds.items()}
    print(f"rounds: sweep {rounds['sweep']}, PBT {rounds['pbt']}")


def sweep_of(population: int) -> list[str]:
    """A random learning-rate sweep of ``population`` settings (1: a plain run)."""
    if population == 1:
        return []
    return [
        "sweep.random={ppo.learning_rate: {log_uniform: [1e-4, 1e-2]}}",
        f"sweep.num_samples={population}",
    ]


def chunk_memory(config) -> dict[str, float]:
    """The run state's size and the compiled chunk's temporary buffers, in MB."""
    programs = compile_programs(config)
    state = sum(
        int(np.prod(x.shape)) * x.dtype.itemsize for x in jax.tree.leaves(programs.template)
    )
    analysis = programs.chunk(schedule.updates_per_chunk(config)).memory_analysis()
    temp = getattr(analysis, "temp_size_in_bytes", float("nan"))
    return dict(state_mb=state / 2**20, temp_mb=temp / 2**20)


if __name__ == "__main__":
    main()
