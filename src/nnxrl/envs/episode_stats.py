"""Episode statistics: running return and length per env, reported where episodes end."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from nnxrl.envs.base import VecEnv


@struct.dataclass
class EpisodeStatsState:
    env_state: Any
    episode_return: jax.Array  # [B] return of the running episode so far
    episode_length: jax.Array  # [B] steps of the running episode so far


def with_episode_statistics(env: VecEnv) -> VecEnv:
    """Wrap ``env`` so each EnvStep's ``episode`` holds ``return`` and ``length`` of
    the episode that ended at that step (meaningful where terminated | truncated)."""

    def reset(key: jax.Array):
        obs, env_state = env.reset(key)
        zeros = jnp.zeros(env.num_envs, jnp.float32)
        return obs, EpisodeStatsState(env_state, zeros, zeros.astype(jnp.int32))

    def step(key: jax.Array, state: EpisodeStatsState, action: jax.Array):
        env_state, out = env.step(key, state.env_state, action)
        done = jnp.logical_or(out.terminated, out.truncated)
        ret = state.episode_return + out.reward
        length = state.episode_length + 1
        episode = {**out.episode, "return": ret, "length": length}
        new_state = EpisodeStatsState(
            env_state=env_state,
            episode_return=jnp.where(done, 0.0, ret),
            episode_length=jnp.where(done, 0, length),
        )
        return new_state, out._replace(episode=episode)

    mask = None if env.action_mask is None else lambda state: env.action_mask(state.env_state)
    return VecEnv(spec=env.spec, num_envs=env.num_envs, reset=reset, step=step, action_mask=mask)
