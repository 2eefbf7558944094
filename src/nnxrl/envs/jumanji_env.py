"""Jumanji environments (``jumanji:Snake-v1``, ``jumanji:Game2048-v1``, ...) as a VecEnv.

Optional: ``uv sync --extra jumanji``. ``env.kwargs`` are the env's constructor
arguments (Snake's ``num_rows``, ``time_limit``, ...).

Jumanji is dm_env-like: ``reset(key) -> (state, timestep)``, ``step(state, action) ->
(state, timestep)``, and an episode ends at a ``LAST`` timestep, a termination when
its discount is 0 and a truncation (bootstrapped) when it is not. Most Jumanji envs
(Snake, Maze, ...) end their episodes at their ``time_limit`` with a discount of 0,
as if the state were terminal; nnxrl reports an episode that ends where the state's
``step_count`` reaches the env's ``time_limit`` as truncated, so that it is
bootstrapped (one that reaches a terminal state on that very step is then
bootstrapped too: Jumanji does not say which it was). Its
observation is a named tuple: the ``action_mask`` field becomes the env's legal
actions, and the other fields are the observation, flattened and concatenated in
their order (one field keeps its shape). Scalar ``extras`` (Game2048's
``highest_tile``) are reported per episode. Only single discrete actions are
supported: an env with a multi-discrete action space is refused.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from nnxrl.envs.base import VecEnv
from nnxrl.envs.single import from_single

MASK_FIELD = "action_mask"


def ids() -> list[str]:
    import jumanji

    return sorted(jumanji.registered_environments())


def refusal(name: str) -> str | None:
    import jumanji
    from jumanji import specs

    if name not in jumanji.registered_environments():
        return None
    action_spec = jumanji.make(name).action_spec
    if not isinstance(action_spec, specs.DiscreteArray):
        return (
            f"has a {type(action_spec).__name__} action space; nnxrl's Jumanji adapter takes "
            "envs with one discrete action (Snake-v1, Game2048-v1, Maze-v0, ...)"
        )
    return None


def options(name: str) -> dict[str, Any]:
    import jumanji

    signature = inspect.signature(type(jumanji.make(name)).__init__)
    return {k: p.default for k, p in signature.parameters.items() if k != "self"}


def frames(name: str, kwargs: dict[str, Any]) -> Callable[[Any, Any], np.ndarray]:
    """The env's own Matplotlib viewer, switched to drawing into an array."""
    import jumanji
    from jumanji.viewer import MatplotlibViewer

    env = jumanji.make(name, **kwargs)
    viewer = getattr(env, "_viewer", None)
    if not isinstance(viewer, MatplotlibViewer):
        raise ValueError(f"nnxrl render: jumanji:{name} has no Matplotlib viewer to draw with")
    viewer = type(viewer)(render_mode="rgb_array")

    def draw(carry: Any, obs: Any) -> np.ndarray:
        frame = np.asarray(viewer.render(carry[0]), np.uint8)[..., :3]
        step = max(1, frame.shape[0] // 256)  # its 10-inch figure, to about 256 pixels
        return np.ascontiguousarray(frame[::step, ::step])

    return draw


def make(name: str, num_envs: int, **kwargs: Any) -> VecEnv:
    import jumanji
    from jumanji.types import StepType

    env = jumanji.make(name, **kwargs)
    _, first = jax.eval_shape(env.reset, jax.eval_shape(jax.random.key, 0))
    fields = [f for f in first.observation._fields if f != MASK_FIELD]
    masked = MASK_FIELD in first.observation._fields
    scores = [k for k, v in first.extras.items() if v.shape == ()]

    def observe(observation: Any) -> jax.Array:
        parts = [jnp.asarray(getattr(observation, f), jnp.float32) for f in fields]
        return parts[0] if len(parts) == 1 else jnp.concatenate([p.reshape(-1) for p in parts])

    def reset_one(key: jax.Array):
        state, timestep = env.reset(key)
        return observe(timestep.observation), (state, timestep)

    time_limit = getattr(env, "time_limit", None)

    def step_one(key: jax.Array, carry: Any, action: jax.Array):
        state, timestep = env.step(carry[0], action)
        last = timestep.step_type == StepType.LAST
        cut = timestep.discount > 0
        if time_limit is not None and hasattr(state, "step_count"):
            cut = jnp.logical_or(cut, state.step_count >= time_limit)
        terminated = jnp.logical_and(last, ~cut)
        truncated = jnp.logical_and(last, cut)
        return (
            observe(timestep.observation),
            (state, timestep),
            timestep.reward,
            terminated,
            truncated,
        )

    obs_shape = jax.eval_shape(observe, first.observation).shape
    return from_single(
        "jumanji:" + name,
        reset_one,
        step_one,
        obs_shape,
        int(env.action_spec.num_values),
        num_envs,
        action_mask_one=(lambda carry: carry[1].observation.action_mask) if masked else None,
        episode_info_one=lambda carry: {k: carry[1].extras[k] for k in scores},
    )
