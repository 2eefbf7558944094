"""Pgx's single-player games (``pgx:2048``) as a VecEnv.

Optional: ``uv sync --extra pgx``. Pgx games take no ``env.kwargs``.

A Pgx state carries everything: ``observation``, ``rewards`` (one per player),
``terminated``, ``truncated`` and ``legal_action_mask``, the env's legal actions.
``init(key)`` starts a game and ``step(state, action, key)`` plays a move (the key
draws 2048's new tile). Pgx does not reset itself; nnxrl does. Its two-player games
are refused (nnxrl trains single agents), and its MinAtar games, which need a
separate package, point to gymnax's own MinAtar envs.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from nnxrl.envs.base import VecEnv
from nnxrl.envs.single import from_single

SINGLE_PLAYER = ("2048",)


def ids() -> list[str]:
    return list(SINGLE_PLAYER)


def refusal(name: str) -> str | None:
    import pgx

    if name.startswith("minatar-"):
        game = "".join(w.capitalize() for w in name.removeprefix("minatar-").split("_"))
        return (
            f"needs Pgx's separate MinAtar package; train gymnax's own MinAtar envs "
            f"instead (env.id: {game}-MinAtar)"
        )
    if name in pgx.available_envs() and name not in SINGLE_PLAYER:
        return "is a two-player game; nnxrl trains single agents (Pgx: pgx:2048)"
    return None


def options(name: str) -> dict[str, Any]:
    return {}


def make(name: str, num_envs: int, **kwargs: Any) -> VecEnv:
    import pgx

    env = pgx.make(name, **kwargs)

    def reset_one(key: jax.Array):
        state = env.init(key)
        return state.observation.astype(jnp.float32), state

    def step_one(key: jax.Array, state: Any, action: jax.Array):
        state = env.step(state, action, key)
        obs = state.observation.astype(jnp.float32)
        return obs, state, state.rewards[0], state.terminated, state.truncated

    return from_single(
        "pgx:" + name,
        reset_one,
        step_one,
        tuple(env.observation_shape),
        int(env.num_actions),
        num_envs,
        action_mask_one=lambda state: state.legal_action_mask,
    )
