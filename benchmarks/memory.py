"""The memory kinds side by side: what each recalls on RepeatPrevious at its shipped
settings (``--returns``), compile time and env steps/s of PPO and PQN with each
network kind on a memory task and on Craftax-Classic-Symbolic, and the time of one
update against the sequence length T for the GRU (a scan of T dependent steps),
minGRU (one parallel scan) and the Transformer-XL (attention over the window and the
sequence at once).

    uv run python benchmarks/memory.py            # the speed tables
    uv run python benchmarks/memory.py --quick    # RepeatPrevious only, T up to 256
    uv run python benchmarks/memory.py --no-craftax --plot docs/memory_sequence.png
    uv run python benchmarks/memory.py --returns --seed-offset 1000   # ~20 min

The returns table trains each kind's shipped config (RECALL) for 4 seeds at 204,800
env steps in a fresh process (``memory_study.py``'s runs) and prints each seed's final
return (the mean of its last 10 updates), their mean and how many reach 0.9.

Compile times are cold (the persistent compilation cache off); env steps/s are
medians of timed chunks after a warm-up one. The sequence-length table trains PPO on
RepeatPrevious-v0 with 16 envs x T steps, one epoch of one minibatch, width 128, one
minGRU layer (one recurrence against one) and one attention layer, so an update is
one rollout of T steps and one pass over the T-step sequences.
"""

from __future__ import annotations

import argparse
import statistics
import time

from nnxrl.parallel.devices import use_cpu_devices

use_cpu_devices()  # before JAX starts: one CPU device per core, as the CLI does

import jax  # noqa: E402

from nnxrl import config as C  # noqa: E402
from nnxrl.config import schedule  # noqa: E402
from nnxrl.run.programs import compile_programs  # noqa: E402

ALGOS = ("ppo", "pqn")
# a row's name -> its network overrides (the transformer: one layer, a window of 8 steps)
KINDS = {
    "feedforward": ["network.kind=feedforward"],
    "gru": ["network.kind=gru"],
    "lstm": ["network.kind=lstm"],
    "min_gru": ["network.kind=min_gru"],
    "min_gru_conv4": ["network.kind=min_gru", "network.options={conv: 4}"],
    "transformer_xl": [
        "network.kind=transformer_xl",
        "network.options={layers: 1, heads: 2, memory: 8}",
    ],
}
# (algo, kind) -> the shipped config and overrides that recall 4 steps back (docs/memory.md)
REPEAT = "configs/{}-rnn-repeat-previous.yaml"
RECALL = {
    **{(a, "feedforward"): (REPEAT.format(a), KINDS["feedforward"]) for a in ALGOS},
    **{(a, "gru"): (REPEAT.format(a), []) for a in ALGOS},
    **{(a, "lstm"): (f"configs/{a}-lstm-repeat-previous.yaml", []) for a in ALGOS},
    **{(a, "min_gru_conv4"): (REPEAT.format(a), KINDS["min_gru_conv4"]) for a in ALGOS},
    **{(a, "transformer_xl"): (f"configs/{a}-trxl-repeat-previous.yaml", []) for a in ALGOS},
}
COMMON = ["logging.backends=[]", "compile_cache.enabled=false", "num_seeds=1"]
TASKS = {  # (config, overrides); {algo} is ppo or pqn
    "RepeatPrevious-v0": (
        "configs/{algo}-rnn-memorychain.yaml",
        [
            "env.id=RepeatPrevious-v0",
            "env.num_envs=16",
            "total_env_steps=163840",
            "logging.updates_per_chunk=32",
        ],
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


def timed_chunks(config: C.Config, chunks: int = 5) -> tuple[float, float]:
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


def kinds_table(tasks: list[str], kinds: list[str]) -> None:
    print("| task | algo | network | compile s | env steps/s |")
    print("|---|---|---|---|---|")
    for task in tasks:
        path, overrides = TASKS[task]
        for algo in ("ppo", "pqn"):
            for kind in kinds:
                chosen = [o.format(algo=algo) for o in overrides]
                chosen += KINDS[kind]
                config = C.load(path.format(algo=algo), [*COMMON, *chosen])
                chunks = 2 if task.startswith("Craftax") else 5  # Craftax: ~15 s a chunk
                compile_s, sps = timed_chunks(config, chunks)
                print(f"| {task} | {algo} | {kind} | {compile_s:.1f} | {sps:,.0f} |", flush=True)


def returns_table(seed_offset: int) -> None:
    """Each kind's final return on RepeatPrevious (delay 4), PPO and PQN, 4 seeds."""
    from memory_study import train  # the sibling script: one run in a fresh process

    print(f"RepeatPrevious-v0, delay 4, 4 seeds from seed {seed_offset}, 204,800 env steps")
    print("| algo | network | config | mean | seeds >= 0.9 | per seed |")
    print("|---|---|---|---:|---:|---|")
    for (algo, kind), (path, overrides) in RECALL.items():
        finals, _, _ = train(path, overrides, seed_offset)
        per_seed = ", ".join(f"{x:.2f}" for x in finals)
        shipped = " ".join([path.removeprefix("configs/"), *overrides])
        good = int(sum(finals >= 0.9))
        print(f"| {algo} | {kind} | {shipped} | {finals.mean():.3f} | {good} | {per_seed} |")


SEQUENCE_KINDS = {  # one recurrence (or one attention layer) each
    "gru": [],
    "min_gru": ["network.options={layers: 1}"],
    "transformer_xl": ["network.options={layers: 1, heads: 4, memory: 32}"],
}


def sequence_table(lengths: list[int]) -> dict[str, list[float]]:
    print("\n| T | gru s/update | min_gru s/update | transformer_xl s/update | min_gru / gru |")
    print("|---|---|---|---|---|")
    curves: dict[str, list[float]] = {kind: [] for kind in SEQUENCE_KINDS}
    for length in lengths:
        seconds = {}
        for kind, options in SEQUENCE_KINDS.items():
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
                *options,
                f"total_env_steps={16 * length * 4}",
                "logging.updates_per_chunk=1",
            ]
            config = C.load("configs/ppo-rnn-memorychain.yaml", overrides)
            _, sps = timed_chunks(config)
            seconds[kind] = 16 * length / sps
            curves[kind].append(seconds[kind])
        ratio = seconds["min_gru"] / seconds["gru"]
        row = " | ".join(f"{seconds[kind]:.4f}" for kind in SEQUENCE_KINDS)
        print(f"| {length} | {row} | {ratio:.2f} |", flush=True)
    return curves


def plot_sequence(lengths: list[int], curves: dict[str, list[float]], path: str) -> None:
    """Seconds per update against T, both axes logarithmic."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    labels = {
        "gru": "GRU (lax.scan)",
        "min_gru": "minGRU (associative scan)",
        "transformer_xl": "Transformer-XL (M = 32)",
    }
    for kind, label in labels.items():
        ax.plot(lengths, curves[kind], marker="o", label=label)
    ax.set(xscale="log", yscale="log", xlabel="sequence length T (steps per rollout)")
    ax.set(
        ylabel="seconds per PPO update", title=f"16 envs, width 128, {jax.devices()[0].platform}"
    )
    ax.set_xticks(lengths, [str(n) for n in lengths])
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="RepeatPrevious only, T <= 256")
    parser.add_argument("--no-craftax", action="store_true", help="RepeatPrevious rows only")
    parser.add_argument("--plot", help="write the T table as a figure to this file")
    parser.add_argument(
        "--kinds", nargs="+", choices=list(KINDS), default=list(KINDS), help="the kinds' rows"
    )
    parser.add_argument("--no-sequence", action="store_true", help="skip the T table")
    parser.add_argument("--returns", action="store_true", help="only the recall table (RECALL)")
    parser.add_argument("--seed-offset", type=int, default=0, help="the returns table's seed")
    args = parser.parse_args()
    if args.returns:
        returns_table(args.seed_offset)
        return
    print(f"devices: {jax.devices()}\n")
    tasks = ["RepeatPrevious-v0"] if args.quick or args.no_craftax else list(TASKS)
    kinds_table(tasks, args.kinds)
    if args.no_sequence:
        return
    lengths = [16, 64, 256] if args.quick else [16, 64, 256, 1024]
    curves = sequence_table(lengths)
    if args.plot:
        plot_sequence(lengths, curves, args.plot)


if __name__ == "__main__":
    main()
