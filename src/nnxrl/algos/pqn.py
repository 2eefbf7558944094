"""Parallel Q-learning, PQN (Gallici et al. 2025, "Simplifying Deep Temporal
Difference Learning", arXiv:2407.04811), over batched envs.

No replay buffer and no target network: many envs act epsilon-greedily on a
LayerNorm Q-network, and the network regresses onto Q(lambda) returns of that fresh
rollout for a few epochs of minibatches, as PPO does with its advantages.

PQN runs on the one on-policy skeleton (``algos/on_policy.py``: the rollout, the
add-on, epochs of minibatches, metrics) and supplies, in the skeleton's order:
``plan`` (the exploration epsilon, a linear decay over a fraction of the updates,
and the streams' weights) -> ``act`` (epsilon-greedy among the legal actions) and
``bootstrap`` (the greedy value) -> ``prepare`` (K reward streams, Q(lambda) per
stream, ``ops/q_lambda.py``) -> ``q_loss`` -> ``summary``. Its settings are
``PQNSettings`` (``algos/settings.py``); the untraced ones are read as
``s.settings``, the traced coefficients arrive as ``hp``.

Reward streams, as in PPO and with the same add-ons: with ``intrinsic.mode:
reward`` there is one, r + c b; with ``value_head`` there are two, each with its own
row of Q-values, discount and (for the intrinsic one, optionally) no cut at episode
ends. The agent acts on the weighted sum of the streams' Qs (``acting_values``), and
each stream bootstraps from its own Q at the action the agent would take there.

Recurrence (PQN-RNN) is the skeleton's: a recurrent network (``network.kind: gru``)
trains on minibatches of whole env sequences re-run from the stored hidden state.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from nnxrl.algos.hyperparams import hyperparams, hyperparams_type  # noqa: F401  (pqn.hyperparams)
from nnxrl.algos.intrinsic_streams import combine_rewards, stream_weights
from nnxrl.algos.on_policy import (
    Algorithm,
    OnPolicy,
    Transition,
    make_on_policy,
    per_stream,
    starting_hidden,
)
from nnxrl.algos.settings import PQNSettings, RunFacts
from nnxrl.envs import VecEnv
from nnxrl.networks import EpsilonGreedy, acting_values, greedy_values
from nnxrl.ops.q_lambda import continuing_q_lambda, episodic_q_lambda
from nnxrl.types import RunState

# The traced coefficients: PQNSettings' fields declared traced, then the reward
# streams' (algos/hyperparams.py); ``hyperparams(settings, streams)`` gives them.
Hyperparams = hyperparams_type(PQNSettings)


class Plan(NamedTuple):
    """What stays fixed over one update's rollout."""

    epsilon: jax.Array  # the exploration rate
    weights: jax.Array  # [K] the streams' weights in the values the agent acts on


class Batch(NamedTuple):
    """What PQN's update trains on; leading axes ``[*L]`` as for the actor-critic's
    ``Batch`` (``algos/actor_critic.py``)."""

    obs: jax.Array  # [*L, *obs_shape]
    hidden: jax.Array | None  # [1, N, S]: each sequence's starting state (None: feed-forward)
    start: jax.Array  # [*L] bool
    action: jax.Array  # [*L]
    target: jax.Array  # [*L, K] Q(lambda) returns per stream


def plan(run_state: RunState, hp: Hyperparams, s: Any) -> Plan:
    """This update's exploration epsilon and the streams' weights."""
    weights = stream_weights(hp, s.num_streams)
    return Plan(exploration_epsilon(run_state.update, hp, s.num_updates), weights)


def exploration_epsilon(update: jax.Array, hp: Hyperparams, num_updates: int) -> jax.Array:
    """epsilon for the rollout of update u (0-based): linear from epsilon_start at
    u = 0 to exactly epsilon_finish at u = epsilon_decay_fraction * num_updates, then
    constant (a fraction of 0: epsilon_finish throughout)."""
    decay_updates = hp.epsilon_decay_fraction * num_updates
    progress = jnp.where(
        decay_updates > 0, jnp.clip(update / jnp.maximum(decay_updates, 1e-12), 0.0, 1.0), 1.0
    )
    return hp.epsilon_finish + (hp.epsilon_start - hp.epsilon_finish) * (1.0 - progress)


def act(
    model: Any,
    hidden: Any,
    obs: jax.Array,
    start: jax.Array,
    legal: jax.Array | None,
    key: jax.Array,
    plan: Plan,
) -> tuple[Any, jax.Array, jax.Array, dict]:
    """Epsilon-greedy on the weighted streams' Qs among the legal actions: (hidden,
    a [B], the streams' Qs [B, K] at the greedy action, nothing more to keep)."""
    hidden, q = model.step(hidden, obs, start)
    action = EpsilonGreedy(acting_values(q, plan.weights), plan.epsilon, legal).sample(key)
    return hidden, action, greedy_values(q, plan.weights, legal), {}


def bootstrap(
    model: Any, hidden: Any, obs: jax.Array, start: jax.Array, legal: Any, plan: Plan
) -> jax.Array:
    """Q_k(obs, a*) [B, K] at the greedy legal action a*, one step from ``hidden``."""
    return greedy_values(model.step(hidden, obs, start)[1], plan.weights, legal)


def bootstrap_all(model: Any, obs: jax.Array, legal: Any, plan: Plan) -> jax.Array:
    """Q_k(obs, a*) [T, B, K] of a feed-forward network, every step at once."""
    return greedy_values(model(obs), plan.weights, legal)


def prepare(
    trajectory: Transition, bonus: jax.Array, last_value: jax.Array, hp: Hyperparams, s: Any
) -> Batch:
    """The batch [T, B, ...] with Q(lambda) returns [T, B, K], per reward stream: the
    extrinsic one (scaled by reward_scale) cuts at true ends and bootstraps through
    time limits; the intrinsic one uses its own discount and, when not episodic, runs
    on through episode ends."""
    extrinsic = hp.reward_scale * trajectory.reward
    rewards = combine_rewards(extrinsic, bonus, hp.intrinsic_reward_coef, num_streams=s.num_streams)
    gammas = (hp.gamma, hp.intrinsic_gamma)
    targets = per_stream(
        episodic_q_lambda,
        continuing_q_lambda,
        trajectory,
        rewards,
        last_value,
        gammas,
        hp.q_lambda,
        s.episodic,
    )
    t = trajectory
    return Batch(t.obs, t.hidden, t.start, t.action, jnp.stack(targets, axis=-1))


def q_loss(params: Any, minibatch: Batch, hp: Hyperparams, s: Any) -> tuple[jax.Array, dict]:
    """L = sum over streams k of mean loss(Q_k(s, a), G_k): 0.5 (Q - G)^2 or Huber."""
    model = nnx.merge(s.graphdef, params)
    q = model.unroll(starting_hidden(minibatch), minibatch.obs, minibatch.start)  # [*L, K, A]
    action = jnp.broadcast_to(minibatch.action[..., None, None], (*q.shape[:-1], 1))
    taken = jnp.take_along_axis(q, action, axis=-1)[..., 0]  # [*L, K]
    if s.settings.loss == "huber":
        per_item = optax.huber_loss(taken, minibatch.target, delta=hp.huber_delta)
    else:
        per_item = optax.l2_loss(taken, minibatch.target)
    per_stream = per_item.reshape((-1, s.num_streams)).mean(axis=0)
    total = per_stream.sum()
    metrics = {
        "loss/total": total,
        "loss/td": per_stream[0],
        "stats/q_taken": taken[..., 0].mean(),
    }
    if s.num_streams == 2:
        metrics["loss/td_intrinsic"] = per_stream[1]
    return total, metrics


def summary(trajectory: Transition, batch: Batch, plan: Plan, s: Any) -> dict:
    """The exploration epsilon and the mean greedy value and target of the extrinsic
    stream."""
    return {
        "stats/epsilon": plan.epsilon,
        "stats/q_greedy": trajectory.value[..., 0].mean(),
        "stats/target": batch.target[..., 0].mean(),
    }


PQN = OnPolicy(
    head="q",
    act=act,
    bootstrap=bootstrap,
    bootstrap_all=bootstrap_all,
    prepare=prepare,
    loss=q_loss,
    metrics=summary,
    plan=plan,
)


def make_pqn(settings: PQNSettings, env: VecEnv, run: RunFacts, **optional: Any) -> Algorithm:
    """PQN's init and update: its settings bound onto the skeleton with the env and the
    run's facts (``make_on_policy``; ``network=``, ``addon=``, ``streams=`` optional)."""
    return make_on_policy(PQN, settings, env, run, **optional)
