"""The interface between learning algorithms and intrinsic-reward add-ons.

An algorithm calls an add-on at three fixed points and never needs to know which
one it holds:

    state  = addon.init(key)                      # networks, optimiser, memory (jittable)
    ... collect a rollout ...
    state, bonus [T, B], metrics = addon.reward(state, experience)
    state, metrics = addon.update(state, experience, key)

``reward`` comes first, so the bonus is computed by the model that has not yet
trained on the batch. ``state`` is the add-on's own pytree (networks, optimiser,
per-env memory such as E3B's inverse covariances); the algorithm carries it in its
run state untouched. Metrics are fixed-shape scalars named ``intrinsic/<name>_*``.

The default, ``no_bonus``, has an empty state and returns zeros, so an algorithm
has no ``if addon`` branches. Add-ons never import an algorithm.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from nnxrl.schema import build_section


class Experience(NamedTuple):
    """A rollout as an add-on sees it (time-major; T steps of B envs).

    ``obs[t + 1]`` is the observation step t led to, except where ``episode_end[t]``:
    there it is already the first observation of the next episode.
    """

    obs: jax.Array  # [T + 1, B, *obs_shape]: the rollout's observations, then the next one
    action: jax.Array  # [T, B] int32, or [T, B, D] float32 for continuous actions
    episode_end: jax.Array  # [T, B] bool: step t ended an episode (terminated or truncated)
    # the intrinsic stream's discount (intrinsic.gamma), traced: a sweep may vary it
    gamma: jax.Array | float = 0.99

    @property
    def next_obs(self) -> jax.Array:
        """[T, B, *obs_shape]"""
        return self.obs[1:]


@dataclass(frozen=True)
class AddonContext:
    """What every add-on may know about the run it is part of."""

    obs_shape: tuple[int, ...]
    num_actions: int
    num_envs: int
    learning_rate: float
    adam_eps: float
    max_grad_norm: float
    num_epochs: int
    num_minibatches: int
    action_dim: int = 0  # continuous actions: their dimension D (0: num_actions discrete)


class Addon(NamedTuple):
    """An add-on's four pure functions, its configuration already bound."""

    init: Callable[[jax.Array], Any]  # key -> state (jittable, vmappable over keys)
    reward: Callable[[Any, Experience], tuple[Any, jax.Array, dict]]
    update: Callable[[Any, Experience, jax.Array], tuple[Any, dict]]


# --------------------------------------------------------------------------------------
# The no-bonus default
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NoOptions:
    """``none`` takes no options."""


def no_bonus(options: NoOptions, context: AddonContext) -> Addon:
    """Intrinsic reward 0 everywhere; nothing to learn."""

    def reward(state: Any, experience: Experience) -> tuple[Any, jax.Array, dict]:
        return state, jnp.zeros(experience.episode_end.shape, jnp.float32), {}

    return Addon(
        init=lambda key: (),
        reward=reward,
        update=lambda state, experience, key: (state, {}),
    )


# --------------------------------------------------------------------------------------
# Registry: config name -> (options class, factory)
# --------------------------------------------------------------------------------------


class Registration(NamedTuple):
    options: type  # a frozen dataclass whose fields are the add-on's config options
    factory: Callable[[Any, AddonContext], Addon]


_REGISTRY: dict[str, Registration] = {"none": Registration(NoOptions, no_bonus)}


def register(name: str, options: type, factory: Callable[[Any, AddonContext], Addon]) -> None:
    """Make an add-on available as ``intrinsic.addon: <name>``. ``options`` is a frozen
    dataclass (fields made with ``nnxrl.config.setting``); ``factory(options, context)``
    returns the Addon."""
    _REGISTRY[name] = Registration(options, factory)


def known_addons() -> list[str]:
    return list(_REGISTRY)


def registration(name: str) -> Registration:
    """The registration of add-on ``name`` (a name the config check accepted)."""
    return _REGISTRY[name]


def addon_options(name: str, options: dict) -> Any:
    """The add-on's options object from the config's ``intrinsic.options`` mapping."""
    return build_section(_REGISTRY[name].options, options, "intrinsic.options.")


def make_addon(name: str, options: dict, context: AddonContext) -> Addon:
    registration = _REGISTRY[name]
    return registration.factory(addon_options(name, options), context)
