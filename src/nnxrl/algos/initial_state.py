"""The run state before the first update, for every algorithm."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from nnxrl.algos.return_window import empty_window
from nnxrl.envs import VecEnv
from nnxrl.intrinsic.base import Addon
from nnxrl.types import RunState


def initial_run_state(
    key: jax.Array,
    network: Any,
    env: VecEnv,
    tx: optax.GradientTransformation,
    addon: Addon,
    return_window: int,
    normalizer: Any = (),
) -> RunState:
    """Fresh optimiser, envs and add-on around ``network`` (built by the caller from
    ``fold_in(key, 0)``), an empty window of the last ``return_window`` episode
    returns, the ``normalizer`` (``algos/normalization.py``; () for none): jittable, and
    vmappable over keys for many seeds."""
    params = nnx.state(network)
    env_key, _, run_key = jax.random.split(jax.random.fold_in(key, 1), 3)
    obs, env_state = env.reset(env_key)
    return RunState(
        params=params,
        opt_state=tx.init(params),
        env_state=env_state,
        obs=obs,
        hidden=network.initial_hidden(env.num_envs),
        start=jnp.ones(env.num_envs, bool),
        key=run_key,
        update=jnp.int32(0),
        addon=addon.init(jax.random.fold_in(key, 2)),
        recent_returns=empty_window(return_window),
        normalizer=normalizer,
    )
