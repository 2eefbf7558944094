"""Navix's MiniGrid environments (``navix:Navix-Empty-5x5-v0``, ...) as a VecEnv.

Optional: ``uv sync --extra navix``. ``env.kwargs``: ``max_steps`` (the time limit,
default 4 x height x width) and ``observation``, the name of one of Navix's
observation functions (``symbolic``, ``symbolic_first_person``, ``categorical``,
``categorical_first_person``, ``rgb``, ``rgb_first_person``; default: the env's own).

Navix's ``step(timestep, action)`` reports the step type: 0 a transition, 1 a
truncation (the time limit, bootstrapped), 2 a termination; it resets an ended
timestep on the step after, which nnxrl never hands it: nnxrl resets ended envs
itself, on the step that ended them. Navix has no action mask.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from nnxrl.envs.base import VecEnv
from nnxrl.envs.single import from_single

OBSERVATIONS = (
    "symbolic",
    "symbolic_first_person",
    "categorical",
    "categorical_first_person",
    "rgb",
    "rgb_first_person",
)
TRUNCATION, TERMINATION = 1, 2  # navix.environments.environment.StepType


def ids() -> list[str]:
    import navix

    return sorted(navix.registry())


def refusal(name: str) -> str | None:
    return None


def options(name: str) -> dict[str, Any]:
    import navix

    return {"max_steps": int(navix.make(name).max_steps), "observation": None}


def check(name: str, kwargs: dict[str, Any]) -> str | None:
    observation = kwargs.get("observation")
    if observation is not None and observation not in OBSERVATIONS:
        return f"env.kwargs.observation: {observation!r} is not one of {list(OBSERVATIONS)}"
    return None


def frames(name: str, kwargs: dict[str, Any]) -> Callable[[Any, Any], np.ndarray]:
    """Navix's own RGB rendering of the whole grid (its ``rgb`` observation)."""
    import navix

    draw = jax.jit(navix.observations.rgb)
    return lambda timestep, obs: np.asarray(draw(timestep.state), np.uint8)


def make(name: str, num_envs: int, observation: str | None = None, **kwargs: Any) -> VecEnv:
    import navix

    if observation is not None:
        kwargs["observation_fn"] = getattr(navix.observations, observation)
    env = navix.make(name, **kwargs)

    def reset_one(key: jax.Array):
        timestep = env.reset(key)
        return timestep.observation.astype(jnp.float32), timestep

    def step_one(key: jax.Array, timestep: Any, action: jax.Array):
        timestep = env.step(timestep, action)
        terminated = timestep.step_type == TERMINATION
        truncated = timestep.step_type == TRUNCATION
        return (
            timestep.observation.astype(jnp.float32),
            timestep,
            timestep.reward,
            terminated,
            truncated,
        )

    first = jax.eval_shape(env.reset, jax.eval_shape(jax.random.key, 0))
    num_actions = int(env.action_space.maximum) + 1
    return from_single(
        "navix:" + name, reset_one, step_one, first.observation.shape, num_actions, num_envs
    )
