"""Throughput of nnxrl PPO and PQN beside two ceilings: the raw env and the network
FLOP bound.

    uv run python benchmarks/throughput.py            # every row below
    uv run python benchmarks/throughput.py --quick    # CartPole only
    uv run python benchmarks/throughput.py --images   # image observations only
    uv run python benchmarks/throughput.py --algo pqn # one algorithm

Each algorithm runs its shipped config (configs/{ppo,pqn}-cartpole.yaml and
-craftax-classic-symbolic.yaml). Env steps per second exclude compilation (reported
apart; cold: the persistent compilation cache off) and are medians of several runs.
The raw-env ceiling steps the same env and batch with random actions in a jitted
scan. The FLOP bound divides the networks' FLOPs per env step (XLA's count of one
forward pass, times rollout passes + epochs x 3 for forward and backward) by this
machine's measured float32 matmul rate.

Image observations: PPO on Breakout-MinAtar (64 envs x 128 steps, 4 epochs x 8
minibatches) with the default conv torso and with the image flattened into the MLP
(``network.conv_features=[]``), and on Craftax-Classic-Pixels (64 envs x 64 steps).
The warm-compile row runs CartPole twice with the cache on and times the second.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from nnxrl.parallel.devices import use_cpu_devices

use_cpu_devices()  # before JAX starts: one CPU device per core, as the CLI does

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from nnxrl import config as C  # noqa: E402
from nnxrl.config import schedule  # noqa: E402
from nnxrl.envs import make_env  # noqa: E402
from nnxrl.envs.compiler_options import compiler_options  # noqa: E402
from nnxrl.run.programs import compile_programs  # noqa: E402
from nnxrl.run.training import run_training  # noqa: E402
from nnxrl.store.compile_cache import use_compile_cache  # noqa: E402

NO_LOGGING = ["logging.backends=[]"]  # metrics.jsonl only: logging costs are in logging.py
COLD = ["compile_cache.enabled=false"]  # every compile timed from scratch


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
    """FLOPs per env step, from XLA's count of one forward pass on one observation.
    PPO: rollout = actor + critic + critic(final obs), update = epochs x 3 (forward +
    backward) x (actor + critic). PQN: rollout = Q + Q(final obs), update = epochs x
    3 x Q. The networks are built as the run builds them."""
    from flax import nnx

    from nnxrl.networks.factory import build_network

    env = make_env(config.env)
    model = build_network(config.network, env.spec, 1, jax.random.key(0), config.algo)
    graphdef, params = nnx.split(model)
    obs = jnp.zeros((1, *env.spec.obs_shape), jnp.float32)

    def flops(method: str) -> float:
        def forward(params, obs):
            return getattr(nnx.merge(graphdef, params), method)(obs)

        cost = jax.jit(forward).lower(params, obs).compile().cost_analysis()
        return float((cost[0] if isinstance(cost, list) else cost)["flops"])

    epochs = config.algo_config.num_epochs
    full = flops("__call__")
    if config.algo == "pqn":
        return 2 * full + epochs * 3 * full
    return full + flops("value") + epochs * 3 * full


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
    chunk = programs.chunk(schedule.updates_per_chunk(config))
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
    steps = schedule.updates_per_chunk(config) * schedule.batch_size(config) * config.num_seeds
    return compile_seconds, steps / statistics.median(times)


CRAFTAX_CHUNK = {  # a chunk of about 64k env steps, timed chunk by chunk
    "ppo": ["total_env_steps=655360", "logging.updates_per_chunk=1"],
    "pqn": ["total_env_steps=655360", "logging.updates_per_chunk=64"],
}
BREAKOUT = [  # on the CartPole config: the same PPO settings otherwise
    "env.id=Breakout-MinAtar",
    "env.num_envs=64",
    "ppo.num_minibatches=8",
    "total_env_steps=819200",
    "logging.updates_per_chunk=1",
]
CRAFTAX_PIXELS = [  # on the Craftax-Classic-Symbolic config, at 64 envs
    "env.id=Craftax-Classic-Pixels-v1",
    "env.num_envs=64",
    "env.reset_ratio=4",
    "total_env_steps=409600",
    "logging.updates_per_chunk=1",
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="CartPole only")
    parser.add_argument("--images", action="store_true", help="image observations only")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--algo", choices=("ppo", "pqn"), action="append")
    args = parser.parse_args()
    matmul = matmul_flops_per_second()
    print(f"\nfloat32 matmul rate: {matmul / 1e9:.0f} GFLOP/s on {jax.devices()[0].platform}\n")
    print("| run | compile s | env steps/s | raw env steps/s | network bound | of raw | of bound |")
    print("|---|---:|---:|---:|---:|---:|---:|", flush=True)
    algos = args.algo or ("ppo", "pqn")
    if not args.images:
        for algo in algos:
            cartpole_rows(algo, matmul, args.repeats)
        warm_compile_row(matmul)
    if not args.quick:
        image_rows(matmul, args.repeats)
    if not args.quick and not args.images:
        for algo in algos:
            craftax = C.load(
                f"configs/{algo}-craftax-classic-symbolic.yaml", CRAFTAX_CHUNK[algo] + COLD
            )
            raw = raw_env_sps(craftax, 64, repeats=3)
            compile_s, sps = chunk_sps(craftax, args.repeats)
            name = f"Craftax-Classic-Symbolic {algo.upper()}, 1 seed"
            print_row(name, compile_s, sps, raw, matmul / network_flops_per_env_step(craftax))


def print_row(name: str, compile_s: float, sps: float, raw_sps: float, bound_sps: float) -> None:
    print(
        f"| {name} | {compile_s:.1f} | {sps:,.0f} | {raw_sps:,.0f} | {bound_sps:,.0f} | "
        f"{sps / raw_sps:.0%} | {sps / bound_sps:.1%} |",
        flush=True,
    )


def image_rows(matmul: float, repeats: int) -> None:
    """PPO on image observations: Breakout-MinAtar with and without the conv torso,
    Craftax-Classic-Pixels with it."""
    runs = (
        ("Breakout-MinAtar PPO, conv torso", "configs/ppo-cartpole.yaml", BREAKOUT),
        (
            "Breakout-MinAtar PPO, flattened (no conv)",
            "configs/ppo-cartpole.yaml",
            [*BREAKOUT, "network.conv_features=[]"],
        ),
        (
            "Craftax-Classic-Pixels PPO, conv torso",
            "configs/ppo-craftax-classic-symbolic.yaml",
            CRAFTAX_PIXELS,
        ),
    )
    for name, path, overrides in runs:
        config = C.load(path, [*overrides, *NO_LOGGING, *COLD])
        raw = raw_env_sps(config, 128, repeats=3)
        compile_s, sps = chunk_sps(config, max(repeats - 1, 1))
        print_row(name, compile_s, sps, raw, matmul / network_flops_per_env_step(config))


def warm_compile_row(matmul: float) -> None:
    """CartPole PPO, 1 seed, run twice with the cache on: the second start is warm
    (in this process, so JAX's in-memory tracing caches help it too; peers.py times
    a warm start in a fresh process)."""
    with tempfile.TemporaryDirectory() as cache:
        config = C.load("configs/ppo-cartpole.yaml", [*NO_LOGGING, f"compile_cache.dir={cache}"])
        run_sps(config, 1)  # fills the cache
        compile_s, sps = run_sps(config, 1)
        use_compile_cache(C.CompileCacheConfig(enabled=False))  # the folder goes now
    raw = raw_env_sps(config, 4096)
    bound = matmul / network_flops_per_env_step(config)
    print_row("CartPole-v1 PPO, 1 seed, warm compile cache", compile_s, sps, raw, bound)


def cartpole_rows(algo: str, matmul: float, repeats: int) -> None:
    """PPO or PQN on CartPole at its shipped config, 1 and 8 seeds."""
    path = f"configs/{algo}-cartpole.yaml"
    cartpole = C.load(path)
    bound = matmul / network_flops_per_env_step(cartpole)
    for seeds in (1, 8):
        cfg = C.load(path, [f"num_seeds={seeds}", *NO_LOGGING, *COLD])
        # the raw ceiling for S seeds: one batch of S x num_envs envs
        batch = C.load(path, [f"env.num_envs={cartpole.env.num_envs * seeds}"])
        raw = raw_env_sps(batch, 4096 if algo == "ppo" else 512)
        compile_s, sps = run_sps(cfg, repeats)
        label = f"CartPole-v1 {algo.upper()}, {seeds} seed{'s' if seeds > 1 else ''}"
        print_row(label, compile_s, sps, raw, bound)


if __name__ == "__main__":
    main()
