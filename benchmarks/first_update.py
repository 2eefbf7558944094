"""Where a run's time to first update and its memory go, phase by phase, in one process.

    uv run python benchmarks/first_update.py configs/ppo-craftax-classic-symbolic.yaml \\
        --set env.id=Craftax-Symbolic-v1 --set env.num_envs=64
    uv run python benchmarks/first_update.py configs/ppo-cartpole.yaml

Cold: the compile cache and the saved programs are off, logging and checkpoints too,
one update per chunk. The phases, in the order they happen: imports and the config,
each program's tracing, lowering and XLA compile (JAX's own compile events, so
nothing is timed twice), the init program's run and the first update. Each row gives
its seconds, the process's resident memory at its end and its peak so far (MiB).
"""

from __future__ import annotations

import time

STARTED = time.perf_counter()

import argparse  # noqa: E402
import resource  # noqa: E402

import jax  # noqa: E402

EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "traced",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lowered",
    "/jax/core/compile/backend_compile_duration": "compiled by XLA",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config")
    parser.add_argument("--set", action="append", default=[], help="a config override")
    parser.add_argument("--min-seconds", type=float, default=0.2, help="shorter events hidden")
    args = parser.parse_args()
    rows: list[tuple[str, float, float, float]] = []

    def on_event(event: str, seconds: float, **_: object) -> None:
        if event in EVENTS and seconds >= args.min_seconds:
            rows.append(noted(EVENTS[event], seconds))

    jax.monitoring.register_event_duration_secs_listener(on_event)
    from nnxrl import config as config_lib
    from nnxrl.run.programs import compile_programs

    config = config_lib.load(args.config, [*args.set, *COLD])
    rows.insert(0, noted("imports and the config", time.perf_counter() - STARTED))
    programs = compile_programs(config, run_init=True)
    started = time.perf_counter()
    state = jax.block_until_ready(programs.init())
    rows.append(noted("init run", time.perf_counter() - started))
    started = time.perf_counter()
    jax.block_until_ready(programs.chunk(1)(state, programs.hp))
    rows.append(noted("first update", time.perf_counter() - started))
    print(f"{args.config} {' '.join(args.set)}\n")
    print("| phase | s | resident MiB | peak MiB |\n|---|---:|---:|---:|")
    for name, seconds, resident, peak in rows:
        print(f"| {name} | {seconds:.1f} | {resident:,.0f} | {peak:,.0f} |")
    print(f"| **to the end of the first update** | {time.perf_counter() - STARTED:.1f} | | |")


COLD = (
    "compile_cache.enabled=false",
    "logging.updates_per_chunk=1",
    "logging.backends=[]",
    "checkpoint.enabled=false",
)


def noted(name: str, seconds: float) -> tuple[str, float, float, float]:
    """A phase's row: its name and seconds, resident and peak memory now (MiB)."""
    with open("/proc/self/statm") as statm:
        resident = int(statm.read().split()[1]) * resource.getpagesize() / 2**20
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return name, seconds, resident, peak


if __name__ == "__main__":
    main()
