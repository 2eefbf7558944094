"""POPGym Arcade's games (``popgym:CountRecallEasy``, ...) as a VecEnv.

Optional: ``uv sync --extra popgym``. Each game comes fully observable (the MDP, the
default) or partially observable (``env.kwargs: {partial_obs: true}``, the POMDP: the
frame hides what the agent must remember), so the two versions side by side measure
what a memory adds. Observations are RGB frames [128, 128, 3] (``obs_size: 256`` for
larger), scaled here to [0, 1]; every game has 5 actions.

The package drives its games through gymnax's ``Environment``, whose ``step`` of
gymnax 1.0 reads a ``time`` field these games' states lack, and it asks for
``stable-gymnax``, a fork that installs over gymnax's own files. nnxrl installs it
without that fork (``pyproject.toml``) and plays ``reset_env`` and ``step_env``,
resetting through ``from_single``. A game's own time limit is reported as a
truncation where the game says so (its ``info["truncated"]``), else every end is a
termination.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from nnxrl.envs.base import VecEnv
from nnxrl.envs.single import from_single

LEVELS = ("Easy", "Medium", "Hard")
OPTIONS = {"partial_obs": False, "obs_size": 128}


def ids() -> list[str]:
    """Every game at every level, as the package names them."""
    from popgym_arcade import environments

    return sorted(n for n in dir(environments) if n.endswith(LEVELS) and n[0].isupper())


def refusal(name: str) -> str | None:
    return None


def options(name: str) -> dict[str, Any]:
    return dict(OPTIONS)


def check(name: str, kwargs: dict) -> str | None:
    size = kwargs.get("obs_size", OPTIONS["obs_size"])
    if size not in (128, 256):
        return f"env.kwargs.obs_size: {size} is not one of POPGym Arcade's frame sizes: 128, 256"
    return None


def make(name: str, num_envs: int, **kwargs: Any) -> VecEnv:
    import popgym_arcade

    env, params = popgym_arcade.make(name, **kwargs)

    def reset_one(key: jax.Array):
        obs, state = env.reset_env(key, params)
        return frame(obs), state

    def step_one(key: jax.Array, state: Any, action: jax.Array):
        obs, state, reward, done, info = env.step_env(key, state, action, params)
        truncated = jnp.asarray(info.get("truncated", False), bool)
        return frame(obs), state, reward, jnp.logical_and(done, ~truncated), truncated

    obs = jax.eval_shape(lambda key: reset_one(key)[0], jax.eval_shape(jax.random.key, 0))
    return from_single("popgym:" + name, reset_one, step_one, tuple(obs.shape), 5, num_envs)


def frame(obs: jax.Array) -> jax.Array:
    """An RGB frame of uint8 as floats in [0, 1]."""
    return obs.astype(jnp.float32) / 255.0
