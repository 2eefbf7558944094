"""gymnax environments as a VecEnv (gymnax >= 1.0 resets itself and splits
terminated from truncated, returning the final observation in ``info``)."""

from __future__ import annotations

import dataclasses
import inspect
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from nnxrl.envs.base import EnvSpec, EnvStep, VecEnv
from nnxrl.envs.plotting_imports import deferred_plotting
from nnxrl.hints import did_you_mean


def import_gymnax() -> Any:
    """gymnax, its module-level plotting imports deferred to their first use
    (``plotting_imports.py``: they are most of its import time)."""
    deferred_plotting()
    import gymnax

    return gymnax


def gymnax_ids() -> list[str]:
    return list(import_gymnax().registered_envs)


def split_kwargs(env_id: str, kwargs: dict) -> tuple[dict, dict]:
    """``env.kwargs`` -> (constructor arguments, EnvParams fields to replace).

    A gymnax env takes some options in its constructor (DeepSea's ``size``) and the
    rest as fields of its EnvParams (``max_steps_in_episode``). Raises ValueError
    naming ``env.kwargs.<key>`` for an unknown option or a value of the wrong type."""
    gymnax = import_gymnax()

    env, params = gymnax.make(env_id)
    constructor = {
        name: p.default
        for name, p in inspect.signature(type(env).__init__).parameters.items()
        if name != "self"
    }
    fields = {f.name: getattr(params, f.name) for f in dataclasses.fields(params)}
    ctor_kwargs, param_kwargs = {}, {}
    for name, value in kwargs.items():
        if name in constructor:
            default, target = constructor[name], ctor_kwargs
        elif name in fields:
            default, target = fields[name], param_kwargs
        else:
            known = sorted({*constructor, *fields})
            close = did_you_mean(name, known)
            hint = f"; {close}" if close else ""
            raise ValueError(
                f"env.kwargs.{name}: {env_id} has no option {name!r}{hint}. Its options: {known}"
            )
        check_kind(f"env.kwargs.{name}", value, default)
        target[name] = value
    return ctor_kwargs, param_kwargs


def check_kind(key: str, value, default) -> None:
    """``value`` must be of the kind of ``default`` (bool, int or number); None: any."""
    if default is None or isinstance(default, jax.Array):
        return
    if isinstance(default, bool):
        ok, kind = isinstance(value, bool), "true or false"
    elif isinstance(default, int):
        ok, kind = isinstance(value, int) and not isinstance(value, bool), "an integer"
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        ok, kind = ok and math.isfinite(value), "a finite number"
    else:
        return
    if not ok:
        raise ValueError(f"{key}: expected {kind} (default {default!r}), got {value!r}")
    if type(default) is int and default > 0 and value < 1:  # a count or a size
        raise ValueError(f"{key}: {value} must be at least 1 (default {default!r})")


def make_gymnax_env(env_id: str, num_envs: int, **kwargs) -> VecEnv:
    gymnax = import_gymnax()

    ctor_kwargs, param_kwargs = split_kwargs(env_id, kwargs)
    env, params = gymnax.make(env_id, **ctor_kwargs)
    params = params.replace(**param_kwargs)
    action_space = env.action_space(params)
    low, high = action_bounds(action_space)
    # the reset's shape, not env.observation_space(params): building the space runs
    # (and compiles) small array ops, and nothing should compile before the programs
    key = jax.eval_shape(jax.random.key, 0)
    obs_shape = tuple(jax.eval_shape(lambda k: env.reset(k, params)[0], key).shape)

    def reset(key: jax.Array):
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(key, num_envs), params)
        return obs.astype(jnp.float32), state

    def step(key: jax.Array, state, action: jax.Array):
        if low:  # continuous: the policy's sample, clipped to the bounds when stepping
            action = jnp.clip(action, jnp.asarray(low), jnp.asarray(high))
        obs, state, reward, terminated, truncated, info = jax.vmap(
            env.step, in_axes=(0, 0, 0, None)
        )(jax.random.split(key, num_envs), state, action, params)
        return state, EnvStep(
            obs=obs.astype(jnp.float32),
            reward=reward.reshape(num_envs).astype(jnp.float32),  # Pendulum: [B, 1]
            terminated=terminated.astype(bool),
            truncated=jnp.logical_and(truncated, ~terminated),
            final_obs=info["final_observation"].astype(jnp.float32),
            episode={},
        )

    spec = EnvSpec(
        id=env_id,
        obs_shape=obs_shape,
        num_actions=int(action_space.n) if not low else 0,
        action_low=low,
        action_high=high,
    )
    return VecEnv(spec=spec, num_envs=num_envs, reset=reset, step=step)


def action_bounds(action_space) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """A Box space's per-dimension bounds as (low, high) tuples; ((), ()) for Discrete."""
    spaces = import_gymnax().environments.spaces

    if isinstance(action_space, spaces.Discrete):
        return (), ()
    shape = tuple(action_space.shape) or (1,)
    low = np.broadcast_to(np.asarray(action_space.low, np.float64), shape).reshape(-1)
    high = np.broadcast_to(np.asarray(action_space.high, np.float64), shape).reshape(-1)
    return tuple(float(x) for x in low), tuple(float(x) for x in high)
