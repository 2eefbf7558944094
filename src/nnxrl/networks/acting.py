"""How a trained policy acts from each shipped head (``heads.py``): one step of the
network, then the distribution actions are drawn from, among the legal actions; and
the hidden state a model acts from while its parameters are fixed."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from nnxrl.networks.distributions import EpsilonGreedy, restrict
from nnxrl.networks.q_network import acting_values


def from_distribution(
    model: Any,
    hidden: Any,
    obs: jax.Array,
    start: jax.Array,
    legal: jax.Array | None,
    policy: Any,
) -> tuple[Any, Any]:
    """``actor_critic``: the actor's distribution over the legal actions."""
    hidden, dist, _ = model.step(hidden, obs, start)
    return hidden, restrict(dist, legal)


def epsilon_greedy_on_q(
    model: Any,
    hidden: Any,
    obs: jax.Array,
    start: jax.Array,
    legal: jax.Array | None,
    policy: Any,
) -> tuple[Any, Any]:
    """``q``: epsilon-greedy (``policy.epsilon``) on the streams' Qs weighted by
    ``policy.stream_weights``, among the legal actions."""
    hidden, q = model.step(hidden, obs, start)
    weights = jnp.asarray(policy.stream_weights, jnp.float32)
    return hidden, EpsilonGreedy(acting_values(q, weights), policy.epsilon, legal)


def acting_state(model: Any, hidden: Any) -> Any:
    """The state ``model`` acts from while its parameters stay fixed (a recurrent
    model's ``acting_state``: what its core caches meanwhile), else ``hidden``."""
    prepare = getattr(model, "acting_state", None)
    return hidden if prepare is None else prepare(hidden)


def carried_state(model: Any, hidden: Any) -> Any:
    """``acting_state`` undone: the state kept between rollouts."""
    drop = getattr(model, "carried_state", None)
    return hidden if drop is None else drop(hidden)
