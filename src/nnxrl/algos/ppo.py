"""Proximal policy optimisation (Schulman et al. 2017) over batched envs.

The file reads in execution order. ``train_update`` is one iteration and calls its
phases by name: ``collect_rollout`` (T steps of B envs) -> the intrinsic add-on's
``reward`` and ``update`` -> ``compute_advantages`` (K reward streams, GAE per
stream) -> ``update_epochs`` (epochs of minibatch steps, ``algos/sgd.py``, minimising
``ppo_loss``) -> ``summarize`` (fixed-shape metrics). Every setting that is not
traced lives in one frozen ``PPOStatic`` (the shared ``OnPolicyStatic`` of
``algos/on_policy.py``, the skeleton PPO and PQN share, and PPO's own fields), bound
once with ``functools.partial`` by ``make_ppo`` at the end of the file; the traced
coefficients arrive as ``Hyperparams``. The caller scans ``update`` into chunks
(``nnxrl.run.chunk``) and jits (and maps over seeds: ``run/members.py``) only those.

Reward streams: with ``intrinsic.mode: reward`` there is one, r + c * b; with
``value_head`` there are two, r and c * b, each with its own critic output,
discount and (for the intrinsic one, optionally) no cut at episode ends, and the
policy follows the weighted sum of their advantages. The add-on is whatever
``nnxrl.intrinsic.base.Addon`` the caller passes (the no-bonus default by default).

Recurrence: every network is driven through ``step`` (one env step, hidden state
in and out) and ``unroll`` (whole sequences from a stored hidden state); a
feed-forward network's hidden state is empty. The run state carries the hidden
state and the episode-start flags across updates. The only branch is how the batch
is cut: a feed-forward network trains on shuffled single steps, a recurrent one
(``network.kind: gru``) on whole env sequences, re-run from the hidden state
stored at the start of the rollout.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from flax import nnx

from nnxrl.algos import sgd
from nnxrl.algos.hyperparams import hyperparams, hyperparams_type  # noqa: F401  (ppo.hyperparams)
from nnxrl.algos.initial_state import initial_run_state
from nnxrl.algos.intrinsic_streams import combine_rewards
from nnxrl.algos.normalization import (
    Normalizer,
    init_normalizer,
    observe,
    scale_rewards,
    update_obs,
)
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
from nnxrl.algos.settings import PPOSettings, RewardStreams, RunFacts
from nnxrl.envs import VecEnv
from nnxrl.envs.base import legal_actions
from nnxrl.intrinsic.base import Addon
from nnxrl.networks import build_network
from nnxrl.networks.distributions import restrict
from nnxrl.networks.settings import NetworkSettings
from nnxrl.ops.gae import continuing_gae, episodic_gae
from nnxrl.ops.losses import normalize, policy_loss, value_loss
from nnxrl.ops.running_moments import Moments
from nnxrl.types import RunState, UpdateState

# The traced coefficients: PPOSettings' fields declared traced, then the reward
# streams' (algos/hyperparams.py); ``hyperparams(settings, streams)`` gives them.
Hyperparams = hyperparams_type(PPOSettings)


class Transition(NamedTuple):
    """One rollout step for every env; stacked by the rollout scan to [T, B, ...]."""

    obs: jax.Array  # [B, *obs_shape] what the network saw (normalised, if so configured)
    hidden: jax.Array | None  # [1, B, S] the hidden state before the rollout (None: none)
    start: jax.Array  # [B] bool: obs is an episode's first observation
    action: jax.Array  # [B] int32, or [B, D] float32 (continuous; before any clipping)
    log_prob: jax.Array  # [B] log pi_old(action | obs)
    value: jax.Array  # [B, K] V_old(obs), one per reward stream
    reward: jax.Array  # [B]
    terminated: jax.Array  # [B] bool
    truncated: jax.Array  # [B] bool
    final_value: jax.Array  # [B, K] V_old(final_obs): the bootstrap on truncation
    episode: dict[str, jax.Array]  # per-episode results where the episode ended
    legal: jax.Array | None = None  # [B, A] bool: the env's legal actions (None: no mask)


class Batch(NamedTuple):
    """What the update trains on. Leading axes ``[*L]``: ``[T, B]`` for the whole
    rollout; a minibatch is ``[N]`` single steps (feed-forward) or ``[T, N]`` whole
    env sequences (recurrent)."""

    obs: jax.Array  # [*L, *obs_shape]
    hidden: jax.Array | None  # [1, N, S]: each sequence's starting state (None: feed-forward)
    start: jax.Array  # [*L] bool
    action: jax.Array  # [*L]
    log_prob: jax.Array  # [*L]
    value: jax.Array  # [*L, K]
    advantage: jax.Array  # [*L]: the streams' advantages, weighted and summed
    target: jax.Array  # [*L, K]
    legal: jax.Array | None = None  # [*L, A] bool: the policy's support (None: no mask)


@dataclass(frozen=True)
class PPOStatic(OnPolicyStatic):
    """What PPO's phases need beyond the shared settings (``algos/on_policy.py``)."""

    clip_value: bool
    advantage_normalization: str  # 'minibatch', 'batch' or 'none'
    normalize_obs: bool  # algos/normalization.py
    normalize_reward: bool
    obs_clip: float
    reward_clip: float


PPO = Algorithm  # init, update, graphdef (algos/on_policy.py)


def train_update(run_state: RunState, hp: Hyperparams, *, s: PPOStatic) -> tuple[RunState, dict]:
    """One PPO iteration: collect, let the add-on score and learn from the rollout,
    estimate advantages, optimise, summarise."""
    run_state, trajectory, last_value, raw_obs = collect_rollout(run_state, s)
    key, addon_key, epoch_key = jax.random.split(run_state.key, 3)
    last_seen = observe(run_state.normalizer.obs, run_state.obs, s.obs_clip)
    addon_state, bonus, addon_metrics = score_with_addon(
        run_state.addon, trajectory, last_seen, hp, addon_key, s
    )
    normalizer, scaled = normalize_rollout(run_state.normalizer, trajectory, raw_obs, hp, s)
    advantages, targets = compute_advantages(
        trajectory._replace(reward=scaled), bonus, last_value, hp, s
    )
    batch = make_batch(trajectory, advantages, targets, s)
    update_state, loss_metrics = update_epochs(run_state, batch, epoch_key, hp, s)
    run_state = advance(run_state, update_state, key, addon_state, trajectory)
    run_state = run_state.replace(normalizer=normalizer)
    metrics = summarize(
        trajectory, batch, bonus, run_state.recent_returns, loss_metrics, addon_metrics, s
    )
    return run_state, metrics


def collect_rollout(
    run_state: RunState, s: PPOStatic
) -> tuple[RunState, Transition, jax.Array, jax.Array]:
    """Act for T steps in every env (among its legal actions; inputs normalised with
    the moments from before): the advanced state, Transitions [T, B] (and a recurrent
    net's state before them), V(obs) [B, K] after the last step, raw observations [T,
    B, ...] if normalised ([0] else). V(final obs), the truncation bootstrap: in the
    scan if recurrent, else one batched pass over all T x B after it (measured faster)."""
    model = nnx.merge(s.graphdef, run_state.params)
    see = partial(observe, run_state.normalizer.obs, clip=s.obs_clip)

    def env_step(state: RunState, _: Any) -> tuple[RunState, tuple[Transition, jax.Array]]:
        key, action_key, step_key = jax.random.split(state.key, 3)
        obs = see(state.obs)
        hidden, dist, value = model.step(state.hidden, obs, state.start)
        legal = legal_actions(s.env, state.env_state)  # [B, A] bool, or None: no mask
        action = (dist := restrict(dist, legal)).sample(action_key)
        env_state, out = s.env.step(step_key, state.env_state, action)
        if s.sequences:  # recurrent: continue the episode from the new hidden state
            _, _, final_value = model.step(hidden, see(out.final_obs), jnp.zeros_like(state.start))
            final_obs = jnp.zeros((0,))
        else:  # feed-forward: after the scan, for all steps at once
            final_value, final_obs = jnp.zeros_like(value), see(out.final_obs)
        raw = state.obs if isinstance(run_state.normalizer.obs, Moments) else jnp.zeros((0,))
        transition = Transition(
            obs=obs,
            hidden=None,  # recorded once, before the scan
            start=state.start,
            action=action,
            log_prob=dist.log_prob(action),
            value=value,
            reward=out.reward,
            terminated=out.terminated,
            truncated=out.truncated,
            final_value=final_value,
            episode=out.episode,
            legal=legal,
        )
        start = jnp.logical_or(out.terminated, out.truncated)
        state = state.replace(obs=out.obs, hidden=hidden, start=start, env_state=env_state, key=key)
        return state, (transition, final_obs, raw)

    first_hidden = run_state.hidden  # the update re-runs every env's sequence from it
    run_state, (trajectory, final_obs, raw) = jax.lax.scan(env_step, run_state, length=s.num_steps)
    if s.sequences:
        trajectory = trajectory._replace(hidden=first_hidden[None])
    else:
        trajectory = trajectory._replace(final_value=model.value(final_obs))
    _, _, last_value = model.step(run_state.hidden, see(run_state.obs), run_state.start)
    return run_state, trajectory, last_value, raw


def normalize_rollout(
    normalizer: Normalizer,
    trajectory: Transition,
    raw_obs: jax.Array,
    hp: Hyperparams,
    s: PPOStatic,
) -> tuple[Normalizer, jax.Array]:
    """Merge the rollout's raw observations and discounted returns into the running
    statistics; returns them and the rewards [T, B] the advantages use (scaled by the
    return's running std, if so configured: ``algos/normalization.py``)."""
    normalizer = update_obs(normalizer, raw_obs)
    ends = jnp.logical_or(trajectory.terminated, trajectory.truncated)
    return scale_rewards(normalizer, trajectory.reward, ends, hp.gamma, s.reward_clip)


def compute_advantages(
    trajectory: Transition,
    bonus: jax.Array,
    last_value: jax.Array,
    hp: Hyperparams,
    s: PPOStatic,
) -> tuple[jax.Array, jax.Array]:
    """Advantages [T, B] the policy follows and value targets [T, B, K]: GAE per reward
    stream (``combine_rewards``), the streams' advantages weighted and summed
    (``weigh_advantages``), normalised over the batch if so configured."""
    rewards = combine_rewards(
        trajectory.reward, bonus, hp.intrinsic_reward_coef, num_streams=s.num_streams
    )
    stream_advantages, targets = gae_per_stream(trajectory, rewards, last_value, hp, s.episodic)
    advantages = weigh_advantages(stream_advantages, hp)
    if s.advantage_normalization == "batch":
        advantages = normalize(advantages)
    return advantages, targets


def gae_per_stream(
    trajectory: Transition,
    rewards: jax.Array,
    last_value: jax.Array,
    hp: Hyperparams,
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


def weigh_advantages(advantages: jax.Array, hp: Hyperparams) -> jax.Array:
    """[T, B, K] -> [T, B]: the advantage the policy follows (K = 1: unchanged)."""
    if advantages.shape[-1] == 1:
        return advantages[..., 0]
    return hp.extrinsic_coef * advantages[..., 0] + hp.intrinsic_coef * advantages[..., 1]


def make_batch(
    trajectory: Transition, advantages: jax.Array, targets: jax.Array, s: PPOStatic
) -> Batch:
    """What the update trains on, [T, B, ...]: minibatches of single steps or, for a
    recurrent network, of whole env sequences (``algos/sgd.py``)."""
    batch = Batch(
        obs=trajectory.obs,
        hidden=trajectory.hidden,
        start=trajectory.start,
        action=trajectory.action,
        log_prob=trajectory.log_prob,
        value=trajectory.value,
        advantage=advantages,
        target=targets,
        legal=trajectory.legal,
    )
    return batch


def update_epochs(
    run_state: RunState, batch: Batch, key: jax.Array, hp: Hyperparams, s: PPOStatic
) -> tuple[UpdateState, dict]:
    """num_epochs passes over the batch, one optimiser step on ``ppo_loss`` per
    minibatch (``algos/sgd.py``); metrics [E, M] per loss term."""
    return sgd.update_epochs(epochs_start(run_state, s), batch, key, hp, s, ppo_loss)


def ppo_loss(
    params: Any, minibatch: Batch, hp: Hyperparams, s: PPOStatic
) -> tuple[jax.Array, dict]:
    """L = L_policy + c_v L_value - c_e H on one minibatch; returns (L, loss metrics)."""
    model = nnx.merge(s.graphdef, params)
    dist, value = model.unroll(starting_hidden(minibatch), minibatch.obs, minibatch.start)
    dist = restrict(dist, minibatch.legal)
    log_prob = dist.log_prob(minibatch.action)
    advantage = minibatch.advantage
    if s.advantage_normalization == "minibatch":
        advantage = normalize(advantage)
    pol, approx_kl, clip_fraction = policy_loss(
        log_prob, minibatch.log_prob, advantage, hp.clip_eps
    )
    clip = hp.value_clip_eps if s.clip_value else None
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


def summarize(
    trajectory: Transition,
    batch: Batch,
    bonus: jax.Array,
    recent_returns: ReturnWindow,
    loss_metrics: dict,
    addon_metrics: dict,
    s: PPOStatic,
) -> dict:
    """Fixed-shape scalars for one update: losses averaged over epochs and minibatches,
    the episodes that ended (``algos/episode_metrics.py``) and the rolling return
    over the last N (``algos/return_window.py``), the add-on's metrics, and
    the extrinsic value function's explained variance."""
    metrics = shared_metrics(trajectory, bonus, recent_returns, loss_metrics, addon_metrics, s)
    target, value = batch.target[..., 0], batch.value[..., 0]
    residual = jnp.var(target - value)
    metrics["stats/explained_variance"] = 1.0 - residual / jnp.maximum(jnp.var(target), 1e-8)
    return metrics


# --------------------------------------------------------------------------------------
# Before the first update
# --------------------------------------------------------------------------------------


def init(key: jax.Array, *, s: PPOStatic) -> RunState:
    """The run state before the first update: fresh networks, optimiser, envs and
    add-on (jittable, and vmappable over keys for many seeds)."""
    network = build_network(s.network, s.env.spec, s.num_streams, jax.random.fold_in(key, 0))
    normalizer = init_normalizer(
        s.env.spec.obs_shape, s.env.num_envs, obs=s.normalize_obs, reward=s.normalize_reward
    )
    return initial_run_state(key, network, s.env, s.tx, s.addon, s.return_window, normalizer)


# --------------------------------------------------------------------------------------
# Assembly: the settings -> PPOStatic, bound once
# --------------------------------------------------------------------------------------


def make_ppo(
    settings: PPOSettings,
    env: VecEnv,
    run: RunFacts,
    network: NetworkSettings | None = None,
    addon: Addon | None = None,
    streams: RewardStreams | None = None,
) -> PPO:
    """Bind PPO's settings, the network's (default: ``NetworkSettings()``), the
    intrinsic add-on (default: no bonus) and its reward streams (default: one) onto
    the phases; returns init and update."""
    p = settings
    s = bind_static(
        PPOStatic,
        p,
        env,
        run,
        network,
        addon,
        streams,
        head="actor_critic",
        clip_value=p.clip_value,
        advantage_normalization=p.advantage_normalization,
        normalize_obs=p.normalize_obs,
        normalize_reward=p.normalize_reward,
        obs_clip=p.obs_clip,
        reward_clip=p.reward_clip,
    )
    return PPO(
        init=partial(init, s=s),
        update=partial(train_update, s=s),
        graphdef=s.graphdef,
    )
