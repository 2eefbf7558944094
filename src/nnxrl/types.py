"""The state containers every algorithm shares: data only, no logic. (The rollout's
``Transition`` is the skeleton's, ``algos/on_policy.py``; each algorithm's batch
lives beside it: ``actor_critic.Batch``, ``pqn.Batch``, ...)

Arrays are time-major: ``[T, B, ...]`` for a rollout of T steps over B envs.
``K`` is the number of reward streams a critic predicts: 1, or 2 when an intrinsic
reward has its own value head (extrinsic first).
``RunState`` is everything a run carries from one update to the next (one seed;
many seeds add a leading axis through vmap).
"""

from __future__ import annotations

from typing import Any

import jax
from flax import struct


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
    # a PBT member's traced coefficients, which change during the run (sweeps/pbt.py);
    # empty otherwise (the coefficients enter each update as an argument)
    hyperparams: Any = ()
    # an algorithm's own state beyond its network and optimiser: an off-policy one's
    # replay buffer and target network (algos/off_policy.py: Memory); empty otherwise
    memory: Any = ()


@struct.dataclass
class UpdateState:
    """What the epoch and minibatch scans carry."""

    params: Any
    opt_state: Any
    opt_step: jax.Array  # int32: optimiser steps done so far (for the lr schedule)
