"""The env section of a config: which env and how many per seed (data only: it
imports no env suite, so reading a config builds no env)."""

from __future__ import annotations

from dataclasses import dataclass

from nnxrl.schema import setting as _field


@dataclass(frozen=True)
class EnvConfig:
    id: str = _field("CartPole-v1", "Environment id: any gymnax id or a Craftax id.")
    num_envs: int = _field(4, "Parallel environments per seed.", low=1)
    reset_ratio: int = _field(
        1,
        "Craftax optimistic reset: envs per freshly generated world each step "
        "(1 = every env resets on its own). Must divide num_envs.",
        low=1,
    )
    kwargs: dict = _field({}, "Keyword arguments for the environment constructor (gymnax).")
    previous_action_reward: bool = _field(
        False,
        "Append the previous step's action (one-hot if discrete) and reward to each "
        "observation, zeros at an episode's first step (envs/previous_step.py), so that "
        "a memory network sees what it did; flat observations only.",
    )
