"""Observation normalisation and reward scaling, the PPO practice for MuJoCo-like
tasks (brax's PPO and Stable-Baselines3's VecNormalize do both).

Observations: x' = clip((x - mu) / sqrt(var + 1e-8), -c, c) with the running mean
and variance of every observation seen so far (``ops/running_moments.py``). A
rollout is collected with the moments from before it, so the policy acts on and
trains on the same inputs; its raw observations then update the moments.

Rewards: r' = clip(r / sqrt(var_R + 1e-8), -c, c), where var_R is the running
variance of each env's discounted return R_t = gamma R_{t-1} (1 - end_{t-1}) + r_t
(not of the rewards: scaling by the return's spread keeps value targets near unit
size whatever the discount). Logged episode returns stay in the env's units.

Both live in the run state (``RunState.normalizer``; empty when switched off, so a
run without them carries nothing), are checkpointed with it and, for observations,
exported with the policy, which applies them when it acts.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from nnxrl.ops.running_moments import Moments, init_moments, standardize, update_moments


@struct.dataclass
class Normalizer:
    obs: Any  # Moments over [*obs_shape], or () when observations are not normalised
    returns: Any  # Moments over scalars, or () when rewards are not scaled
    discounted: Any  # [B] each env's running discounted return, or ()


def init_normalizer(
    obs_shape: tuple[int, ...], num_envs: int, *, obs: bool, reward: bool
) -> Normalizer:
    return Normalizer(
        obs=init_moments(obs_shape) if obs else (),
        returns=init_moments(()) if reward else (),
        discounted=jnp.zeros(num_envs, jnp.float32) if reward else (),
    )


def observe(moments: Any, obs: jax.Array, clip: float) -> jax.Array:
    """What the network sees: the standardised, clipped observation (unchanged when
    ``moments`` is ())."""
    if not isinstance(moments, Moments):
        return obs
    return jnp.clip(standardize(obs, moments), -clip, clip)


def update_obs(normalizer: Normalizer, raw_obs: jax.Array) -> Normalizer:
    """Merge a rollout's raw observations [T, B, *obs_shape] into the moments."""
    if not isinstance(normalizer.obs, Moments):
        return normalizer
    return normalizer.replace(obs=update_moments(normalizer.obs, raw_obs, 2))


def scale_rewards(
    normalizer: Normalizer, reward: jax.Array, ends: jax.Array, gamma: jax.Array, clip: float
) -> tuple[Normalizer, jax.Array]:
    """rewards [T, B], episode ends [T, B] -> (normalizer with the rollout's discounted
    returns merged in, scaled rewards [T, B]); unchanged when scaling is off."""
    if not isinstance(normalizer.returns, Moments):
        return normalizer, reward

    def discount(running: jax.Array, step: tuple[jax.Array, jax.Array]):
        r, end = step
        running = gamma * running + r
        return jnp.where(end, 0.0, running), running

    discounted, returns = jax.lax.scan(discount, normalizer.discounted, (reward, ends))
    moments = update_moments(normalizer.returns, returns, 2)
    scaled = jnp.clip(reward / jnp.sqrt(moments.var + 1e-8), -clip, clip)
    return normalizer.replace(returns=moments, discounted=discounted), scaled
