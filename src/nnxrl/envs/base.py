"""The batched-environment interface every algorithm sees.

An env here is always a batch of ``num_envs`` copies that reset themselves: ``reset``
gives the first observations, ``step`` advances all copies one step and starts new
episodes where old ones ended. Each backend (gymnax, Craftax) builds one, and
``EpisodeStatistics`` wraps any of them.

An env may forbid actions: its ``action_mask(state)`` gives the legal actions of the
observation the state is at, ``[B, A]`` bool, and every policy then acts among them
(``networks/distributions.py``); an env without one has ``action_mask = None``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax


class EnvSpec(NamedTuple):
    """Static facts about an environment."""

    id: str
    obs_shape: tuple[int, ...]
    num_actions: int  # discrete actions (0 for a continuous action space)
    # Names of per-episode success flags reported at episode end (Craftax achievements).
    achievement_names: tuple[str, ...] = ()
    # XLA options the env's programs are compiled with on CPU, as (name, value) pairs.
    cpu_options: tuple[tuple[str, str], ...] = ()
    # continuous actions: each action is a [D] vector within these bounds (D = their
    # length); both empty for discrete actions
    action_low: tuple[float, ...] = ()
    action_high: tuple[float, ...] = ()

    @property
    def continuous(self) -> bool:
        return bool(self.action_low)

    @property
    def action_dim(self) -> int:
        """D for continuous actions, 0 for discrete."""
        return len(self.action_low)


class EnvStep(NamedTuple):
    """One batched step. Shapes are ``[B, ...]`` with ``B = num_envs``.

    ``obs`` already belongs to the next episode where ``terminated | truncated``;
    ``final_obs`` is the observation the ended episode reached (equal to ``obs``
    elsewhere), used to bootstrap through time limits.
    """

    obs: jax.Array  # [B, *obs_shape]
    reward: jax.Array  # [B]
    terminated: jax.Array  # [B] bool: a true end; no bootstrap
    truncated: jax.Array  # [B] bool: a time limit; bootstrap from final_obs
    final_obs: jax.Array  # [B, *obs_shape]
    # Per-episode results, meaningful where the episode ended: returns, lengths,
    # and e.g. achievements [B, A]. Filled by EpisodeStatistics and backends.
    episode: dict[str, jax.Array]
    # the legal actions at final_obs, [B, A] bool (None: the env has no mask): a Q
    # bootstrap through a time limit maximises over them
    final_action_mask: jax.Array | None = None


@dataclass(frozen=True)
class VecEnv:
    """A batch of self-resetting environments as two pure functions.

    reset(key) -> (obs [B, *obs_shape], state)
    step(key, state, action [B] (discrete) or [B, D] (continuous)) -> (state, EnvStep)
    action_mask(state) -> [B, A] bool, the legal actions at the state's observations
        (None: every action is always legal)
    """

    spec: EnvSpec
    num_envs: int
    reset: Callable[[jax.Array], tuple[jax.Array, Any]]
    step: Callable[[jax.Array, Any, jax.Array], tuple[Any, EnvStep]]
    action_mask: Callable[[Any], jax.Array] | None = None


def legal_actions(env: VecEnv, state: Any) -> jax.Array | None:
    """``env``'s legal actions at ``state``, [B, A] bool, or None where it has no mask."""
    return None if env.action_mask is None else env.action_mask(state)
