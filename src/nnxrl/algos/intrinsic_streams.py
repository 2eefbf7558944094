"""The algorithm's side of the intrinsic add-on interface, the same for every
algorithm: what the add-on is shown (``to_experience``) and how its bonus becomes
reward streams (``combine_rewards``), and the streams' weights and discounts as the
traced hyperparameters give them."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from nnxrl.intrinsic.base import Experience


def to_experience(trajectory: Any, last_obs: jax.Array, gamma: jax.Array) -> Experience:
    """A rollout (any transition type with obs, action, terminated, truncated, each
    [T, B, ...]), the observation after it [B, ...] and the intrinsic discount (traced),
    as an add-on sees them."""
    return Experience(
        obs=jnp.concatenate([trajectory.obs, last_obs[None]], axis=0),
        action=trajectory.action,
        episode_end=jnp.logical_or(trajectory.terminated, trajectory.truncated),
        gamma=gamma,
    )


def combine_rewards(
    extrinsic: jax.Array, bonus: jax.Array, coef: jax.Array, *, num_streams: int
) -> jax.Array:
    """[T, B] each -> rewards [T, B, K]: r + c b (K = 1, intrinsic.mode: reward) or
    (r, c b) (K = 2, value_head: the bonus learned by its own value head)."""
    scaled = coef * bonus
    if num_streams == 1:
        return (extrinsic + scaled)[..., None]
    return jnp.stack([extrinsic, scaled], axis=-1)


def stream_weights(hp: Any, num_streams: int) -> jax.Array:
    """[K] the reward streams' weights (extrinsic, intrinsic), in acting and targets."""
    return jnp.stack([hp.extrinsic_coef, hp.intrinsic_coef])[:num_streams]


def stream_gammas(hp: Any, num_streams: int) -> jax.Array:
    """[K] the reward streams' discounts (extrinsic, intrinsic)."""
    return jnp.stack([hp.gamma, hp.intrinsic_gamma])[:num_streams]
