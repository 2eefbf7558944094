"""Brax environments (``brax:ant``, ``brax:halfcheetah``, ...) as a VecEnv.

Optional: ``uv sync --extra brax``. ``env.kwargs`` takes ``backend`` (brax's
physics pipeline: ``spring``, ``positional``, ``generalized`` or ``mjx``; default
``spring``, the quickest to compile on CPU), ``episode_length`` (default 1000) and
the environment's own constructor arguments.

Brax episodes end by termination (e.g. Ant falling over) or by the time limit; the
limit is a truncation, bootstrapped like any other (``final_obs``). An ended env
restarts from the initial state drawn for it at ``reset`` (brax's own auto-reset
does the same: a fresh draw each time would cost a physics initialisation per env
per step). Actions are clipped to brax's bounds, [-1, 1].
"""

from __future__ import annotations

import contextlib
import functools
import io
import warnings
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from nnxrl.envs.base import EnvSpec, EnvStep, VecEnv

PREFIX = "brax:"
DEFAULT_BACKEND = "spring"


def brax_available() -> bool:
    """Whether brax is installed: imported here, once, quietly (``import_brax``)."""
    try:
        import_brax()
    except ImportError:
        return False
    return True


@functools.cache
def import_brax() -> None:
    """brax.envs imported without the lines its dependencies print: MuJoCo's optional
    GPU backend says ``Failed to import warp`` on stdout when it is absent, which it is
    without a GPU, and which no brax env of nnxrl's uses; brax's notice that it is not
    maintained (warned when an env is built) is hidden too. Every import of brax in
    nnxrl comes after this one."""
    with contextlib.redirect_stdout(io.StringIO()):
        import brax.envs  # noqa: F401
    warnings.filterwarnings("ignore", message="Brax System, piplines", category=UserWarning)


def brax_ids() -> list[str]:
    """``brax:<name>`` for every environment brax registers (none without brax)."""
    if not brax_available():
        return []
    from brax import envs

    return [PREFIX + name for name in sorted(envs._envs)]  # brax keeps its registry private


@struct.dataclass
class BraxVecState:
    state: Any  # brax.envs.State, batched
    first: Any  # the initial states ended envs restart from
    steps: jax.Array  # [B] steps into the current episode


def make_brax_env(
    env_id: str,
    num_envs: int,
    backend: str = DEFAULT_BACKEND,
    episode_length: int = 1000,
    **kwargs: Any,
) -> VecEnv:
    from brax import envs

    env = envs.get_environment(env_id.removeprefix(PREFIX), backend=backend, **kwargs)

    def reset(key: jax.Array) -> tuple[jax.Array, BraxVecState]:
        states = jax.vmap(env.reset)(jax.random.split(key, num_envs))
        return states.obs, BraxVecState(states, states, jnp.zeros(num_envs, jnp.int32))

    def step(key: jax.Array, s: BraxVecState, action: jax.Array) -> tuple[BraxVecState, EnvStep]:
        new = jax.vmap(env.step)(s.state, jnp.clip(action, -1.0, 1.0))
        steps = s.steps + 1
        terminated = new.done > 0.5
        truncated = jnp.logical_and(steps >= episode_length, ~terminated)
        ended = jnp.logical_or(terminated, truncated)

        def restart(first: jax.Array, current: jax.Array) -> jax.Array:
            return jnp.where(ended.reshape((-1,) + (1,) * (current.ndim - 1)), first, current)

        state = new.replace(
            pipeline_state=jax.tree.map(restart, s.first.pipeline_state, new.pipeline_state),
            obs=restart(s.first.obs, new.obs),
            done=jnp.zeros_like(new.done),
        )
        out = EnvStep(
            obs=state.obs.astype(jnp.float32),
            reward=new.reward.astype(jnp.float32),
            terminated=terminated,
            truncated=truncated,
            final_obs=new.obs.astype(jnp.float32),
            episode={},
        )
        return BraxVecState(state, s.first, jnp.where(ended, 0, steps)), out

    spec = EnvSpec(
        id=env_id,
        obs_shape=(env.observation_size,),
        num_actions=0,
        action_low=(-1.0,) * env.action_size,
        action_high=(1.0,) * env.action_size,
    )
    return VecEnv(spec=spec, num_envs=num_envs, reset=reset, step=step)
