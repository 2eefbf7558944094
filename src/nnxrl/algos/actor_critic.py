"""The pieces every actor-critic algorithm of the on-policy skeleton shares
(``algos/on_policy.py``): PPO and the A2C of ``examples/custom_algorithm.py`` differ
only in their loss (and PPO in an option of its targets).

- ``act``: sample from the policy among the env's legal actions, keeping the
  log-probability and the legal mask for the loss;
- ``bootstrap``, ``bootstrap_all``: the critic's value of an observation;
- ``gae_batch``: advantages and value targets by GAE per reward stream, the batch;
- ``policy_and_value``: what a loss evaluates on a minibatch, the policy already
  restricted to the legal actions (so no loss forgets the mask);
- ``explained_variance``: the critic's metric;
- ``actor_critic(loss)``: the pieces with that loss, ready to register.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from flax import nnx

from nnxrl.algos.intrinsic_streams import combine_rewards
from nnxrl.algos.on_policy import OnPolicy, Transition, per_stream, starting_hidden
from nnxrl.algos.sgd import Loss
from nnxrl.networks.distributions import restrict
from nnxrl.ops.gae import continuing_gae, episodic_gae


class Batch(NamedTuple):
    """What an actor-critic trains on. Leading axes ``[*L]``: ``[T, B]`` for the whole
    rollout; a minibatch is ``[N]`` single steps (feed-forward) or ``[T, N]`` whole
    env sequences (recurrent)."""

    obs: jax.Array  # [*L, *obs_shape]
    hidden: jax.Array | None  # [1, N, S]: each sequence's starting state (None: feed-forward)
    start: jax.Array  # [*L] bool
    action: jax.Array  # [*L]
    log_prob: jax.Array  # [*L] log pi_old(action | obs)
    value: jax.Array  # [*L, K] V_old(obs)
    advantage: jax.Array  # [*L]: the streams' advantages, weighted and summed
    target: jax.Array  # [*L, K]
    legal: jax.Array | None = None  # [*L, A] bool: the policy's support (None: no mask)


def act(
    model: Any,
    hidden: Any,
    obs: jax.Array,
    start: jax.Array,
    legal: jax.Array | None,
    key: jax.Array,
    plan: Any,
) -> tuple[Any, jax.Array, jax.Array, dict]:
    """Sample a ~ pi(. | obs) among the legal actions: (hidden, a [B, ...], V(obs)
    [B, K], the log-probability and legal mask to keep)."""
    hidden, dist, value = model.step(hidden, obs, start)
    dist = restrict(dist, legal)
    action = dist.sample(key)
    return hidden, action, value, {"log_prob": dist.log_prob(action), "legal": legal}


def bootstrap(
    model: Any, hidden: Any, obs: jax.Array, start: jax.Array, legal: Any, plan: Any
) -> jax.Array:
    """V(obs) [B, K], one step from ``hidden``."""
    return model.step(hidden, obs, start)[2]


def bootstrap_all(model: Any, obs: jax.Array, legal: Any, plan: Any) -> jax.Array:
    """V(obs) [T, B, K] of a feed-forward critic, every step at once (no actor pass)."""
    return model.value(obs)


def gae_batch(
    trajectory: Transition, bonus: jax.Array, last_value: jax.Array, hp: Any, s: Any
) -> Batch:
    """The batch [T, B, ...]: advantages [T, B] the policy follows (GAE per reward
    stream, ``combine_rewards``; the streams' advantages weighted and summed) and
    value targets [T, B, K]."""
    rewards = combine_rewards(
        trajectory.reward, bonus, hp.intrinsic_reward_coef, num_streams=s.num_streams
    )
    stream_advantages, targets = gae_per_stream(trajectory, rewards, last_value, hp, s.episodic)
    return Batch(
        obs=trajectory.obs,
        hidden=trajectory.hidden,
        start=trajectory.start,
        action=trajectory.action,
        log_prob=trajectory.record["log_prob"],
        value=trajectory.value,
        advantage=weigh_advantages(stream_advantages, hp),
        target=targets,
        legal=trajectory.record["legal"],
    )


def gae_per_stream(
    trajectory: Transition,
    rewards: jax.Array,
    last_value: jax.Array,
    hp: Any,
    episodic: tuple[bool, ...],
) -> tuple[jax.Array, jax.Array]:
    """GAE per reward stream: rewards [T, B, K], last_value [B, K] -> advantages and
    value targets, [T, B, K] each. Stream 0 (extrinsic) cuts at true ends and
    bootstraps through time limits; stream 1 (intrinsic) uses its own discount and,
    when not episodic, runs on through episode ends, bootstrapped with its own value."""
    gammas = (hp.gamma, hp.intrinsic_gamma)
    results = per_stream(
        episodic_gae,
        continuing_gae,
        trajectory,
        rewards,
        last_value,
        gammas,
        hp.gae_lambda,
        episodic,
    )
    advantages, targets = zip(*results, strict=True)
    return jnp.stack(advantages, axis=-1), jnp.stack(targets, axis=-1)


def weigh_advantages(advantages: jax.Array, hp: Any) -> jax.Array:
    """[T, B, K] -> [T, B]: the advantage the policy follows (K = 1: unchanged)."""
    if advantages.shape[-1] == 1:
        return advantages[..., 0]
    return hp.extrinsic_coef * advantages[..., 0] + hp.intrinsic_coef * advantages[..., 1]


def policy_and_value(params: Any, minibatch: Batch, s: Any) -> tuple[Any, jax.Array]:
    """The policy pi(. | obs) [*L], restricted to the legal actions the rollout saw,
    and V(obs) [*L, K], re-run over the minibatch (whole sequences from their starting
    hidden state, for a recurrent network)."""
    model = nnx.merge(s.graphdef, params)
    dist, value = model.unroll(starting_hidden(minibatch), minibatch.obs, minibatch.start)
    return restrict(dist, minibatch.legal), value


def explained_variance(trajectory: Transition, batch: Batch, plan: Any, s: Any) -> dict:
    """1 - Var(G - V) / Var(G) of the extrinsic value function over the batch."""
    target, value = batch.target[..., 0], batch.value[..., 0]
    residual = jnp.var(target - value)
    return {"stats/explained_variance": 1.0 - residual / jnp.maximum(jnp.var(target), 1e-8)}


def actor_critic(loss: Loss, prepare: Any = gae_batch) -> OnPolicy:
    """The on-policy pieces of an actor-critic whose loss is ``loss(params, minibatch:
    Batch, hp, s)`` (and whose batch is ``prepare``'s: ``gae_batch`` by default)."""
    return OnPolicy(
        head="actor_critic",
        act=act,
        bootstrap=bootstrap,
        bootstrap_all=bootstrap_all,
        prepare=prepare,
        loss=loss,
        metrics=explained_variance,
    )
