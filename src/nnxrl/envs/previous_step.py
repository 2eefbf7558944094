"""The previous step's action and reward as part of each observation
(``env.previous_action_reward``), as PQN-RNN feeds its last action and many memory
tasks need: a policy whose reward depends on what it did, or that must tell its own
moves from the world's, has to see them.

Stateless: the action and reward that produced an observation are the ones the step
was given and returned, so nothing is carried besides the wrapped env's state (eval,
render and checkpoints see the same state as without the option).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from nnxrl.envs.base import EnvSpec, VecEnv
from nnxrl.schema import ConfigError


def with_previous_step(env: VecEnv) -> VecEnv:
    """``env`` whose observations [B, F] become [B, F + A + 1]: the observation, then
    the action that led to it (one-hot over the A discrete actions, or the D-vector
    clipped to the action bounds), then the reward it earned; zeros at an episode's
    first observation, whose step had no previous action. A final observation keeps
    the step that reached it."""
    spec = env.spec
    check_flat_observations(spec)
    width = spec.action_dim if spec.continuous else spec.num_actions

    def encode(action: jax.Array) -> jax.Array:
        if spec.continuous:
            return jnp.clip(action, jnp.asarray(spec.action_low), jnp.asarray(spec.action_high))
        return jax.nn.one_hot(action, spec.num_actions)

    def reset(key: jax.Array):
        obs, state = env.reset(key)
        return jnp.concatenate([obs, jnp.zeros((env.num_envs, width + 1), obs.dtype)], -1), state

    def step(key: jax.Array, state, action: jax.Array):
        state, out = env.step(key, state, action)
        previous = jnp.concatenate([encode(action), out.reward[:, None]], -1).astype(out.obs.dtype)
        first = jnp.logical_or(out.terminated, out.truncated)[:, None]
        obs = jnp.concatenate([out.obs, jnp.where(first, 0.0, previous)], -1)
        final_obs = jnp.concatenate([out.final_obs, previous], -1)
        return state, out._replace(obs=obs, final_obs=final_obs)

    wrapped = spec._replace(obs_shape=(spec.obs_shape[0] + width + 1,))
    return VecEnv(wrapped, env.num_envs, reset, step, action_mask=env.action_mask)


def check_flat_observations(spec: EnvSpec) -> None:
    """The option needs observations [F]; a ConfigError naming the shape otherwise."""
    if len(spec.obs_shape) != 1:
        raise ConfigError(
            f"env.previous_action_reward: {spec.id} has observations of shape "
            f"{spec.obs_shape}, and the previous action and reward are appended to flat "
            "ones only; use a flat variant of the env (e.g. a Symbolic Craftax id) or "
            "leave the option off"
        )
