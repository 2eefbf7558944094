"""An algorithm of your own, trained from YAML through the CLI: advantage actor-critic
(A2C; Mnih et al. 2016, the synchronous variant), registered as ``algo: a2c``:

    uv run nnxrl --plugin examples/custom_algorithm.py train examples/a2c-cartpole.yaml

A2C is an actor-critic of the on-policy skeleton with a plain policy gradient: one
gradient step on the whole rollout, no ratio or value clipping. The skeleton owns the
rollout, the add-ons, epochs, the guard and the metrics; ``nnxrl.actor_critic`` adds
sampling among legal actions and GAE; what is A2C's own is its settings and its loss.
Add-ons, sweeps over ``traced`` settings, resume, eval and export work unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax

import nnxrl

setting = nnxrl.setting


@dataclass(frozen=True)
class A2CSettings(nnxrl.OnPolicySettings):
    """The ``a2c`` section of a config: the skeleton's settings (rollout, epochs,
    minibatches, optimiser), at A2C's defaults, and A2C's own."""

    num_steps: int = setting(16, "Rollout length per env per update.", low=1)
    num_epochs: int = setting(1, "Passes over each rollout (A2C: one).", low=1)
    num_minibatches: int = setting(1, "Gradient steps per pass (A2C: one).", low=1)
    learning_rate: float = setting(7e-4, "Adam step size.", low=0, low_open=True, traced=True)
    gamma: float = setting(0.99, "Discount factor.", low=0, high=1, traced=True)
    gae_lambda: float = setting(1.0, "GAE lambda (1: n-step returns).", low=0, high=1, traced=True)
    ent_coef: float = setting(0.01, "Entropy bonus coefficient.", low=0, traced=True)
    vf_coef: float = setting(0.5, "Value loss coefficient.", low=0, traced=True)


def a2c_loss(params: Any, minibatch: Any, hp: Any, s: Any) -> tuple[jax.Array, dict]:
    """L = -E[log pi(a|s) A] + c_v E[(V - G)^2] / 2 - c_e H, summed over reward streams."""
    dist, value = nnxrl.policy_and_value(params, minibatch, s)  # among the legal actions
    policy = -(dist.log_prob(minibatch.action) * minibatch.advantage).mean()
    values = 0.5 * ((value - minibatch.target) ** 2).mean(axis=tuple(range(value.ndim - 1))).sum()
    entropy = dist.entropy().mean()
    total = policy + hp.vf_coef * values - hp.ent_coef * entropy
    return total, {
        "loss/total": total,
        "loss/policy": policy,
        "loss/value": values,
        "loss/entropy": entropy,
    }


nnxrl.register_algorithm("a2c", A2CSettings, nnxrl.actor_critic(a2c_loss))
