"""Q(lambda) returns, the regression targets of PQN (Gallici et al. 2025,
arXiv:2407.04811; Peng & Williams 1996), with time-major arrays of shape [T, B]:

    G_t = r_t + gamma * (1 - term_t) * [ V'_t + lambda * (1 - end_t) * (G_{t+1} - V'_t) ]
    G_T = V'_{T-1}                      (so the rollout's last step is a one-step target)

``V'_t`` is the value of the state step t led to, max_a Q(s_{t+1}, a) (or, with several
reward streams, that stream's Q at the action the agent would take there). For a
time-limit truncation it is the value of the episode's final observation, so the
return bootstraps through it; ``term_t`` cuts the bootstrap only at a true end, and
``end_t = term_t | trunc_t`` stops the next episode's return from leaking back.

lambda = 0 gives one-step TD targets r_t + gamma (1 - term_t) V'_t; lambda = 1 gives
Monte-Carlo returns that bootstrap only at truncations and at the rollout's end.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from nnxrl.ops.gae import bootstrap_values


def compute_q_lambda(
    rewards: jax.Array,
    next_values: jax.Array,
    terminated: jax.Array,
    episode_ends: jax.Array,
    gamma: float | jax.Array,
    q_lambda: float | jax.Array,
) -> jax.Array:
    """Returns G [T, B] (all inputs [T, B]; ``next_values`` is V'_t above)."""
    assert rewards.shape == next_values.shape == terminated.shape == episode_ends.shape, (
        f"compute_q_lambda: shapes differ: rewards {rewards.shape}, next_values "
        f"{next_values.shape}, terminated {terminated.shape}, episode_ends {episode_ends.shape}"
    )
    not_term = 1.0 - terminated.astype(next_values.dtype)
    not_end = 1.0 - episode_ends.astype(next_values.dtype)

    def backward(following_return, step):
        reward, next_value, keep_bootstrap, keep_trace = step
        mixed = next_value + q_lambda * keep_trace * (following_return - next_value)
        g = reward + gamma * keep_bootstrap * mixed
        return g, g

    _, returns = jax.lax.scan(
        backward, next_values[-1], (rewards, next_values, not_term, not_end), reverse=True
    )
    return returns


def episodic_q_lambda(
    rewards: jax.Array,
    values: jax.Array,
    last_value: jax.Array,
    final_values: jax.Array,
    terminated: jax.Array,
    truncated: jax.Array,
    gamma: float | jax.Array,
    q_lambda: float | jax.Array,
) -> jax.Array:
    """Q(lambda) for a reward that belongs to episodes: ``values`` [T, B] are the
    state values V(s_t) seen during the rollout, ``last_value`` [B] that of the
    observation after it, ``final_values`` [T, B] those of each step's final
    observation (used where it was truncated)."""
    next_values = bootstrap_values(values, last_value, final_values, truncated)
    ends = jnp.logical_or(terminated, truncated)
    return compute_q_lambda(rewards, next_values, terminated, ends, gamma, q_lambda)


def continuing_q_lambda(
    rewards: jax.Array,
    values: jax.Array,
    last_value: jax.Array,
    gamma: float | jax.Array,
    q_lambda: float | jax.Array,
) -> jax.Array:
    """Q(lambda) for a non-episodic stream (RND's bonus): episode ends are ignored and
    V'_t = V(s_{t+1}), the next episode's first state after a reset. All [T, B];
    last_value [B]."""
    following = jnp.concatenate([values[1:], last_value[None]], axis=0)
    never = jnp.zeros(rewards.shape, bool)
    return compute_q_lambda(rewards, following, never, never, gamma, q_lambda)
