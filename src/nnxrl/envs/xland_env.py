"""XLand-MiniGrid's MiniGrid environments (``xland:MiniGrid-Empty-5x5``, ...) as a VecEnv.

Optional: ``uv sync --extra xland``. ``env.kwargs`` are fields of the env's params:
``max_steps`` (the time limit) and ``view_size`` (the agent's field of view).

XLand-MiniGrid takes its params in every call: ``reset(params, key) -> timestep`` and
``step(params, timestep, action) -> timestep``. An episode ends at a ``LAST`` timestep,
a termination when its discount is 0 and the time limit (truncation, bootstrapped)
when it is 1. nnxrl resets ended envs itself. The ``XLand-MiniGrid-*`` envs take
their tasks (rulesets) from a benchmark file that is downloaded, and are refused:
nnxrl downloads nothing while it runs. XLand-MiniGrid has no action mask.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from nnxrl.envs.base import VecEnv
from nnxrl.envs.single import from_single

PARAMS = ("max_steps", "view_size")
LAST = 2  # xminigrid.types.StepType.LAST


def ids() -> list[str]:
    import xminigrid

    return sorted(i for i in xminigrid.registered_environments() if refusal(i) is None)


def refusal(name: str) -> str | None:
    if name.startswith("XLand-MiniGrid"):
        return (
            "takes its tasks from a benchmark of rulesets that must be downloaded "
            "(xminigrid.load_benchmark), which nnxrl does not do; use a MiniGrid-* id "
            "(e.g. xland:MiniGrid-Empty-5x5)"
        )
    return None


def options(name: str) -> dict[str, Any]:
    import xminigrid

    _, params = xminigrid.make(name)
    return {k: getattr(params, k) for k in PARAMS}


def frames(name: str, kwargs: dict[str, Any]) -> Callable[[Any, Any], np.ndarray]:
    """XLand-MiniGrid's own RGB renderer: the whole grid, the agent's view shaded."""
    import xminigrid

    env, params = xminigrid.make(name, **kwargs)
    params = params.replace(render_mode="rgb_array")
    return lambda timestep, obs: np.asarray(env.render(params, timestep), np.uint8)


def make(name: str, num_envs: int, **kwargs: Any) -> VecEnv:
    import xminigrid

    env, params = xminigrid.make(name, **kwargs)

    def reset_one(key: jax.Array):
        timestep = env.reset(params, key)
        return timestep.observation.astype(jnp.float32), timestep

    def step_one(key: jax.Array, timestep: Any, action: jax.Array):
        timestep = env.step(params, timestep, action)
        last = timestep.step_type == LAST
        terminated = jnp.logical_and(last, timestep.discount == 0)
        truncated = jnp.logical_and(last, timestep.discount > 0)
        return (
            timestep.observation.astype(jnp.float32),
            timestep,
            timestep.reward,
            terminated,
            truncated,
        )

    obs_shape = tuple(env.observation_shape(params))
    return from_single(
        "xland:" + name, reset_one, step_one, obs_shape, env.num_actions(params), num_envs
    )
