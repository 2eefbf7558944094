"""The one on-policy skeleton: PPO, PQN and any algorithm of that family (the A2C of
``examples/custom_algorithm.py``) run this file's ``train_update``; each supplies
only what differs, as an ``OnPolicy`` of pure functions (its pieces).

The file reads in execution order. ``train_update`` is one iteration and calls its
phases by name: the algorithm's ``plan`` (what stays fixed over the update, e.g.
PQN's exploration epsilon) -> ``collect_rollout`` (T steps of B envs, each action
chosen by the algorithm's ``act``, the bootstraps valued by its ``bootstrap``) ->
``score_with_addon`` (the intrinsic add-on's bonus, and its own learning) ->
``normalize_rollout`` (running observation and reward statistics, where the
algorithm's settings switch them on) -> the algorithm's ``prepare`` (its targets:
GAE advantages, Q(lambda) returns; what it trains on) -> ``update_epochs`` (epochs
of minibatch steps on the algorithm's ``loss``, ``algos/sgd.py``) -> ``advance`` ->
``summarize`` (the metrics every algorithm reports, then the algorithm's own).

Every setting that is not traced lives in one frozen ``OnPolicyStatic``, bound once
with ``functools.partial`` by ``make_on_policy`` at the end of the file: the
skeleton's own fields, the algorithm's ``settings`` dataclass (its untraced options
are read there, e.g. ``s.settings.clip_value``) and its ``pieces``. Traced
coefficients arrive as ``hp`` (``algos/hyperparams.py``); a piece reads them there,
never from ``s.settings``, so that sweeps and PBT change them.

Recurrence: every network is driven through ``step`` (one env step, hidden state in
and out) and ``unroll`` (whole sequences from a stored hidden state); a feed-forward
network's hidden state is empty. The only branch is how the batch is cut: a
feed-forward network trains on shuffled single steps, a recurrent one on whole env
sequences re-run from the hidden state stored at the start of the rollout.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from nnxrl.algos import sgd
from nnxrl.algos.episode_metrics import episode_metrics
from nnxrl.algos.initial_state import initial_run_state
from nnxrl.algos.intrinsic_streams import to_experience
from nnxrl.algos.normalization import init_normalizer, observe, scale_rewards, update_obs
from nnxrl.algos.return_window import ReturnWindow, record_episodes, window_metrics
from nnxrl.algos.settings import OnPolicySettings, RewardStreams, RunFacts
from nnxrl.envs import VecEnv
from nnxrl.envs.base import legal_actions
from nnxrl.intrinsic.base import Addon, NoOptions, no_bonus
from nnxrl.networks import build_network
from nnxrl.networks.acting import acting_state, carried_state
from nnxrl.networks.registry import network_kind
from nnxrl.networks.settings import NetworkSettings
from nnxrl.ops.running_moments import Moments
from nnxrl.optim import constant_one, linear_decay, make_optimizer
from nnxrl.types import RunState, UpdateState


class Algorithm(NamedTuple):
    """An algorithm's pure functions, configuration already bound (``make_on_policy``,
    or any registered algorithm's ``make``)."""

    init: Callable[[jax.Array], RunState]  # key -> the first RunState (jittable)
    update: Callable[[RunState, Any], tuple[RunState, dict]]  # (state, hp): one iteration
    graphdef: Any  # the network's structure, for rebuilding it from params


def no_metrics(trajectory: Any, batch: Any, plan: Any, s: Any) -> dict:
    """An algorithm with no metrics of its own."""
    return {}


def no_plan(run_state: RunState, hp: Any, s: Any) -> None:
    """An algorithm whose rollout needs nothing fixed beforehand."""
    return None


class OnPolicy(NamedTuple):
    """What an on-policy algorithm supplies to the skeleton: pure functions of the
    network ``model`` (``nnx.merge``d), arrays, the update's ``plan``, the traced
    ``hp`` and the static ``s`` (an ``OnPolicyStatic``). B envs, K reward streams."""

    head: str  # the head its network carries: 'actor_critic' or 'q' (networks/registry.py)
    # (model, hidden, obs [B, ...], start [B], legal [B, A] | None, key, plan)
    #   -> (hidden, action [B, ...], value [B, K], record: a dict of [B, ...] to keep)
    act: Callable[..., tuple[Any, jax.Array, jax.Array, dict]]
    # (model, hidden, obs [B, ...], start [B], legal, plan) -> value [B, K]: a bootstrap
    bootstrap: Callable[..., jax.Array]
    # (model, obs [T, B, ...], legal [T, B, A] | None, plan) -> value [T, B, K]: every
    # step's final observation at once (feed-forward networks)
    bootstrap_all: Callable[..., jax.Array]
    # (trajectory, bonus [T, B], last_value [B, K], hp, s) -> the batch it trains on:
    # a pytree of [T, B, ...] leaves with a ``hidden`` field (``starting_hidden``)
    prepare: Callable[..., Any]
    loss: sgd.Loss  # (params, minibatch, hp, s) -> (scalar, metrics)
    # (trajectory, batch, plan, s) -> its own metrics, after the shared ones
    metrics: Callable[..., dict] = no_metrics
    # (run_state, hp, s) -> what stays fixed over one update's rollout (None: nothing)
    plan: Callable[..., Any] = no_plan


class Transition(NamedTuple):
    """One rollout step for every env; stacked by the rollout scan to [T, B, ...]."""

    obs: jax.Array  # [B, *obs_shape] what the network saw (normalised, if so configured)
    hidden: jax.Array | None  # [1, B, S] the hidden state before the rollout (None: none)
    start: jax.Array  # [B] bool: obs is an episode's first observation
    action: jax.Array  # [B] int32, or [B, D] float32 (continuous; before any clipping)
    value: jax.Array  # [B, K] the algorithm's value of obs, one per reward stream
    reward: jax.Array  # [B]
    terminated: jax.Array  # [B] bool
    truncated: jax.Array  # [B] bool
    final_value: jax.Array  # [B, K] the value of final_obs: the bootstrap on truncation
    episode: dict[str, jax.Array]  # per-episode results where the episode ended
    record: dict[str, Any]  # what the algorithm's ``act`` kept (PPO: log_prob, legal)


@dataclass(frozen=True)
class OnPolicyStatic:
    """Everything fixed for a run (shapes, counts, flags, the env, the network's
    structure, the add-on, the optimiser), the algorithm's settings and pieces."""

    pieces: OnPolicy
    settings: OnPolicySettings  # the algorithm's (read its untraced options)
    env: VecEnv
    network: NetworkSettings  # what init builds
    graphdef: Any  # the network's structure; params travel in the RunState
    addon: Addon
    tx: optax.GradientTransformation  # nnxrl.optim: clip, (R)Adam, schedule, step size
    lr_schedule: Callable[[jax.Array], jax.Array]  # optimiser step -> step-size multiplier
    num_updates: int  # of the whole run: schedules' time base
    num_steps: int  # T: rollout length
    num_epochs: int
    num_minibatches: int
    num_streams: int  # K: 1, or 2 with an intrinsic value head
    episodic: tuple[bool, ...]  # per stream: cut returns at episode ends
    sequences: bool  # recurrent: minibatches of whole env sequences
    shuffle_groups: int  # blocks of envs shuffled apart (RunFacts)
    achievement_names: tuple[str, ...]
    return_window: int  # episodes in the rolling return (logging.return_window)
    normalize_obs: bool
    normalize_reward: bool
    obs_clip: float
    reward_clip: float

    @property
    def steps_per_update(self) -> int:
        return self.num_epochs * self.num_minibatches


def train_update(run_state: RunState, hp: Any, *, s: OnPolicyStatic) -> tuple[RunState, dict]:
    """One iteration: collect, let the add-on score and learn from the rollout, prepare
    the algorithm's targets, optimise its loss, summarise."""
    plan = s.pieces.plan(run_state, hp, s)
    run_state, trajectory, last_value, raw_obs = collect_rollout(run_state, plan, s)
    key, addon_key, epoch_key = jax.random.split(run_state.key, 3)
    last_seen = observe(run_state.normalizer.obs, run_state.obs, s.obs_clip)
    addon_state, bonus, addon_metrics = score_with_addon(
        run_state.addon, trajectory, last_seen, hp, addon_key, s
    )
    normalizer, scaled = normalize_rollout(run_state.normalizer, trajectory, raw_obs, hp, s)
    batch = s.pieces.prepare(trajectory._replace(reward=scaled), bonus, last_value, hp, s)
    update_state, loss_metrics = update_epochs(run_state, batch, epoch_key, hp, s)
    run_state = advance(run_state, update_state, key, addon_state, trajectory)
    run_state = run_state.replace(normalizer=normalizer)
    metrics = summarize(
        trajectory, batch, plan, bonus, run_state.recent_returns, loss_metrics, addon_metrics, s
    )
    return run_state, metrics


def collect_rollout(
    run_state: RunState, plan: Any, s: OnPolicyStatic
) -> tuple[RunState, Transition, jax.Array, jax.Array | None]:
    """Act for T steps in every env (``rollout_step``; inputs normalised with the
    moments from before): the advanced state, Transitions [T, B] (and a recurrent
    net's state before them), the bootstrap value [B, K] after the last step, raw
    observations [T, B, ...] if normalised (None else). The value of every final
    observation (the truncation bootstrap): in the scan if recurrent, else one batched
    pass over all T x B after it (measured faster)."""
    model = nnx.merge(s.graphdef, run_state.params)
    see = partial(observe, run_state.normalizer.obs, clip=s.obs_clip)
    first_hidden = run_state.hidden  # the update re-runs every env's sequence from it
    run_state, trajectory, final, raw = roll_out(run_state, model, see, plan, s)
    if s.sequences:
        trajectory = trajectory._replace(hidden=first_hidden[None])
    else:
        trajectory = trajectory._replace(final_value=s.pieces.bootstrap_all(model, *final, plan))
    last_legal = legal_actions(s.env, run_state.env_state)
    last_value = s.pieces.bootstrap(
        model, run_state.hidden, see(run_state.obs), run_state.start, last_legal, plan
    )
    return run_state, trajectory, last_value, raw


def roll_out(
    run_state: RunState, model: Any, see: Callable, plan: Any, s: Any
) -> tuple[RunState, Transition, Any, jax.Array | None]:
    """The scan of ``s.num_steps`` ``rollout_step``s (from the model's acting state,
    ``networks/acting.py``): the advanced state, Transitions [T, B], each step's final
    observation and its legal actions (None if recurrent), and the raw observations
    (None: not normalised)."""
    keep_raw = isinstance(run_state.normalizer.obs, Moments)
    step = partial(rollout_step, model=model, see=see, keep_raw=keep_raw, plan=plan, s=s)
    run_state = run_state.replace(hidden=acting_state(model, run_state.hidden))
    run_state, (trajectory, final, raw) = jax.lax.scan(step, run_state, length=s.num_steps)
    run_state = run_state.replace(hidden=carried_state(model, run_state.hidden))
    return run_state, trajectory, final, raw


def rollout_step(
    state: RunState, _: Any, *, model: Any, see: Callable, keep_raw: bool, plan: Any, s: Any
) -> tuple[RunState, tuple[Transition, Any, Any]]:
    """One step of every env, the action chosen by the algorithm's ``act`` among the
    legal ones: the advanced state, the Transition, the final observation and its
    legal actions (feed-forward: valued after the scan; None if recurrent, valued
    here from the new hidden state) and the raw observation (None: not normalised)."""
    key, action_key, step_key = jax.random.split(state.key, 3)
    obs, legal = see(state.obs), legal_actions(s.env, state.env_state)
    hidden, action, value, record = s.pieces.act(
        model, state.hidden, obs, state.start, legal, action_key, plan
    )
    env_state, out = s.env.step(step_key, state.env_state, action)
    final = see(out.final_obs), out.final_action_mask
    final_value = None
    if s.sequences:  # continue the episode from the new hidden state
        not_start = jnp.zeros_like(state.start)
        final_value = s.pieces.bootstrap(model, hidden, final[0], not_start, final[1], plan)
        final = None
    transition = Transition(
        obs=obs,
        hidden=None,  # recorded once, before the scan
        start=state.start,
        action=action,
        value=value,
        reward=out.reward,
        terminated=out.terminated,
        truncated=out.truncated,
        final_value=final_value,
        episode=out.episode,
        record=record,
    )
    raw = state.obs if keep_raw else None
    start = jnp.logical_or(out.terminated, out.truncated)
    state = state.replace(obs=out.obs, hidden=hidden, start=start, env_state=env_state, key=key)
    return state, (transition, final, raw)


def score_with_addon(
    addon_state: Any, trajectory: Transition, last_obs: jax.Array, hp: Any, key: jax.Array, s: Any
) -> tuple[Any, jax.Array, dict]:
    """The add-on (``s.addon``) scores the rollout ``trajectory`` [T, B], whose next
    observation is ``last_obs`` [B, ...], and learns from it: its new state, the bonus
    [T, B] and its metrics."""
    experience = to_experience(trajectory, last_obs, hp.intrinsic_gamma)
    addon_state, bonus, reward_metrics = s.addon.reward(addon_state, experience)
    addon_state, update_metrics = s.addon.update(addon_state, experience, key)
    return addon_state, bonus, {**reward_metrics, **update_metrics}


def normalize_rollout(
    normalizer: Any, trajectory: Transition, raw_obs: jax.Array, hp: Any, s: OnPolicyStatic
) -> tuple[Any, jax.Array]:
    """Merge the rollout's raw observations and discounted returns into the running
    statistics; returns them and the rewards [T, B] the targets use (scaled by the
    return's running std, if so configured: ``algos/normalization.py``)."""
    normalizer = update_obs(normalizer, raw_obs)
    ends = jnp.logical_or(trajectory.terminated, trajectory.truncated)
    return scale_rewards(normalizer, trajectory.reward, ends, hp.gamma, s.reward_clip)


def update_epochs(
    run_state: RunState, batch: Any, key: jax.Array, hp: Any, s: OnPolicyStatic
) -> tuple[UpdateState, dict]:
    """num_epochs passes over the batch, one optimiser step on the algorithm's loss per
    minibatch (``algos/sgd.py``), from the run's params, optimiser state and step
    count (the learning-rate schedule's clock); metrics [E, M] per loss term."""
    start = UpdateState(
        run_state.params, run_state.opt_state, run_state.update * s.steps_per_update
    )
    return sgd.update_epochs(start, batch, key, hp, s, s.pieces.loss)


def advance(
    run_state: RunState, update_state: UpdateState, key: jax.Array, addon: Any, trajectory: Any
) -> RunState:
    """The run state after an update: the epochs' parameters and optimiser state, the
    next key, the add-on's state, and the episodes that ended in the rollout."""
    return run_state.replace(
        params=update_state.params,
        opt_state=update_state.opt_state,
        key=key,
        update=run_state.update + 1,
        addon=addon,
        recent_returns=record_episodes(run_state.recent_returns, trajectory),
    )


def summarize(
    trajectory: Transition,
    batch: Any,
    plan: Any,
    bonus: jax.Array,
    recent_returns: ReturnWindow,
    loss_metrics: dict,
    addon_metrics: dict,
    s: OnPolicyStatic,
) -> dict:
    """Fixed-shape scalars for one update: losses averaged over epochs and minibatches,
    the episodes that ended (``algos/episode_metrics.py``), the rolling return over
    the last N (``algos/return_window.py``), the add-on's metrics, then the
    algorithm's own."""
    metrics = {k: v.mean() for k, v in loss_metrics.items()}
    metrics.update(episode_metrics(trajectory, bonus, s.achievement_names))
    metrics.update(window_metrics(recent_returns))
    metrics.update(addon_metrics)
    metrics.update(s.pieces.metrics(trajectory, batch, plan, s))
    return metrics


# --------------------------------------------------------------------------------------
# What the pieces share
# --------------------------------------------------------------------------------------


def starting_hidden(minibatch: Any) -> jax.Array | None:
    """A recurrent network's state before its minibatch's sequences' first step,
    [N, S], from the batch's ``hidden`` [1, N, S] (the rollout stores only that state,
    not one per step: a Transformer-XL's window is far larger than its inputs); None
    for a feed-forward network, whose ``unroll`` ignores it."""
    return None if minibatch.hidden is None else minibatch.hidden[0]


def per_stream(
    episodic_estimate: Callable[..., Any],
    continuing_estimate: Callable[..., Any],
    trajectory: Transition,
    rewards: jax.Array,
    last_value: jax.Array,
    gammas: tuple[jax.Array, jax.Array],
    trace: jax.Array,
    episodic: tuple[bool, ...],
) -> list[Any]:
    """A return estimator per reward stream k of rewards [T, B, K], values and
    last_value [B, K]: stream 0 (extrinsic) cuts at true ends and bootstraps through
    time limits (``episodic_estimate``, given the final values); a stream that is not
    episodic (an intrinsic one, optionally) runs on through episode ends
    (``continuing_estimate``). Each with its discount ``gammas[k]`` and ``trace``
    (GAE's lambda, or Q(lambda)'s)."""
    t = trajectory
    results = []
    for k, cut_at_ends in enumerate(episodic):
        args = (rewards[..., k], t.value[..., k], last_value[..., k])
        if cut_at_ends:
            args += (t.final_value[..., k], t.terminated, t.truncated)
            results.append(episodic_estimate(*args, gammas[k], trace))
        else:
            results.append(continuing_estimate(*args, gammas[k], trace))
    return results


# --------------------------------------------------------------------------------------
# Before the first update
# --------------------------------------------------------------------------------------


def init(key: jax.Array, *, s: OnPolicyStatic) -> RunState:
    """The run state before the first update: fresh networks, optimiser, envs,
    normalisation statistics and add-on (jittable, and vmappable over keys)."""
    network = build_network(
        s.network, s.env.spec, s.num_streams, jax.random.fold_in(key, 0), s.pieces.head
    )
    normalizer = init_normalizer(
        s.env.spec.obs_shape, s.env.num_envs, obs=s.normalize_obs, reward=s.normalize_reward
    )
    return initial_run_state(key, network, s.env, s.tx, s.addon, s.return_window, normalizer)


# --------------------------------------------------------------------------------------
# Assembly: the settings -> OnPolicyStatic, bound once
# --------------------------------------------------------------------------------------


def make_on_policy(
    pieces: OnPolicy,
    settings: OnPolicySettings,
    env: VecEnv,
    run: RunFacts,
    network: NetworkSettings | None = None,
    addon: Addon | None = None,
    streams: RewardStreams | None = None,
) -> Algorithm:
    """Bind an algorithm's ``pieces`` and ``settings`` (an ``OnPolicySettings``: the
    skeleton's, and the algorithm's own its pieces read), the network's (default
    ``NetworkSettings()``), the add-on (default: no bonus) and its reward streams
    (default: one) onto the skeleton; returns init and update."""
    s = bind_static(pieces, settings, env, run, network, addon, streams)
    return Algorithm(
        init=partial(init, s=s), update=partial(train_update, s=s), graphdef=s.graphdef
    )


def bind_static(
    pieces: OnPolicy,
    settings: OnPolicySettings,
    env: VecEnv,
    run: RunFacts,
    network: NetworkSettings | None,
    addon: Addon | None,
    streams: RewardStreams | None,
) -> OnPolicyStatic:
    """The ``OnPolicyStatic`` of ``make_on_policy``'s arguments."""
    network = network if network is not None else NetworkSettings()
    addon = addon if addon is not None else no_bonus(NoOptions(), None)
    streams = streams if streams is not None else RewardStreams()
    shapes = nnx.eval_shape(
        lambda: build_network(network, env.spec, streams.count, jax.random.key(0), pieces.head)
    )
    graphdef, _ = nnx.split(shapes)
    total_steps = run.num_updates * settings.num_epochs * settings.num_minibatches
    lr_schedule = linear_decay(total_steps) if settings.anneal_lr else constant_one
    return OnPolicyStatic(
        pieces=pieces,
        settings=settings,
        env=env,
        network=network,
        graphdef=graphdef,
        addon=addon,
        tx=make_optimizer(settings.adam_eps, lr_schedule, direction=settings.optimizer),
        lr_schedule=lr_schedule,
        num_updates=run.num_updates,
        num_steps=settings.num_steps,
        num_epochs=settings.num_epochs,
        num_minibatches=settings.num_minibatches,
        num_streams=streams.count,
        episodic=streams.episodic,
        sequences=network_kind(network.kind).sequences,
        shuffle_groups=run.shuffle_groups,
        achievement_names=env.spec.achievement_names,
        return_window=run.return_window,
        normalize_obs=settings.normalize_obs,
        normalize_reward=settings.normalize_reward,
        obs_clip=settings.obs_clip,
        reward_clip=settings.reward_clip,
    )
