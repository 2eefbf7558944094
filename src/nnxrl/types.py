"""Named state containers: data only, no logic.

Arrays are time-major: ``[T, B, ...]`` for a rollout of T steps over B envs.
``K`` is the number of reward streams a critic predicts: 1, or 2 when an intrinsic
reward has its own value head (extrinsic first).
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
    intrinsic_reward_coef: jax.Array  # scale of the add-on's bonus
    intrinsic_gamma: jax.Array  # discount of the intrinsic stream (value_head mode)
    extrinsic_adv_coef: jax.Array  # weights of the two advantages (value_head mode)
    intrinsic_adv_coef: jax.Array


class PQNHyperparams(NamedTuple):
    """PQN's traced coefficients (scalars, or [S] when swept)."""

    learning_rate: jax.Array
    max_grad_norm: jax.Array
    gamma: jax.Array
    q_lambda: jax.Array
    epsilon_start: jax.Array
    epsilon_finish: jax.Array
    epsilon_decay_fraction: jax.Array  # of the run's updates
    reward_scale: jax.Array  # multiplies the extrinsic reward in the targets
    huber_delta: jax.Array
    intrinsic_reward_coef: jax.Array
    intrinsic_gamma: jax.Array
    extrinsic_coef: jax.Array  # weights of the two streams' Qs in the acting values
    intrinsic_coef: jax.Array


class Transition(NamedTuple):
    """One rollout step for every env; stacked by the rollout scan to [T, B, ...]."""

    obs: jax.Array  # [B, *obs_shape] what the network saw (normalised, if so configured)
    hidden: jax.Array  # [B, H] the network's hidden state before this step (H = 0: none)
    start: jax.Array  # [B] bool: obs is an episode's first observation
    action: jax.Array  # [B] int32, or [B, D] float32 (continuous; before any clipping)
    log_prob: jax.Array  # [B] log pi_old(action | obs)
    value: jax.Array  # [B, K] V_old(obs), one per reward stream
    reward: jax.Array  # [B]
    terminated: jax.Array  # [B] bool
    truncated: jax.Array  # [B] bool
    final_value: jax.Array  # [B, K] V_old(final_obs): the bootstrap on truncation
    episode: dict[str, jax.Array]  # per-episode results where the episode ended


class QTransition(NamedTuple):
    """One PQN rollout step for every env; stacked by the rollout scan to [T, B, ...].
    Values are per reward stream at the action the agent would take greedily."""

    obs: jax.Array  # [B, *obs_shape]
    hidden: jax.Array  # [B, H] the network's hidden state before this step
    start: jax.Array  # [B] bool: obs is an episode's first observation
    action: jax.Array  # [B] int32, epsilon-greedy
    value: jax.Array  # [B, K] Q_k(obs, a*), a* = argmax of the acting values
    reward: jax.Array  # [B]
    terminated: jax.Array  # [B] bool
    truncated: jax.Array  # [B] bool
    final_value: jax.Array  # [B, K] the same at final_obs: the bootstrap on truncation
    episode: dict[str, jax.Array]  # per-episode results where the episode ended


class QBatch(NamedTuple):
    """What PQN's update trains on; leading axes ``[*L]`` as for ``Batch``."""

    obs: jax.Array  # [*L, *obs_shape]
    hidden: jax.Array  # [*L, H]
    start: jax.Array  # [*L] bool
    action: jax.Array  # [*L]
    target: jax.Array  # [*L, K] Q(lambda) returns per stream


class Batch(NamedTuple):
    """What the update trains on. Leading axes ``[*L]``: ``[T, B]`` for the whole
    rollout; a minibatch is ``[N]`` single steps (feed-forward) or ``[T, N]`` whole
    env sequences (recurrent)."""

    obs: jax.Array  # [*L, *obs_shape]
    hidden: jax.Array  # [*L, H]
    start: jax.Array  # [*L] bool
    action: jax.Array  # [*L]
    log_prob: jax.Array  # [*L]
    value: jax.Array  # [*L, K]
    advantage: jax.Array  # [*L]: the streams' advantages, weighted and summed
    target: jax.Array  # [*L, K]


@struct.dataclass
class RunState:
    """One seed's whole training state between updates."""

    params: Any  # the network's parameters (an nnx.State)
    opt_state: Any  # optimiser state (optax)
    env_state: Any  # batched env state, episode statistics included
    obs: jax.Array  # [B, *obs_shape] current observations
    hidden: jax.Array  # [B, H] the network's hidden state (H = 0 for feed-forward)
    start: jax.Array  # [B] bool: obs is an episode's first observation
    key: jax.Array  # PRNG key for everything that follows
    update: jax.Array  # int32: updates done so far
    addon: Any  # the intrinsic add-on's state (empty for none)
    recent_returns: Any  # ReturnWindow: the last N episodes' returns (algos/return_window.py)
    # observation and reward statistics (algos/normalization.py); empty when unused
    normalizer: Any = ()


@struct.dataclass
class UpdateState:
    """What the epoch and minibatch scans carry."""

    params: Any
    opt_state: Any
    opt_step: jax.Array  # int32: optimiser steps done so far (for the lr schedule)
