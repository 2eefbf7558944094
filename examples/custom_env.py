"""Your own JAX environment, trained by nnxrl by id: from Python, YAML or the CLI.

A corridor of ``length`` cells: the agent starts at the left end, moves left (0) or
right (1), and gets reward 1 for reaching the right end; episodes are cut at
``2 * length`` steps. Importing this module registers it as ``Corridor-v0``:

    uv run nnxrl --plugin examples/custom_env.py train configs/ppo-cartpole.yaml \\
        --set env.id=Corridor-v0 --set "env.kwargs={length: 8}"
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

import nnxrl


def make_corridor(num_envs: int, length: int = 8) -> nnxrl.VecEnv:
    """The batched corridor (``register_env`` calls this with env.num_envs and env.kwargs)."""

    def observe(position):
        return jax.nn.one_hot(position, length)

    def reset_one(key):
        state = {"position": jnp.int32(0), "t": jnp.int32(0)}
        return observe(state["position"]), state

    def step_one(key, state, action):
        move = jnp.where(action == 1, 1, -1)
        position = jnp.clip(state["position"] + move, 0, length - 1)
        t = state["t"] + 1
        terminated = position == length - 1
        truncated = t >= 2 * length
        state = {"position": position, "t": t}
        return observe(position), state, terminated.astype(jnp.float32), terminated, truncated

    return nnxrl.from_single("Corridor-v0", reset_one, step_one, (length,), 2, num_envs)


nnxrl.register_env("Corridor-v0", make_corridor)


def main(total_env_steps: int = 40_000) -> float:
    config = nnxrl.load_config(
        "configs/ppo-cartpole.yaml",
        ["env.id=Corridor-v0", "env.kwargs={length: 8}", f"total_env_steps={total_env_steps}"],
    )
    result = nnxrl.train(config)
    final = float(jnp.nanmean(result.metrics["episode_return"][:, -10:]))
    print(f"Corridor-v0: mean return over the last 10 updates {final:.2f} (1.0 is optimal)")
    return final


if __name__ == "__main__":
    main()
