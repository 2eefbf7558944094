"""Generalised advantage estimation (Schulman et al. 2016, arXiv:1506.02438).

With time-major arrays of shape [T, B]:

    delta_t = r_t + gamma * (1 - term_t) * V'_t - V_t
    A_t     = delta_t + gamma * lambda * (1 - end_t) * A_{t+1},   A_T = 0
    R_t     = A_t + V_t                                   (the value target)

``V'_t`` is the value of the state step t led to: for a time-limit truncation
that is the value of the episode's final observation, so the return is
bootstrapped through it; ``term_t`` cuts the bootstrap only at a true end.
``end_t = term_t | trunc_t`` stops the advantage from leaking across episodes.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def compute_gae(
    rewards: jax.Array,
    values: jax.Array,
    next_values: jax.Array,
    terminated: jax.Array,
    episode_ends: jax.Array,
    gamma: float | jax.Array,
    gae_lambda: float | jax.Array,
) -> tuple[jax.Array, jax.Array]:
    """Advantages and value targets, each [T, B] (all inputs [T, B])."""
    assert rewards.shape == values.shape == next_values.shape == terminated.shape, (
        f"compute_gae: shapes differ: rewards {rewards.shape}, values {values.shape}, "
        f"next_values {next_values.shape}, terminated {terminated.shape}"
    )
    assert episode_ends.shape == rewards.shape, (episode_ends.shape, rewards.shape)
    not_term = 1.0 - terminated.astype(values.dtype)
    not_end = 1.0 - episode_ends.astype(values.dtype)
    deltas = rewards + gamma * not_term * next_values - values

    def backward(advantage, step):
        delta, keep = step
        advantage = delta + gamma * gae_lambda * keep * advantage
        return advantage, advantage

    _, advantages = jax.lax.scan(
        backward, jnp.zeros_like(values[0]), (deltas, not_end), reverse=True
    )
    return advantages, advantages + values


def bootstrap_values(
    values: jax.Array, last_value: jax.Array, final_values: jax.Array, truncated: jax.Array
) -> jax.Array:
    """V'_t for compute_gae: V_{t+1} within the rollout, ``last_value`` after its last
    step, and the final observation's value where step t hit a time limit.

    values [T, B], last_value [B], final_values [T, B], truncated [T, B] -> [T, B].
    """
    following = jnp.concatenate([values[1:], last_value[None]], axis=0)
    return jnp.where(truncated, final_values, following)


def episodic_gae(
    rewards: jax.Array,
    values: jax.Array,
    last_value: jax.Array,
    final_values: jax.Array,
    terminated: jax.Array,
    truncated: jax.Array,
    gamma: float | jax.Array,
    gae_lambda: float | jax.Array,
) -> tuple[jax.Array, jax.Array]:
    """GAE for a reward that belongs to episodes: cut at true ends, bootstrapped
    through time limits from the final observation's value. All [T, B]; last_value [B]."""
    next_values = bootstrap_values(values, last_value, final_values, truncated)
    ends = jnp.logical_or(terminated, truncated)
    return compute_gae(rewards, values, next_values, terminated, ends, gamma, gae_lambda)


def continuing_gae(
    rewards: jax.Array,
    values: jax.Array,
    last_value: jax.Array,
    gamma: float | jax.Array,
    gae_lambda: float | jax.Array,
) -> tuple[jax.Array, jax.Array]:
    """GAE for a non-episodic stream (e.g. RND's intrinsic reward): episode ends are
    ignored, so V'_t = V_{t+1} (the next episode's first state after a reset) and
    ``last_value`` (this stream's own value of the next observation) closes the rollout.
    All [T, B]; last_value [B]."""
    following = jnp.concatenate([values[1:], last_value[None]], axis=0)
    never = jnp.zeros(rewards.shape, bool)
    return compute_gae(rewards, values, following, never, never, gamma, gae_lambda)
