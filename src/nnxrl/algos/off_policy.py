"""The off-policy skeleton: DQN (``algos/dqn.py``), SAC (``algos/sac.py``) and any
algorithm of that family run this file's ``train_update``; each supplies only what
differs, as an ``OffPolicy`` of pure functions (its pieces).

The file reads in execution order. ``train_update`` is one iteration and calls its
phases by name: the algorithm's ``plan`` (e.g. the exploration epsilon) -> the
on-policy skeleton's ``roll_out`` (the same acting among legal actions, env steps
and episode records, ``algos/on_policy.py``) -> ``score_with_addon`` -> ``store``
(the rollout's transitions into the replay buffer, ``algos/replay.py``) -> ``learn``
(once every env's row holds ``learning_starts`` steps: ``gradient_steps`` batches
sampled uniformly, each one optimiser step on the algorithm's ``loss`` and one move
of the target network) -> ``advance`` -> ``summarize``.

The add-on's bonus is computed at insertion: the add-on scores the fresh rollout
and learns from it as it does for on-policy algorithms (every add-on runs
unchanged), and the bonus is stored with the extrinsic reward. Computing it at
sampling instead would score a transition with whatever the add-on has become by
then, once per time it is sampled; the bonus of a transition is its novelty when
it was experienced, which is what insertion keeps.

The replay buffer, the target network and the count of gradient steps are the run
state's ``memory`` (``Memory``), so a checkpoint holds them and a resumed run goes
on exactly as an uninterrupted one. Feed-forward networks only: a recurrent
network's replay (stored states, burn-in) is not built.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import nnx, struct

from nnxrl import optim
from nnxrl.algos.initial_state import initial_run_state
from nnxrl.algos.intrinsic_streams import combine_rewards
from nnxrl.algos.normalization import init_normalizer
from nnxrl.algos.on_policy import Algorithm, advance, roll_out, score_with_addon, summarize
from nnxrl.algos.replay import Stored, make_buffer, stored_transitions
from nnxrl.algos.settings import RewardStreams, RunFacts
from nnxrl.envs import VecEnv
from nnxrl.envs.base import legal_actions
from nnxrl.intrinsic.base import Addon, NoOptions, no_bonus
from nnxrl.networks import build_network
from nnxrl.networks.settings import NetworkSettings
from nnxrl.optim import constant_one, linear_decay, make_optimizer
from nnxrl.types import RunState, UpdateState


class OffPolicy(NamedTuple):
    """What an off-policy algorithm supplies to the skeleton: pure functions of the
    network ``model``, arrays, the update's ``plan``, the traced ``hp`` and the static
    ``s`` (an ``OffPolicyStatic``)."""

    head: str  # the head its network carries (networks/heads.py)
    # (run_state, hp, s) -> what stays fixed over one update's rollout
    plan: Callable[..., Any]
    # as OnPolicy.act: (model, hidden, obs, start, legal, key, plan) -> (hidden, action,
    # value [B, K], record)
    act: Callable[..., tuple[Any, jax.Array, jax.Array, dict]]
    # (params, target_params, sample [N, n, ...] (a replay.Stored), key, hp, s) ->
    # (scalar, metrics); the key for what the loss samples (SAC's actions)
    loss: Callable[..., tuple[jax.Array, dict]]
    # (trajectory, batch, plan, s) -> its own metrics, after the shared ones
    metrics: Callable[..., dict]


@struct.dataclass
class Memory:
    """An off-policy algorithm's own state in the run state (``RunState.memory``)."""

    buffer: Any  # flashbax's trajectory-buffer state: every env's row of transitions
    target: Any  # the target network's parameters
    learned: jax.Array  # int32: gradient steps taken so far (the target's clock)


@dataclass(frozen=True)
class OffPolicyStatic:
    """Everything fixed for a run: the skeleton's fields, the buffer's functions, the
    algorithm's settings and pieces (the fields ``roll_out``, ``score_with_addon`` and
    ``summarize`` read are the on-policy skeleton's names)."""

    pieces: OffPolicy
    settings: Any  # the algorithm's settings (an OffPolicySettings: DQN's, SAC's, ...)
    env: VecEnv
    network: NetworkSettings
    graphdef: Any
    addon: Addon
    tx: optax.GradientTransformation
    buffer: Any  # flashbax's TrajectoryBuffer: init, add, sample, can_sample
    num_updates: int
    num_steps: int
    num_streams: int
    episodic: tuple[bool, ...]
    achievement_names: tuple[str, ...]
    return_window: int
    sequences: bool = False  # feed-forward only


def train_update(run_state: RunState, hp: Any, *, s: OffPolicyStatic) -> tuple[RunState, dict]:
    """One iteration: act and step, let the add-on score the rollout, store it, learn
    from sampled batches, summarise."""
    plan = s.pieces.plan(run_state, hp, s)
    model = nnx.merge(s.graphdef, run_state.params)
    run_state, trajectory, final, _ = roll_out(run_state, model, unnormalized, plan, s)
    key, addon_key, learn_key = jax.random.split(run_state.key, 3)
    addon_state, bonus, addon_metrics = score_with_addon(
        run_state.addon, trajectory, run_state.obs, hp, addon_key, s
    )
    memory = store(run_state.memory, trajectory, final, bonus, hp, s)
    params, opt_state, memory, loss_metrics = learn(run_state, memory, learn_key, hp, s)
    update_state = UpdateState(params, opt_state, memory.learned)
    run_state = advance(run_state, update_state, key, addon_state, trajectory)
    run_state = run_state.replace(memory=memory)
    metrics = summarize(
        trajectory, memory, plan, bonus, run_state.recent_returns, loss_metrics, addon_metrics, s
    )
    return run_state, metrics


def unnormalized(obs: jax.Array) -> jax.Array:
    """What the network sees: the observation itself (no running statistics)."""
    return obs


def store(
    memory: Memory, trajectory: Any, final: Any, bonus: jax.Array, hp: Any, s: OffPolicyStatic
) -> Memory:
    """The rollout's transitions [T, B], with their rewards per stream (the add-on's
    bonus in them: ``intrinsic_streams.combine_rewards``), added to every env's row."""
    rewards = combine_rewards(
        trajectory.reward, bonus, hp.intrinsic_reward_coef, num_streams=s.num_streams
    )
    added = stored_transitions(trajectory, final, rewards)
    return memory.replace(buffer=s.buffer.add(memory.buffer, added))


def learn(
    run_state: RunState, memory: Memory, key: jax.Array, hp: Any, s: OffPolicyStatic
) -> tuple[Any, Any, Memory, dict]:
    """``gradient_steps`` of ``learn_step`` once the buffer can be sampled (every row
    holds ``learning_starts`` steps); before that the state is kept and the losses
    read 0. Metrics [G] per loss term. The buffer is read, never carried: passing it
    through the branch would copy it every update."""
    keys = jax.random.split(key, s.settings.gradient_steps)
    carry = (run_state.params, run_state.opt_state, memory.target, memory.learned)
    step = partial(learn_step, buffer=memory.buffer, hp=hp, s=s)
    steps = partial(jax.lax.scan, step, xs=keys)
    shapes = jax.eval_shape(steps, carry)[1]

    def skip(carry: tuple) -> tuple:
        return carry, jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), shapes)

    (params, opt_state, target, learned), metrics = jax.lax.cond(
        s.buffer.can_sample(memory.buffer), steps, skip, carry
    )
    return params, opt_state, memory.replace(target=target, learned=learned), metrics


def learn_step(
    carry: tuple[Any, Any, Any, jax.Array],
    key: jax.Array,
    *,
    buffer: Any,
    hp: Any,
    s: OffPolicyStatic,
) -> tuple[tuple[Any, Any, Any, jax.Array], dict]:
    """One sampled batch: an optimiser step on the algorithm's loss, then the target
    network's move (``move_target``)."""
    params, opt_state, target, learned = carry
    sample = s.buffer.sample(buffer, key).experience  # [N, n, ...]
    loss_key = jax.random.fold_in(key, 1)
    grad_fn = jax.value_and_grad(s.pieces.loss, has_aux=True)
    (_, metrics), grads = grad_fn(params, target, sample, loss_key, hp, s)
    params, opt_state = optim.step(
        s.tx,
        grads,
        opt_state,
        params,
        learning_rate=hp.learning_rate,
        max_grad_norm=hp.max_grad_norm,
    )
    learned = learned + 1
    target = move_target(target, params, learned, hp, s)
    return (params, opt_state, target, learned), metrics


def move_target(target: Any, params: Any, learned: jax.Array, hp: Any, s: OffPolicyStatic) -> Any:
    """theta' <- tau theta + (1 - tau) theta' after every ``target_period``-th
    gradient step (tau = 1: a copy, every period; period 1 and tau < 1: Polyak)."""
    due = learned % s.settings.target_period == 0
    moved = optax.incremental_update(params, target, hp.tau)
    return jax.tree.map(lambda new, old: jnp.where(due, new, old), moved, target)


def set_aside_transitions(run_state: RunState) -> tuple[RunState, Any]:
    """(the state without its replay buffer's stored transitions, those transitions);
    a state with no replay buffer comes back as it is, with None. The write position
    stays in the state (see ``run/chunk.py``: what the guard holds back)."""
    if not isinstance(getattr(run_state, "memory", None), Memory):
        return run_state, None
    buffer = run_state.memory.buffer
    memory = run_state.memory.replace(buffer=buffer.replace(experience=None))
    return run_state.replace(memory=memory), buffer.experience


def put_back_transitions(run_state: RunState, transitions: Any) -> RunState:
    """The inverse of ``set_aside_transitions``."""
    if transitions is None:
        return run_state
    buffer = run_state.memory.buffer.replace(experience=transitions)
    return run_state.replace(memory=run_state.memory.replace(buffer=buffer))


# --------------------------------------------------------------------------------------
# Before the first update
# --------------------------------------------------------------------------------------


def init(key: jax.Array, *, s: OffPolicyStatic) -> RunState:
    """The run state before the first update: fresh network, its copy as the target,
    optimiser, envs, add-on and an empty buffer (jittable, and vmappable over keys)."""
    network = build_network(
        s.network, s.env.spec, s.num_streams, jax.random.fold_in(key, 0), s.pieces.head
    )
    normalizer = init_normalizer(s.env.spec.obs_shape, s.env.num_envs, obs=False, reward=False)
    run_state = initial_run_state(key, network, s.env, s.tx, s.addon, s.return_window, normalizer)
    example = example_transition(run_state, s)
    memory = Memory(s.buffer.init(example), run_state.params, jnp.int32(0))
    return run_state.replace(memory=memory)


def example_transition(run_state: RunState, s: OffPolicyStatic) -> Any:
    """One env's transition of the stored shapes and dtypes (the buffer's layout)."""
    legal = legal_actions(s.env, run_state.env_state)
    spec = s.env.spec
    action = jnp.zeros(spec.action_dim, jnp.float32) if spec.continuous else jnp.int32(0)
    return Stored(
        obs=run_state.obs[0],
        action=action,
        reward=jnp.zeros(s.num_streams, jnp.float32),
        terminated=jnp.bool_(False),
        truncated=jnp.bool_(False),
        next_obs=run_state.obs[0],
        next_legal=() if legal is None else legal[0],
    )


# --------------------------------------------------------------------------------------
# Assembly: the settings -> OffPolicyStatic, bound once
# --------------------------------------------------------------------------------------


def make_off_policy(
    pieces: OffPolicy,
    settings: Any,
    env: VecEnv,
    run: RunFacts,
    network: NetworkSettings | None = None,
    addon: Addon | None = None,
    streams: RewardStreams | None = None,
) -> Algorithm:
    """Bind an off-policy algorithm's ``pieces`` and ``settings`` (``num_steps``,
    ``gradient_steps``, ``buffer_size``, ``batch_size``, ``learning_starts``,
    ``n_step``, ``target_period``, ``anneal_lr``, ``adam_eps``, and its own), the
    network's, the add-on and its reward streams onto the skeleton."""
    network = network if network is not None else NetworkSettings()
    addon = addon if addon is not None else no_bonus(NoOptions(), None)
    streams = streams if streams is not None else RewardStreams()
    shapes = nnx.eval_shape(
        lambda: build_network(network, env.spec, streams.count, jax.random.key(0), pieces.head)
    )
    total_steps = run.num_updates * settings.gradient_steps
    schedule = linear_decay(total_steps) if settings.anneal_lr else constant_one
    starts = -(-settings.learning_starts // env.num_envs)  # steps per env row
    s = OffPolicyStatic(
        pieces=pieces,
        settings=settings,
        env=env,
        network=network,
        graphdef=nnx.split(shapes)[0],
        addon=addon,
        tx=make_optimizer(settings.adam_eps, schedule),
        buffer=make_buffer(
            settings.buffer_size, env.num_envs, settings.batch_size, settings.n_step, starts
        ),
        num_updates=run.num_updates,
        num_steps=settings.num_steps,
        num_streams=streams.count,
        episodic=streams.episodic,
        achievement_names=env.spec.achievement_names,
        return_window=run.return_window,
    )
    return Algorithm(
        init=partial(init, s=s), update=partial(train_update, s=s), graphdef=s.graphdef
    )
