"""Throughput of nnxrl PPO and PQN beside two ceilings: the raw env and the network
FLOP bound.

    uv run python benchmarks/throughput.py            # CartPole (1 and 8 seeds) + Craftax
    uv run python benchmarks/throughput.py --quick    # CartPole only
    uv run python benchmarks/throughput.py --algo pqn # one algorithm

Each algorithm runs its shipped config (configs/{ppo,pqn}-cartpole.yaml and
-craftax-classic-symbolic.yaml). Env steps per second exclude compilation (reported
apart) and are medians of several runs. The raw-env ceiling steps the same env and
batch with random actions in a jitted scan. The FLOP bound divides the networks'
FLOPs per env step (rollout forward passes + epochs x forward/backward) by this
machine's measured float32 matmul rate.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from nnxrl.cli import use_all_cpu_cores

use_all_cpu_cores()  # before JAX starts: one CPU device per core, as the CLI does

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from nnxrl import config as C  # noqa: E402
from nnxrl.envs import make_env  # noqa: E402
from nnxrl.programs import compile_programs, compiler_options  # noqa: E402
from nnxrl.training import run_training  # noqa: E402

NO_LOGGING = ["logging.backends=[]"]  # metrics.jsonl only: logging costs are in logging.py


def raw_env_sps(config: C.Config, num_steps: int, repeats: int = 3) -> float:
    env = make_env(config.env)

    def rollout(key):
        _, state = env.reset(key)

        def body(state, key):
            a_key, s_key = jax.random.split(key)
            action = jax.random.randint(a_key, (env.num_envs,), 0, env.spec.num_actions)
            state, out = env.step(s_key, state, action)
            return state, out.reward.sum()

        return jax.lax.scan(body, state, jax.random.split(key, num_steps))[1].sum()

    fn = jax.jit(rollout).lower(jax.random.key(0)).compile(compiler_options(env.spec))
    fn(jax.random.key(0)).block_until_ready()
    times = []
    for i in range(repeats):
        t = time.perf_counter()
        fn(jax.random.key(i + 1)).block_until_ready()
        times.append(time.perf_counter() - t)
    # the timed program includes one reset; for a long scan it is negligible
    return num_steps * env.num_envs / statistics.median(times)


def matmul_flops_per_second(width: int = 512, rows: int = 8192) -> float:
    a = jnp.ones((rows, width), jnp.float32)
    b = jnp.ones((width, width), jnp.float32)
    f = jax.jit(lambda a, b: jnp.tanh(a @ b) @ b)
    f(a, b).block_until_ready()
    times = []
    for _ in range(5):
        t = time.perf_counter()
        f(a, b).block_until_ready()
        times.append(time.perf_counter() - t)
    return 2 * 2 * rows * width * width / statistics.median(times)


def network_flops_per_env_step(config: C.Config) -> float:
    """Matmul FLOPs per env step. PPO: rollout = actor + critic + critic(final obs),
    update = epochs x 3 (forward + backward) x (actor + critic). PQN: rollout = Q +
    Q(final obs), update = epochs x 3 x Q."""
    env = make_env(config.env)
    d = int(np.prod(env.spec.obs_shape))
    n = config.network
    sizes = [d] + [n.width] * n.num_layers
    body = sum(2 * a * b for a, b in zip(sizes[:-1], sizes[1:], strict=True))
    epochs = config.algo_config.num_epochs
    if config.algo == "pqn":
        q = body + 2 * n.width * env.spec.num_actions
        return 2 * q + epochs * 3 * q
    actor = body + 2 * n.width * env.spec.num_actions
    critic = body + 2 * n.width
    return (actor + 2 * critic) + epochs * 3 * (actor + critic)


def run_sps(config: C.Config, repeats: int) -> tuple[float, float]:
    """(median compile seconds, median env steps/s over all seeds) of whole runs."""
    compiles, rates = [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as out:
            result = run_training(config, out, quiet=True)
        compiles.append(result.compile_seconds)
        rates.append(result.env_steps_per_second)
    return statistics.median(compiles), statistics.median(rates)


def chunk_sps(config: C.Config, chunks: int) -> tuple[float, float]:
    """For long configs: compile once, time `chunks` chunks after a warm-up one."""
    t = time.perf_counter()
    programs = compile_programs(config)
    init, hp = programs.init, programs.hp
    chunk = programs.chunk(config.updates_per_chunk)
    compile_seconds = time.perf_counter() - t
    state = init()
    state, m = chunk(state, hp)
    jax.block_until_ready(m)
    times = []
    for _ in range(chunks):
        t = time.perf_counter()
        state, m = chunk(state, hp)
        jax.block_until_ready(m)
        times.append(time.perf_counter() - t)
    steps = config.updates_per_chunk * config.batch_size * config.num_seeds
    return compile_seconds, steps / statistics.median(times)


CRAFTAX_CHUNK = {  # a chunk of about 64k env steps, timed chunk by chunk
    "ppo": ["total_env_steps=655360", "logging.updates_per_chunk=1"],
    "pqn": ["total_env_steps=655360", "logging.updates_per_chunk=64"],
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="CartPole only")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--algo", choices=("ppo", "pqn"), action="append")
    args = parser.parse_args()
    matmul = matmul_flops_per_second()
    rows = []
    for algo in args.algo or ("ppo", "pqn"):
        rows += cartpole_rows(algo, matmul, args.repeats)
    if not args.quick:
        for algo in args.algo or ("ppo", "pqn"):
            craftax = C.load(f"configs/{algo}-craftax-classic-symbolic.yaml", CRAFTAX_CHUNK[algo])
            raw = raw_env_sps(craftax, 64, repeats=3)
            bound = matmul / network_flops_per_env_step(craftax)
            compile_s, sps = chunk_sps(craftax, args.repeats)
            name = f"Craftax-Classic-Symbolic {algo.upper()}, 1 seed"
            rows.append((name, compile_s, sps, raw, bound))

    print(f"\nfloat32 matmul rate: {matmul / 1e9:.0f} GFLOP/s on {jax.devices()[0].platform}\n")
    print("| run | compile s | env steps/s | raw env steps/s | network bound | of raw | of bound |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, compile_s, sps, raw_sps, bound_sps in rows:
        print(
            f"| {name} | {compile_s:.1f} | {sps:,.0f} | {raw_sps:,.0f} | {bound_sps:,.0f} | "
            f"{sps / raw_sps:.0%} | {sps / bound_sps:.0%} |"
        )


def cartpole_rows(algo: str, matmul: float, repeats: int) -> list[tuple]:
    """PPO or PQN on CartPole at its shipped config, 1 and 8 seeds."""
    path = f"configs/{algo}-cartpole.yaml"
    cartpole = C.load(path)
    bound = matmul / network_flops_per_env_step(cartpole)
    rows = []
    for seeds in (1, 8):
        cfg = C.load(path, [f"num_seeds={seeds}", *NO_LOGGING])
        # the raw ceiling for S seeds: one batch of S x num_envs envs
        batch = C.load(path, [f"env.num_envs={cartpole.env.num_envs * seeds}"])
        raw = raw_env_sps(batch, 4096 if algo == "ppo" else 512)
        compile_s, sps = run_sps(cfg, repeats)
        label = f"CartPole-v1 {algo.upper()}, {seeds} seed{'s' if seeds > 1 else ''}"
        rows.append((label, compile_s, sps, raw, bound))
    return rows


if __name__ == "__main__":
    main()
