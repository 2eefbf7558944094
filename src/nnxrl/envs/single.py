"""Your own JAX environment as a VecEnv: write one env, nnxrl batches and resets it.

    reset_one(key) -> (obs [*obs_shape], state)
    step_one(key, state, action) -> (obs, state, reward, terminated, truncated)
    action_mask_one(state) -> [num_actions] bool, the legal actions (optional)
    episode_info_one(state) -> {name: scalar}, results reported where an episode
        ends, e.g. a game's score (optional)

``from_single`` vmaps them over ``num_envs`` copies and starts a new episode (with a
fresh key) wherever one ended, keeping the ended episode's last observation as
``final_obs`` (and its legal actions as ``final_action_mask``) so that a time limit
(``truncated``) is bootstrapped, not cut. The env adapters of the other JAX suites
(``envs/jumanji_env.py``, ...) are built on it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from nnxrl.envs.base import EnvSpec, EnvStep, VecEnv


def from_single(
    env_id: str,
    reset_one: Callable[[jax.Array], tuple[jax.Array, Any]],
    step_one: Callable[[jax.Array, Any, jax.Array], tuple],
    obs_shape: tuple[int, ...],
    num_actions: int,
    num_envs: int,
    action_mask_one: Callable[[Any], jax.Array] | None = None,
    episode_info_one: Callable[[Any], dict[str, jax.Array]] | None = None,
) -> VecEnv:
    """A batch of ``num_envs`` self-resetting copies of one env (see the module doc)."""
    mask = None if action_mask_one is None else jax.vmap(action_mask_one)

    def reset(key: jax.Array):
        obs, state = jax.vmap(reset_one)(jax.random.split(key, num_envs))
        return obs.astype(jnp.float32), state

    def step(key: jax.Array, state: Any, action: jax.Array):
        step_key, reset_key = jax.random.split(key)
        obs, state, reward, terminated, truncated = jax.vmap(step_one)(
            jax.random.split(step_key, num_envs), state, action
        )
        terminated = terminated.astype(bool)
        truncated = jnp.logical_and(truncated.astype(bool), ~terminated)
        done = jnp.logical_or(terminated, truncated)
        fresh_obs, fresh_state = reset(reset_key)

        def where_done(fresh, old):
            mask = done.reshape(done.shape + (1,) * (old.ndim - 1))
            return jnp.where(mask, fresh, old)

        final_obs = obs.astype(jnp.float32)
        episode = {} if episode_info_one is None else jax.vmap(episode_info_one)(state)
        out = EnvStep(
            obs=where_done(fresh_obs, final_obs),
            reward=reward.astype(jnp.float32),
            terminated=terminated,
            truncated=truncated,
            final_obs=final_obs,
            episode={k: v.astype(jnp.float32) for k, v in episode.items()},
            final_action_mask=None if mask is None else mask(state),
        )
        return jax.tree.map(where_done, fresh_state, state), out

    spec = EnvSpec(id=env_id, obs_shape=tuple(obs_shape), num_actions=int(num_actions))
    return VecEnv(spec=spec, num_envs=num_envs, reset=reset, step=step, action_mask=mask)
