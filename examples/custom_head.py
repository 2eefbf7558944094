"""A head of your own: Boltzmann exploration on PQN's Q-network, registered as the
head ``boltzmann`` and trained as ``algo: pqn_boltzmann``:

    uv run nnxrl --plugin examples/custom_head.py train examples/boltzmann-cartpole.yaml
    uv run nnxrl --plugin examples/custom_head.py eval runs/boltzmann-cartpole

A head says what the network outputs and how a policy acts from it. This one builds
the network the ``q`` head builds (so every network kind that carries ``q`` carries
it, the recurrent ones too) and acts by sampling from softmax(Q / T) among the legal
actions (greedy when asked). PQN is kept but for how it acts in training, the same
softmax: its Q(lambda) targets, loss and checkpoints are unchanged, and eval, render
and export act through the head.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

import nnxrl
from nnxrl.algos import pqn
from nnxrl.networks import Categorical, acting_values, greedy_values
from nnxrl.networks.distributions import restrict

TEMPERATURE = 0.5  # of the softmax over Q, in training and in evaluation


def boltzmann(q: jax.Array, weights: jax.Array, legal: jax.Array | None) -> Categorical:
    """softmax(sum_k w_k Q_k / T) [B, A] over the legal actions."""
    return restrict(Categorical(acting_values(q, weights) / TEMPERATURE), legal)


def act(model: Any, hidden: Any, obs: jax.Array, start: jax.Array, legal: Any, key, plan):
    """Training: a sample of the softmax; the streams' values at the greedy action."""
    hidden, q = model.step(hidden, obs, start)
    action = boltzmann(q, plan.weights, legal).sample(key)
    return hidden, action, greedy_values(q, plan.weights, legal), {}


def acting(model: Any, hidden: Any, obs: jax.Array, start: jax.Array, legal: Any, policy):
    """A trained policy: the same softmax, with the policy's streams' weights."""
    hidden, q = model.step(hidden, obs, start)
    return hidden, boltzmann(q, jnp.asarray(policy.stream_weights, jnp.float32), legal)


def describe(policy: Any, greedy: bool) -> str:
    return "greedy" if greedy else f"Boltzmann (T={TEMPERATURE:g})"


def summary(trajectory: Any, batch: Any, plan: Any, s: Any) -> dict:
    """PQN's value metrics, without its (unused) epsilon."""
    return {
        "stats/q_greedy": trajectory.value[..., 0].mean(),
        "stats/target": batch.target[..., 0].mean(),
    }


nnxrl.register_head("boltzmann", acting, builds="q", describe=describe)
pieces = pqn.PQN._replace(head="boltzmann", act=act, metrics=summary)
nnxrl.register_algorithm("pqn_boltzmann", nnxrl.PQNSettings, pieces, discrete_only=True)
