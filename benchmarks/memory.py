"""The memory kinds side by side: compile time and env steps/s of PPO and PQN with
each network kind on a memory task and on Craftax-Classic-Symbolic, and the time of
one update against the sequence length T for the GRU (a scan of T dependent steps)
and minGRU (one parallel scan).

    uv run python benchmarks/memory.py            # both tables
    uv run python benchmarks/memory.py --quick    # RepeatPrevious only, T up to 256

Compile times are cold (the persistent compilation cache off); env steps/s are
medians of timed chunks after a warm-up one. The sequence-length table trains PPO on
RepeatPrevious-v0 with 16 envs x T steps, one epoch of one minibatch, width 128 and
one minGRU layer (one recurrence against one), so an update is one rollout of T
steps and one pass over the T-step sequences.
"""

from __future__ import annotations

import argparse
import statistics
import time

from nnxrl.parallel.devices import use_cpu_devices

use_cpu_devices()  # before JAX starts: one CPU device per core, as the CLI does

import jax  # noqa: E402

from nnxrl import config as C  # noqa: E402
from nnxrl.run import schedule  # noqa: E402
from nnxrl.run.programs import compile_programs  # noqa: E402

KINDS = ["feedforward", "gru", "lstm", "min_gru"]
COMMON = ["logging.backends=[]", "compile_cache.enabled=false", "num_seeds=1"]
TASKS = {  # (config, overrides); {algo} is ppo or pqn
    "RepeatPrevious-v0": (
        "configs/{algo}-rnn-memorychain.yaml",
        ["env.id=RepeatPrevious-v0", "env.num_envs=16", "total_env_steps=163840"],
    ),
    "Craftax-Classic-Symbolic-v1": (
        "configs/{algo}-rnn-craftax-classic-symbolic.yaml",
        [
            "env.num_envs=64",
            "{algo}.num_steps=32",
            "total_env_steps=163840",
            "logging.updates_per_chunk=4",
        ],
    ),
}


def timed_chunks(config: C.Config, chunks: int = 3) -> tuple[float, float]:
    """(compile seconds, env steps/s) of ``config``'s chunk program."""
    t = time.perf_counter()
    programs = compile_programs(config)
    per_chunk = schedule.updates_per_chunk(config)
    chunk = programs.chunk(per_chunk)
    compile_seconds = time.perf_counter() - t
    state, hp = programs.init(), programs.hp
    state, metrics = chunk(state, hp)
    jax.block_until_ready(metrics)
    times = []
    for _ in range(chunks):
        t = time.perf_counter()
        state, metrics = chunk(state, hp)
        jax.block_until_ready(metrics)
        times.append(time.perf_counter() - t)
    steps = per_chunk * schedule.batch_size(config) * config.num_seeds
    return compile_seconds, steps / statistics.median(times)


def kinds_table(tasks: list[str]) -> None:
    print("| task | algo | network.kind | compile s | env steps/s | vs feedforward |")
    print("|---|---|---|---|---|---|")
    for task in tasks:
        path, overrides = TASKS[task]
        for algo in ("ppo", "pqn"):
            base = None
            for kind in KINDS:
                chosen = [o.format(algo=algo) for o in overrides]
                config = C.load(path.format(algo=algo), [*COMMON, *chosen, f"network.kind={kind}"])
                compile_s, sps = timed_chunks(config)
                base = base or sps
                print(
                    f"| {task} | {algo} | {kind} | {compile_s:.1f} | {sps:,.0f} "
                    f"| {sps / base:.2f} |",
                    flush=True,
                )


def sequence_table(lengths: list[int]) -> None:
    print("\n| T | gru s/update | min_gru s/update | min_gru / gru |")
    print("|---|---|---|---|")
    for length in lengths:
        seconds = {}
        for kind in ("gru", "min_gru"):
            overrides = [
                *COMMON,
                "env.id=RepeatPrevious-v0",
                "env.num_envs=16",
                f"env.kwargs={{length: {max(2 * length, 16)}}}",
                f"ppo.num_steps={length}",
                "ppo.num_epochs=1",
                "ppo.num_minibatches=1",
                f"network.kind={kind}",
                "network.width=128",
                *(["network.options={layers: 1}"] if kind == "min_gru" else []),
                f"total_env_steps={16 * length * 4}",
                "logging.updates_per_chunk=1",
            ]
            config = C.load("configs/ppo-rnn-memorychain.yaml", overrides)
            _, sps = timed_chunks(config)
            seconds[kind] = 16 * length / sps
        ratio = seconds["min_gru"] / seconds["gru"]
        print(
            f"| {length} | {seconds['gru']:.4f} | {seconds['min_gru']:.4f} | {ratio:.2f} |",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="RepeatPrevious only, T <= 256")
    args = parser.parse_args()
    print(f"devices: {jax.devices()}\n")
    kinds_table(["RepeatPrevious-v0"] if args.quick else list(TASKS))
    sequence_table([16, 64, 256] if args.quick else [16, 64, 256, 1024])


if __name__ == "__main__":
    main()
