"""The env section of a config: which env and how many per seed (data only: it
imports no env suite, so reading a config builds no env)."""

from __future__ import annotations

from dataclasses import dataclass

from nnxrl.schema import ConfigError
from nnxrl.schema import setting as _field


@dataclass(frozen=True)
class EnvConfig:
    id: str = _field(
        "CartPole-v1",
        "Environment id: a gymnax id, a Craftax id, brax:<name>, an id of another JAX "
        "suite (jumanji:<name>, xland:<name>, navix:<name>, pgx:<name>, each an optional "
        "extra), one of nnxrl's memory tasks or a registered env (`nnxrl configs` lists "
        "the suites).",
    )
    num_envs: int = _field(4, "Parallel environments per seed.", low=1)
    reset_ratio: int = _field(
        1,
        "Craftax optimistic reset: envs per freshly generated world each step "
        "(1 = every env resets on its own). Must divide num_envs.",
        low=1,
    )
    kwargs: dict = _field(
        {},
        "The env's own options, checked by name: a gymnax env's constructor arguments "
        "and params, Brax's backend and episode_length, a suite's (e.g. Jumanji's "
        "time_limit, Navix's and XLand-MiniGrid's max_steps).",
    )
    previous_action_reward: bool = _field(
        False,
        "Append the previous step's action (one-hot if discrete) and reward to each "
        "observation, zeros at an episode's first step (envs/previous_step.py), so that "
        "a memory network sees what it did; flat observations only.",
    )

    def check_section(self, where: str) -> None:
        """The checks between this section's own keys (``schema.build`` runs them)."""
        if self.num_envs % self.reset_ratio:
            raise ConfigError(
                f"{where}.reset_ratio: {self.reset_ratio} does not divide {where}.num_envs="
                f"{self.num_envs}; choose a divisor of num_envs"
            )
