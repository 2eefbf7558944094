"""The skeleton PPO and PQN share: both collect a fresh rollout of T steps in B envs,
let the add-on score it, compute returns per reward stream, run epochs of minibatch
steps on one batch (``algos/sgd.py``) and summarise. What lives here is what the two
have in common, once:

- ``Algorithm``: what every algorithm's ``make`` returns: its pure functions;
- ``OnPolicyStatic``: the settings every such algorithm binds (each algorithm's own
  static class adds its fields to it), and ``bind_static``, which builds one from an
  algorithm's settings, the run's facts and the reward streams;
- ``score_with_addon``: the add-on scores the rollout (its bonus) and learns from it;
- ``epochs_start``: the optimiser state the epochs start from;
- ``starting_hidden``: the hidden state a minibatch's env sequences start from;
- ``advance``: the run state after an update;
- ``per_stream``: a return estimator run per reward stream, cut at episode ends or
  not;
- ``shared_metrics``: what every algorithm reports for an update.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import optax
from flax import nnx

from nnxrl.algos.episode_metrics import episode_metrics
from nnxrl.algos.intrinsic_streams import to_experience
from nnxrl.algos.return_window import ReturnWindow, record_episodes, window_metrics
from nnxrl.algos.settings import RewardStreams, RunFacts
from nnxrl.envs import VecEnv
from nnxrl.intrinsic.base import Addon, NoOptions, no_bonus
from nnxrl.networks import build_network
from nnxrl.networks.registry import network_kind
from nnxrl.networks.settings import NetworkSettings
from nnxrl.optim import constant_one, linear_decay, make_optimizer
from nnxrl.types import RunState, UpdateState


class Algorithm(NamedTuple):
    """An algorithm's pure functions, configuration already bound (``make_ppo``,
    ``make_pqn``, or any registered algorithm's ``make``)."""

    init: Callable[[jax.Array], RunState]  # key -> the first RunState (jittable)
    update: Callable[[RunState, Any], tuple[RunState, dict]]  # (state, hp): one iteration
    graphdef: Any  # the network's structure, for rebuilding it from params


@dataclass(frozen=True)
class OnPolicyStatic:
    """Everything fixed for a run that every algorithm's phases need (shapes, counts,
    flags, the env, the network's structure, the add-on, the optimiser)."""

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

    @property
    def steps_per_update(self) -> int:
        return self.num_epochs * self.num_minibatches


def bind_static(
    cls: type,
    settings: Any,
    env: VecEnv,
    run: RunFacts,
    network: NetworkSettings | None,
    addon: Addon | None,
    streams: RewardStreams | None,
    head: str,
    direction: str = "adam",
    **own: Any,
) -> Any:
    """``cls`` (an ``OnPolicyStatic``) from an algorithm's ``settings`` (``num_steps``,
    ``num_epochs``, ``num_minibatches``, ``anneal_lr``, ``adam_eps``), the network's
    (default ``NetworkSettings()``) carrying ``head``, the add-on (default: no bonus),
    its reward streams (default: one) and the algorithm's ``own`` fields."""
    network = network if network is not None else NetworkSettings()
    addon = addon if addon is not None else no_bonus(NoOptions(), None)
    streams = streams if streams is not None else RewardStreams()
    shapes = nnx.eval_shape(
        lambda: build_network(network, env.spec, streams.count, jax.random.key(0), head)
    )
    graphdef, _ = nnx.split(shapes)
    total_steps = run.num_updates * settings.num_epochs * settings.num_minibatches
    lr_schedule = linear_decay(total_steps) if settings.anneal_lr else constant_one
    return cls(
        env=env,
        network=network,
        graphdef=graphdef,
        addon=addon,
        tx=make_optimizer(settings.adam_eps, lr_schedule, direction=direction),
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
        **own,
    )


def score_with_addon(
    addon_state: Any, trajectory: Any, last_obs: jax.Array, hp: Any, key: jax.Array, s: Any
) -> tuple[Any, jax.Array, dict]:
    """The add-on (``s.addon``) scores the rollout ``trajectory`` [T, B], whose next
    observation is ``last_obs`` [B, ...], and learns from it: its new state, the bonus
    [T, B] and its metrics."""
    experience = to_experience(trajectory, last_obs, hp.intrinsic_gamma)
    addon_state, bonus, reward_metrics = s.addon.reward(addon_state, experience)
    addon_state, update_metrics = s.addon.update(addon_state, experience, key)
    return addon_state, bonus, {**reward_metrics, **update_metrics}


def epochs_start(run_state: RunState, s: OnPolicyStatic) -> UpdateState:
    """What the epochs update: params and optimiser state, and the optimiser step
    count so far (the learning-rate schedule's clock)."""
    return UpdateState(run_state.params, run_state.opt_state, run_state.update * s.steps_per_update)


def starting_hidden(minibatch: Any) -> jax.Array | None:
    """A recurrent network's state before its minibatch's sequences' first step,
    [N, S], from the batch's ``hidden`` [1, N, S] (the rollout stores only that state,
    not one per step: a Transformer-XL's window is far larger than its inputs); None
    for a feed-forward network, whose ``unroll`` ignores it."""
    return None if minibatch.hidden is None else minibatch.hidden[0]


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


def per_stream(
    episodic_estimate: Callable[..., Any],
    continuing_estimate: Callable[..., Any],
    trajectory: Any,  # an algorithm's Transitions [T, B]
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


def shared_metrics(
    trajectory: Any,  # an algorithm's Transitions [T, B]
    bonus: jax.Array,
    recent_returns: ReturnWindow,
    loss_metrics: dict,
    addon_metrics: dict,
    s: OnPolicyStatic,
) -> dict:
    """Fixed-shape scalars every algorithm reports for an update: losses averaged over
    epochs and minibatches, the episodes that ended (``algos/episode_metrics.py``),
    the rolling return over the last N (``algos/return_window.py``) and the add-on's
    metrics."""
    metrics = {k: v.mean() for k, v in loss_metrics.items()}
    metrics.update(episode_metrics(trajectory, bonus, s.achievement_names))
    metrics.update(window_metrics(recent_returns))
    metrics.update(addon_metrics)
    return metrics
