"""Continuous control throughput: PPO's env steps per second beside the env's own rate.

For each env, the raw rate steps the batched env with random actions in one jitted
scan (no network); PPO's is a run of the shipped config at the same batch, compile
excluded. Brax rows need `uv sync --extra brax` and are skipped without it.

    uv run python benchmarks/continuous.py
    uv run python benchmarks/continuous.py --envs 4096 --steps 16   # a GPU's batch

Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp

import nnxrl
from nnxrl.envs.brax_env import brax_available

CASES = {  # name -> (config, overrides)
    "Pendulum-v1": ("ppo-pendulum", []),
    "brax:ant (spring)": ("ppo-brax-ant", ["env.kwargs={backend: spring, episode_length: 1000}"]),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=256, help="envs per run")
    parser.add_argument("--steps", type=int, default=32, help="rollout length per update")
    parser.add_argument("--updates", type=int, default=20)
    args = parser.parse_args()
    nnxrl.use_cpu_devices(1)
    rows = []
    for name, (config_name, extra) in CASES.items():
        if name.startswith("brax") and not brax_available():
            print(f"skipping {name}: the brax extra is not installed (uv sync --extra brax)")
            continue
        overrides = [
            *extra,
            f"env.num_envs={args.envs}",
            f"ppo.num_steps={args.steps}",
            "ppo.num_minibatches=4",
            f"total_env_steps={args.envs * args.steps * args.updates}",
            "logging.backends=[]",
            "checkpoint.enabled=false",
        ]
        config = nnxrl.load_config(config_name, overrides)
        raw = raw_rate(config, args.steps)
        result = nnxrl.train(config)
        rows.append((name, raw, result.env_steps_per_second, result.compile_seconds))
    print(f"\n{args.envs} envs x {args.steps} steps per update, {jax.devices()[0].platform}\n")
    print("| env | raw env steps/s | PPO env steps/s | PPO / raw | PPO compile s |")
    print("|---|---:|---:|---:|---:|")
    for name, raw, ppo, compile_s in rows:
        print(f"| {name} | {raw:,.0f} | {ppo:,.0f} | {ppo / raw:.2f} | {compile_s:.1f} |")


def raw_rate(config, steps: int, repeats: int = 20) -> float:
    """Env steps per second of the batched env alone, random actions in [low, high]."""
    env = nnxrl.make_env(config.env)
    low = jnp.asarray(env.spec.action_low)
    high = jnp.asarray(env.spec.action_high)

    @jax.jit
    def run(key, state):
        def step(state, key):
            act_key, step_key = jax.random.split(key)
            action = jax.random.uniform(act_key, (env.num_envs, len(low)), minval=low, maxval=high)
            state, out = env.step(step_key, state, action)
            return state, out.reward.sum()

        return jax.lax.scan(step, state, jax.random.split(key, steps))

    _, state = env.reset(jax.random.key(0))
    state, _ = jax.block_until_ready(run(jax.random.key(1), state))  # compile
    started = time.perf_counter()
    for i in range(repeats):
        state, _ = run(jax.random.key(2 + i), state)
    jax.block_until_ready(state)
    return env.num_envs * steps * repeats / (time.perf_counter() - started)


if __name__ == "__main__":
    main()
