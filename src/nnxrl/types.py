"""Named state containers: data only, no logic.

Arrays are time-major: ``[T, B, ...]`` for a rollout of T steps over B envs.
``RunState`` is everything a run carries from one update to the next (one seed;
many seeds add a leading axis through vmap).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
from flax import struct


class Hyperparams(NamedTuple):
    """Numeric coefficients that travel into the compiled program as traced values,
    so a sweep can vmap over them without recompiling. Scalars (or [S] when swept)."""

    learning_rate: jax.Array
    ent_coef: jax.Array
    vf_coef: jax.Array
    clip_eps: jax.Array
    value_clip_eps: jax.Array
    gamma: jax.Array
    gae_lambda: jax.Array
    max_grad_norm: jax.Array


class Transition(NamedTuple):
    """One rollout step for every env; stacked by the rollout scan to [T, B, ...]."""

    obs: jax.Array  # [B, *obs_shape] observation the action was chosen from
    action: jax.Array  # [B] int32
    log_prob: jax.Array  # [B] log pi_old(action | obs)
    value: jax.Array  # [B] V_old(obs)
    reward: jax.Array  # [B]
    terminated: jax.Array  # [B] bool
    truncated: jax.Array  # [B] bool
    final_value: jax.Array  # [B] V_old(final_obs): the bootstrap on truncation
    episode: dict[str, jax.Array]  # per-episode results where the episode ended


class Batch(NamedTuple):
    """What the update trains on: [N, ...] after flattening time and envs."""

    obs: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    advantage: jax.Array
    target: jax.Array


@struct.dataclass
class RunState:
    """One seed's whole training state between updates."""

    params: Any  # actor-critic parameters (an nnx.State)
    opt_state: Any  # optimiser state (optax)
    env_state: Any  # batched env state, episode statistics included
    obs: jax.Array  # [B, *obs_shape] current observations
    key: jax.Array  # PRNG key for everything that follows
    update: jax.Array  # int32: updates done so far


@struct.dataclass
class UpdateState:
    """What the epoch and minibatch scans carry."""

    params: Any
    opt_state: Any
    opt_step: jax.Array  # int32: optimiser steps done so far (for the lr schedule)
