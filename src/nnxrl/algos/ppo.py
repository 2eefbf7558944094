"""Proximal policy optimisation (Schulman et al. 2017) over batched envs.

PPO is an actor-critic of the one on-policy skeleton (``algos/on_policy.py``: the
rollout, the add-on, normalisation, epochs of minibatches, metrics): it acts,
bootstraps and estimates advantages as every actor-critic does
(``algos/actor_critic.py``: sampling among the legal actions, GAE per reward
stream), and what is its own is here: the clipped surrogate loss ``ppo_loss`` and
the option of normalising advantages over the whole batch (``ppo_batch``; per
minibatch is done in the loss). Its settings are ``PPOSettings``
(``algos/settings.py``); the untraced ones are read as ``s.settings``, the traced
coefficients arrive as ``hp``.

Reward streams: with ``intrinsic.mode: reward`` there is one, r + c * b; with
``value_head`` there are two, r and c * b, each with its own critic output,
discount and (for the intrinsic one, optionally) no cut at episode ends, and the
policy follows the weighted sum of their advantages.
"""

from __future__ import annotations

from typing import Any

import jax

from nnxrl.algos.actor_critic import Batch, actor_critic, gae_batch, policy_and_value
from nnxrl.algos.hyperparams import hyperparams, hyperparams_type  # noqa: F401  (ppo.hyperparams)
from nnxrl.algos.on_policy import Algorithm, Transition, make_on_policy
from nnxrl.algos.settings import PPOSettings, RunFacts
from nnxrl.envs import VecEnv
from nnxrl.ops.losses import normalize, policy_loss, value_loss

# The traced coefficients: PPOSettings' fields declared traced, then the reward
# streams' (algos/hyperparams.py); ``hyperparams(settings, streams)`` gives them.
Hyperparams = hyperparams_type(PPOSettings)


def ppo_batch(
    trajectory: Transition, bonus: jax.Array, last_value: jax.Array, hp: Hyperparams, s: Any
) -> Batch:
    """The actor-critic batch (``gae_batch``), its advantages normalised over the
    whole batch when ``advantage_normalization: batch``."""
    batch = gae_batch(trajectory, bonus, last_value, hp, s)
    if s.settings.advantage_normalization == "batch":
        batch = batch._replace(advantage=normalize(batch.advantage))
    return batch


def ppo_loss(params: Any, minibatch: Batch, hp: Hyperparams, s: Any) -> tuple[jax.Array, dict]:
    """L = L_policy + c_v L_value - c_e H on one minibatch; returns (L, loss metrics)."""
    dist, value = policy_and_value(params, minibatch, s)
    log_prob = dist.log_prob(minibatch.action)
    advantage = minibatch.advantage
    if s.settings.advantage_normalization == "minibatch":
        advantage = normalize(advantage)
    pol, approx_kl, clip_fraction = policy_loss(
        log_prob, minibatch.log_prob, advantage, hp.clip_eps
    )
    clip = hp.value_clip_eps if s.settings.clip_value else None
    per_stream = jax.vmap(value_loss, in_axes=(-1, -1, -1, None))(
        value, minibatch.value, minibatch.target, clip
    )
    val = per_stream.sum()
    entropy = dist.entropy().mean()
    total = pol + hp.vf_coef * val - hp.ent_coef * entropy
    metrics = {
        "loss/total": total,
        "loss/policy": pol,
        "loss/value": val,
        "loss/entropy": entropy,
        "stats/approx_kl": approx_kl,
        "stats/clip_fraction": clip_fraction,
    }
    if per_stream.shape[0] == 2:
        metrics["loss/value_intrinsic"] = per_stream[1]
    return total, metrics


PPO = actor_critic(ppo_loss, prepare=ppo_batch)  # the skeleton's pieces


def make_ppo(settings: PPOSettings, env: VecEnv, run: RunFacts, **optional: Any) -> Algorithm:
    """PPO's init and update: its settings bound onto the skeleton with the env and the
    run's facts (``make_on_policy``; ``network=``, ``addon=``, ``streams=`` optional)."""
    return make_on_policy(PPO, settings, env, run, **optional)
