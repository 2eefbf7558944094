"""An algorithm of your own, trained from YAML through the CLI: advantage actor-critic
(A2C; Mnih et al. 2016, the synchronous variant), registered as ``algo: a2c``:

    uv run nnxrl --plugin examples/custom_algorithm.py train examples/a2c-cartpole.yaml
    uv run nnxrl --plugin examples/custom_algorithm.py train examples/a2c-cartpole.yaml \
        --set intrinsic.addon=rnd

A2C is PPO's rollout and advantages with a plain policy gradient: one gradient step
on the whole rollout (no ratio clipping, no value clipping, no epochs). So it is
built on the shared on-policy skeleton (``nnxrl.algos.on_policy``: the static
settings, the add-on's scoring, the epochs of ``nnxrl.algos.sgd``, the shared
metrics) and PPO's phases (``collect_rollout``, ``compute_advantages``,
``make_batch``, ``init``); what is A2C's own is its settings and its loss. Any
add-on (``intrinsic.addon``) works unchanged, as do sweeps over the fields declared
``traced``, checkpoints, resume, eval and export.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
from flax import nnx

import nnxrl
from nnxrl.algos import ppo, sgd
from nnxrl.algos.on_policy import (
    advance,
    bind_static,
    epochs_start,
    score_with_addon,
    shared_metrics,
    starting_hidden,
)
from nnxrl.types import RunState

setting = nnxrl.setting


@dataclass(frozen=True)
class A2CSettings:
    """The ``a2c`` section of a config."""

    num_steps: int = setting(16, "Rollout length per env per update.", low=1)
    num_epochs: int = setting(1, "Passes over each rollout (A2C: one).", low=1)
    num_minibatches: int = setting(1, "Gradient steps per pass (A2C: one).", low=1)
    learning_rate: float = setting(7e-4, "Adam step size.", low=0, low_open=True, traced=True)
    anneal_lr: bool = setting(True, "Anneal the step size linearly to zero.")
    adam_eps: float = setting(1e-5, "Adam epsilon.", low=0, low_open=True)
    gamma: float = setting(0.99, "Discount factor.", low=0, high=1, traced=True)
    gae_lambda: float = setting(1.0, "GAE lambda (1: n-step returns).", low=0, high=1, traced=True)
    ent_coef: float = setting(0.01, "Entropy bonus coefficient.", low=0, traced=True)
    vf_coef: float = setting(0.5, "Value loss coefficient.", low=0, traced=True)
    max_grad_norm: float = setting(0.5, "Gradient-norm clip.", low=0, low_open=True, traced=True)


def train_update(run_state: RunState, hp: Any, *, s: ppo.PPOStatic) -> tuple[RunState, dict]:
    """One A2C iteration: collect, let the add-on score and learn from the rollout,
    estimate advantages (GAE per reward stream), step on ``a2c_loss``, summarise."""
    run_state, trajectory, last_value, _ = ppo.collect_rollout(run_state, s)
    key, addon_key, epoch_key = jax.random.split(run_state.key, 3)
    addon_state, bonus, addon_metrics = score_with_addon(
        run_state.addon, trajectory, run_state.obs, hp, addon_key, s
    )
    advantages, targets = ppo.compute_advantages(trajectory, bonus, last_value, hp, s)
    batch = ppo.make_batch(trajectory, advantages, targets, s)
    start = epochs_start(run_state, s)
    update_state, loss_metrics = sgd.update_epochs(start, batch, epoch_key, hp, s, a2c_loss)
    run_state = advance(run_state, update_state, key, addon_state, trajectory)
    metrics = shared_metrics(
        trajectory, bonus, run_state.recent_returns, loss_metrics, addon_metrics, s
    )
    return run_state, metrics


def a2c_loss(
    params: Any, minibatch: ppo.Batch, hp: Any, s: ppo.PPOStatic
) -> tuple[jax.Array, dict]:
    """L = -E[log pi(a|s) A] + c_v E[(V - G)^2] / 2 - c_e H, summed over reward streams."""
    model = nnx.merge(s.graphdef, params)
    dist, value = model.unroll(starting_hidden(minibatch), minibatch.obs, minibatch.start)
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


def make_a2c(settings: A2CSettings, env, run, network=None, addon=None, streams=None) -> ppo.PPO:
    """Bind A2C's settings onto the phases: PPO's static settings with its own
    options off (no value clipping, advantages as they are, no normalisation)."""
    s = bind_static(
        ppo.PPOStatic,
        settings,
        env,
        run,
        network,
        addon,
        streams,
        head="actor_critic",
        clip_value=False,
        advantage_normalization="none",
        normalize_obs=False,
        normalize_reward=False,
        obs_clip=10.0,
        reward_clip=10.0,
    )
    return ppo.PPO(
        init=partial(ppo.init, s=s), update=partial(train_update, s=s), graphdef=s.graphdef
    )


nnxrl.register_algorithm("a2c", A2CSettings, make_a2c)
