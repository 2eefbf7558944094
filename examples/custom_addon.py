"""Your own intrinsic-reward add-on, used by PPO unchanged.

``distance``: the bonus for a step is the squared distance of the next observation
from a running mean of the observations seen so far (a crude novelty signal); the
add-on's state is that mean and a count; it has no networks, so ``update`` only
moves the mean. Registered as ``distance``:

    uv run nnxrl --plugin examples/custom_addon.py train configs/ppo-cartpole.yaml \\
        --set intrinsic.addon=distance --set "intrinsic.options={scale: 0.1}"
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
from flax import struct

import nnxrl


@dataclass(frozen=True)
class DistanceOptions:
    scale: float = nnxrl.setting(0.01, "Bonus per unit of squared distance.", low=0)


@struct.dataclass
class DistanceState:
    mean: jax.Array  # [*obs_shape] running mean of observations
    count: jax.Array  # observations seen


def make_distance(options: DistanceOptions, context: nnxrl.AddonContext) -> nnxrl.Addon:
    def init(key):
        return DistanceState(jnp.zeros(context.obs_shape), jnp.float32(0))

    def reward(state: DistanceState, experience: nnxrl.Experience):
        following = experience.obs[1:]  # [T, B, *obs_shape]: s_{t+1}
        axes = tuple(range(2, following.ndim))
        bonus = options.scale * jnp.sum((following - state.mean) ** 2, axis=axes)
        bonus = jnp.where(experience.episode_end, 0.0, bonus)  # s_{t+1} is a new episode
        return state, bonus, {"intrinsic/distance_bonus": bonus.mean()}

    def update(state: DistanceState, experience: nnxrl.Experience, key):
        seen = experience.obs[1:].reshape((-1, *context.obs_shape))
        count = state.count + seen.shape[0]
        mean = state.mean + (seen.sum(0) - seen.shape[0] * state.mean) / count
        return DistanceState(mean, count), {}

    return nnxrl.Addon(init=init, reward=reward, update=update)


nnxrl.register_addon("distance", DistanceOptions, make_distance)


def main(total_env_steps: int = 20_000) -> dict:
    config = nnxrl.load_config(
        "configs/ppo-cartpole.yaml",
        [
            "intrinsic.addon=distance",
            "intrinsic.options={scale: 0.1}",
            f"total_env_steps={total_env_steps}",
        ],
    )
    metrics = nnxrl.train(config).metrics
    print(f"mean intrinsic reward per update: {metrics['reward/intrinsic'][0].round(3)}")
    return metrics


if __name__ == "__main__":
    main()
