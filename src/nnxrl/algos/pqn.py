"""Parallel Q-learning, PQN (Gallici et al. 2025, "Simplifying Deep Temporal
Difference Learning", arXiv:2407.04811), over batched envs.

No replay buffer and no target network: many envs act epsilon-greedily on a
LayerNorm Q-network, and the network regresses onto Q(lambda) returns of that fresh
rollout for a few epochs of minibatches, as PPO does with its advantages.

The file reads in execution order. ``train_update`` is one iteration and calls its
phases by name: ``exploration_epsilon`` (linear decay over a fraction of the
updates, traced) -> ``collect_rollout`` (T epsilon-greedy steps of B envs) -> the
intrinsic add-on's ``reward`` and ``update`` -> ``compute_targets`` (K reward
streams, Q(lambda) per stream, ``ops/q_lambda.py``) -> ``update_epochs`` (epochs of
minibatch steps, ``algos/sgd.py``, minimising ``q_loss``) -> ``summarize``. Every
setting that is not traced lives in one frozen ``PQNStatic`` (the shared
``OnPolicyStatic`` of ``algos/on_policy.py`` and PQN's own fields), bound once with
``functools.partial`` by ``make_pqn`` at the end of the file; the traced
coefficients arrive as ``Hyperparams``.

Reward streams, as in PPO and with the same add-ons: with ``intrinsic.mode:
reward`` there is one, r + c b; with ``value_head`` there are two, each with its own
row of Q-values, discount and (for the intrinsic one, optionally) no cut at episode
ends. The agent acts on the weighted sum of the streams' Qs (``acting_values``), and
each stream bootstraps from its own Q at the action the agent would take there.

Recurrence (PQN-RNN) is the same minimal branch as in PPO: the network is driven
through ``step`` and ``unroll``, and a recurrent one (``network.kind: gru``) trains
on minibatches of whole env sequences re-run from the stored hidden state.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from nnxrl.algos import sgd
from nnxrl.algos.hyperparams import hyperparams, hyperparams_type  # noqa: F401  (pqn.hyperparams)
from nnxrl.algos.initial_state import initial_run_state
from nnxrl.algos.intrinsic_streams import combine_rewards
from nnxrl.algos.on_policy import (
    Algorithm,
    OnPolicyStatic,
    advance,
    bind_static,
    epochs_start,
    per_stream,
    score_with_addon,
    shared_metrics,
    starting_hidden,
)
from nnxrl.algos.return_window import ReturnWindow
from nnxrl.algos.settings import PQNSettings, RewardStreams, RunFacts
from nnxrl.envs import VecEnv
from nnxrl.envs.base import legal_actions
from nnxrl.intrinsic.base import Addon
from nnxrl.networks import EpsilonGreedy, acting_values, build_network, greedy_values
from nnxrl.networks.settings import NetworkSettings
from nnxrl.ops.q_lambda import continuing_q_lambda, episodic_q_lambda
from nnxrl.types import RunState, UpdateState

# The traced coefficients: PQNSettings' fields declared traced, then the reward
# streams' (algos/hyperparams.py); ``hyperparams(settings, streams)`` gives them.
Hyperparams = hyperparams_type(PQNSettings)


class Transition(NamedTuple):
    """One rollout step for every env; stacked by the rollout scan to [T, B, ...].
    Values are per reward stream at the action the agent would take greedily."""

    obs: jax.Array  # [B, *obs_shape]
    hidden: jax.Array | None  # [1, B, S] the hidden state before the rollout (None: none)
    start: jax.Array  # [B] bool: obs is an episode's first observation
    action: jax.Array  # [B] int32, epsilon-greedy
    value: jax.Array  # [B, K] Q_k(obs, a*), a* = argmax of the acting values
    reward: jax.Array  # [B]
    terminated: jax.Array  # [B] bool
    truncated: jax.Array  # [B] bool
    final_value: jax.Array  # [B, K] the same at final_obs: the bootstrap on truncation
    episode: dict[str, jax.Array]  # per-episode results where the episode ended


class Batch(NamedTuple):
    """What PQN's update trains on; leading axes ``[*L]`` as for PPO's ``Batch``."""

    obs: jax.Array  # [*L, *obs_shape]
    hidden: jax.Array | None  # [1, N, S]: each sequence's starting state (None: feed-forward)
    start: jax.Array  # [*L] bool
    action: jax.Array  # [*L]
    target: jax.Array  # [*L, K] Q(lambda) returns per stream


@dataclass(frozen=True)
class PQNStatic(OnPolicyStatic):
    """What PQN's phases need beyond the shared settings (``algos/on_policy.py``)."""

    loss: str  # 'squared' or 'huber'


PQN = Algorithm  # init, update, graphdef (algos/on_policy.py)


def train_update(run_state: RunState, hp: Hyperparams, *, s: PQNStatic) -> tuple[RunState, dict]:
    """One PQN iteration: act epsilon-greedily, let the add-on score and learn from the
    rollout, compute Q(lambda) targets, regress onto them, summarise."""
    epsilon = exploration_epsilon(run_state.update, hp, s.num_updates)
    run_state, trajectory, last_value = collect_rollout(run_state, epsilon, hp, s)
    key, addon_key, epoch_key = jax.random.split(run_state.key, 3)
    addon_state, bonus, addon_metrics = score_with_addon(
        run_state.addon, trajectory, run_state.obs, hp, addon_key, s
    )
    targets = compute_targets(trajectory, bonus, last_value, hp, s)
    batch = make_batch(trajectory, targets, s)
    update_state, loss_metrics = update_epochs(run_state, batch, epoch_key, hp, s)
    run_state = advance(run_state, update_state, key, addon_state, trajectory)
    metrics = summarize(
        trajectory, batch, bonus, run_state.recent_returns, epsilon, loss_metrics, addon_metrics, s
    )
    return run_state, metrics


def exploration_epsilon(update: jax.Array, hp: Hyperparams, num_updates: int) -> jax.Array:
    """epsilon for the rollout of update u (0-based): linear from epsilon_start at
    u = 0 to exactly epsilon_finish at u = epsilon_decay_fraction * num_updates, then
    constant (a fraction of 0: epsilon_finish throughout)."""
    decay_updates = hp.epsilon_decay_fraction * num_updates
    progress = jnp.where(
        decay_updates > 0, jnp.clip(update / jnp.maximum(decay_updates, 1e-12), 0.0, 1.0), 1.0
    )
    return hp.epsilon_finish + (hp.epsilon_start - hp.epsilon_finish) * (1.0 - progress)


def collect_rollout(
    run_state: RunState, epsilon: jax.Array, hp: Hyperparams, s: PQNStatic
) -> tuple[RunState, Transition, jax.Array]:
    """Act epsilon-greedily for T steps in every env. Returns the advanced state, the
    Transitions [T, B] and the greedy values [B, K] of the observation after them.
    Q(final obs), the truncation bootstrap, is computed as PPO's V(final obs) is: a
    recurrent step inside the scan, or one batched pass after it (feed-forward)."""
    model = nnx.merge(s.graphdef, run_state.params)
    weights = stream_weights(hp, s.num_streams)

    def env_step(state: RunState, _: Any) -> tuple[RunState, tuple[Transition, jax.Array]]:
        key, action_key, step_key = jax.random.split(state.key, 3)
        hidden, q = model.step(state.hidden, state.obs, state.start)
        legal = legal_actions(s.env, state.env_state)
        action = EpsilonGreedy(acting_values(q, weights), epsilon, legal).sample(action_key)
        env_state, out = s.env.step(step_key, state.env_state, action)
        if s.sequences:  # recurrent: continue the episode from the new hidden state
            _, final_q = model.step(hidden, out.final_obs, jnp.zeros_like(state.start))
            final = jnp.zeros((0,)), None
        else:  # feed-forward: after the scan, for all steps at once
            final_q, final = jnp.zeros_like(q), (out.final_obs, out.final_action_mask)
        transition = Transition(
            obs=state.obs,
            hidden=None,  # recorded once, before the scan
            start=state.start,
            action=action,
            value=greedy_values(q, weights, legal),
            reward=out.reward,
            terminated=out.terminated,
            truncated=out.truncated,
            final_value=greedy_values(final_q, weights, out.final_action_mask),
            episode=out.episode,
        )
        start = jnp.logical_or(out.terminated, out.truncated)
        state = state.replace(obs=out.obs, hidden=hidden, start=start, env_state=env_state, key=key)
        return state, (transition, final)

    first_hidden = run_state.hidden
    run_state, (trajectory, final) = jax.lax.scan(env_step, run_state, length=s.num_steps)
    if s.sequences:  # the update re-runs every env's sequence from its first state
        trajectory = trajectory._replace(hidden=first_hidden[None])
    else:
        final_obs, final_legal = final
        final_value = greedy_values(model(final_obs), weights, final_legal)
        trajectory = trajectory._replace(final_value=final_value)
    _, last_q = model.step(run_state.hidden, run_state.obs, run_state.start)
    last_legal = legal_actions(s.env, run_state.env_state)
    return run_state, trajectory, greedy_values(last_q, weights, last_legal)


def stream_weights(hp: Hyperparams, num_streams: int) -> jax.Array:
    """[K] weights of the streams' Qs in the values the agent acts on."""
    return jnp.stack([hp.extrinsic_coef, hp.intrinsic_coef])[:num_streams]


def compute_targets(
    trajectory: Transition,
    bonus: jax.Array,
    last_value: jax.Array,
    hp: Hyperparams,
    s: PQNStatic,
) -> jax.Array:
    """Q(lambda) returns [T, B, K], per reward stream: the extrinsic one (scaled by
    reward_scale) cuts at true ends and bootstraps through time limits; the intrinsic
    one uses its own discount and, when not episodic, runs on through episode ends."""
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
    return jnp.stack(targets, axis=-1)


def make_batch(trajectory: Transition, targets: jax.Array, s: PQNStatic) -> Batch:
    """What the update trains on, [T, B, ...]: minibatches of single steps or, for a
    recurrent network, of whole env sequences (``algos/sgd.py``)."""
    batch = Batch(
        obs=trajectory.obs,
        hidden=trajectory.hidden,
        start=trajectory.start,
        action=trajectory.action,
        target=targets,
    )
    return batch


def update_epochs(
    run_state: RunState, batch: Batch, key: jax.Array, hp: Hyperparams, s: PQNStatic
) -> tuple[UpdateState, dict]:
    """num_epochs passes over the batch, one optimiser step on ``q_loss`` per
    minibatch (``algos/sgd.py``); metrics [E, M] per loss term."""
    return sgd.update_epochs(epochs_start(run_state, s), batch, key, hp, s, q_loss)


def q_loss(params: Any, minibatch: Batch, hp: Hyperparams, s: PQNStatic) -> tuple[jax.Array, dict]:
    """L = sum over streams k of mean loss(Q_k(s, a), G_k): 0.5 (Q - G)^2 or Huber."""
    model = nnx.merge(s.graphdef, params)
    q = model.unroll(starting_hidden(minibatch), minibatch.obs, minibatch.start)  # [*L, K, A]
    action = jnp.broadcast_to(minibatch.action[..., None, None], (*q.shape[:-1], 1))
    taken = jnp.take_along_axis(q, action, axis=-1)[..., 0]  # [*L, K]
    if s.loss == "huber":
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


def summarize(
    trajectory: Transition,
    batch: Batch,
    bonus: jax.Array,
    recent_returns: ReturnWindow,
    epsilon: jax.Array,
    loss_metrics: dict,
    addon_metrics: dict,
    s: PQNStatic,
) -> dict:
    """Fixed-shape scalars for one update: losses averaged over epochs and minibatches,
    the episodes that ended (``algos/episode_metrics.py``) and the rolling return
    over the last N (``algos/return_window.py``), the add-on's metrics, the
    exploration epsilon and the mean greedy value and target of the extrinsic stream."""
    metrics = shared_metrics(trajectory, bonus, recent_returns, loss_metrics, addon_metrics, s)
    metrics["stats/epsilon"] = epsilon
    metrics["stats/q_greedy"] = trajectory.value[..., 0].mean()
    metrics["stats/target"] = batch.target[..., 0].mean()
    return metrics


# --------------------------------------------------------------------------------------
# Before the first update
# --------------------------------------------------------------------------------------


def init(key: jax.Array, *, s: PQNStatic) -> RunState:
    """The run state before the first update: a fresh Q-network, optimiser, envs and
    add-on (jittable, and vmappable over keys for many seeds)."""
    network = build_network(
        s.network, s.env.spec, s.num_streams, jax.random.fold_in(key, 0), head="q"
    )
    return initial_run_state(key, network, s.env, s.tx, s.addon, s.return_window)


# --------------------------------------------------------------------------------------
# Assembly: the settings -> PQNStatic, bound once
# --------------------------------------------------------------------------------------


def make_pqn(
    settings: PQNSettings,
    env: VecEnv,
    run: RunFacts,
    network: NetworkSettings | None = None,
    addon: Addon | None = None,
    streams: RewardStreams | None = None,
) -> PQN:
    """Bind PQN's settings, the network's (default: ``NetworkSettings()``), the
    intrinsic add-on (default: no bonus) and its reward streams (default: one) onto
    the phases; returns init and update."""
    p = settings
    s = bind_static(PQNStatic, p, env, run, network, addon, streams, "q", p.optimizer, loss=p.loss)
    return PQN(
        init=partial(init, s=s),
        update=partial(train_update, s=s),
        graphdef=s.graphdef,
    )
