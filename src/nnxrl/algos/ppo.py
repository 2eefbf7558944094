"""Proximal policy optimisation (Schulman et al. 2017) over batched envs.

One update = ``collect_rollout`` (T steps of B envs) -> the intrinsic add-on's
``reward`` and ``update`` -> ``combine_rewards`` into K reward streams ->
``compute_advantages`` (GAE per stream) -> ``num_epochs`` x ``update_epoch``
(shuffle, then ``update_minibatch`` per minibatch) -> ``summarize`` (fixed-shape
metrics). ``make_ppo`` binds the configuration with ``functools.partial`` and
returns pure functions, ``init`` and ``update``; the caller scans ``update`` into
chunks (``nnxrl.chunk``) and jits (and vmaps over seeds) only those.

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

from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from nnxrl.config import Config
from nnxrl.envs import VecEnv
from nnxrl.intrinsic.base import Addon, Experience, NoOptions, no_bonus
from nnxrl.networks import ActorCritic, RecurrentActorCritic
from nnxrl.ops.gae import continuing_gae, episodic_gae
from nnxrl.ops.losses import normalize, policy_loss, value_loss
from nnxrl.ops.minibatch import flatten_time, shuffle_env_sequences, shuffle_into_minibatches
from nnxrl.types import Batch, Hyperparams, RunState, Transition, UpdateState


class PPO(NamedTuple):
    """The algorithm's pure functions, configuration already bound."""

    init: Callable[[jax.Array, Any], RunState]  # (key, params) -> RunState
    init_params: Callable[[jax.Array], Any]  # key -> (network, add-on) params (host side)
    update: Callable[[RunState, Hyperparams], tuple[RunState, dict]]  # one PPO iteration
    graphdef: Any  # the network's structure, for rebuilding it from params


def hyperparams_from(config: Config) -> Hyperparams:
    p, i = config.ppo, config.intrinsic
    return Hyperparams(
        *(
            jnp.float32(v)
            for v in (
                p.learning_rate,
                p.ent_coef,
                p.vf_coef,
                p.clip_eps,
                p.value_clip_eps,
                p.gamma,
                p.gae_lambda,
                p.max_grad_norm,
                i.reward_coef,
                i.gamma,
                i.extrinsic_adv_coef,
                i.intrinsic_adv_coef,
            )
        )
    )


def build_network(
    config: Config, env: VecEnv, key: jax.Array
) -> ActorCritic | RecurrentActorCritic:
    n = config.network
    network = RecurrentActorCritic if n.kind == "gru" else ActorCritic
    return network(
        env.spec.obs_shape,
        env.spec.num_actions,
        n.num_layers,
        n.width,
        n.activation,
        n.conv_features,
        rngs=nnx.Rngs(params=key),
        num_values=num_reward_streams(config),
    )


def num_reward_streams(config: Config) -> int:
    """K: 2 when the intrinsic reward has its own value head, else 1."""
    return 2 if config.intrinsic.mode == "value_head" else 1


# --------------------------------------------------------------------------------------
# Phases
# --------------------------------------------------------------------------------------


def init_params(key: jax.Array, *, make_network: Callable, addon: Addon) -> Any:
    """(network params, add-on params) for ``key``, built eagerly, outside jit."""
    network = nnx.state(make_network(jax.random.fold_in(key, 0)))
    return network, addon.init_params(jax.random.fold_in(key, 2))


def init(
    key: jax.Array,
    params: Any,
    *,
    env: VecEnv,
    tx: optax.GradientTransformation,
    addon: Addon,
    hidden: jax.Array,
) -> RunState:
    """The run state before the first update, around freshly initialised params."""
    network_params, addon_params = params
    env_key, addon_key, key = jax.random.split(jax.random.fold_in(key, 1), 3)
    obs, env_state = env.reset(env_key)
    return RunState(
        params=network_params,
        opt_state=tx.init(network_params),
        env_state=env_state,
        obs=obs,
        hidden=hidden,
        start=jnp.ones(env.num_envs, bool),
        key=key,
        update=jnp.int32(0),
        addon=addon.init(addon_key, addon_params),
    )


def collect_rollout(
    run_state: RunState, *, env: VecEnv, graphdef: Any, num_steps: int
) -> tuple[RunState, Transition, jax.Array]:
    """Act for num_steps in every env. Returns the advanced state, the Transitions
    [T, B] and V(obs) [B, K] for the observation after the last step."""
    model = nnx.merge(graphdef, run_state.params)

    def env_step(state: RunState, _: Any) -> tuple[RunState, Transition]:
        key, action_key, step_key = jax.random.split(state.key, 3)
        hidden, dist, value = model.step(state.hidden, state.obs, state.start)
        action = dist.sample(action_key)
        env_state, out = env.step(step_key, state.env_state, action)
        # V(final obs) continues the same episode: one more step from the new hidden
        _, _, final_value = model.step(hidden, out.final_obs, jnp.zeros_like(state.start))
        transition = Transition(
            obs=state.obs,
            hidden=state.hidden,
            start=state.start,
            action=action,
            log_prob=dist.log_prob(action),
            value=value,
            reward=out.reward,
            terminated=out.terminated,
            truncated=out.truncated,
            final_value=final_value,
            episode=out.episode,
        )
        start = jnp.logical_or(out.terminated, out.truncated)
        state = state.replace(obs=out.obs, hidden=hidden, start=start, env_state=env_state, key=key)
        return state, transition

    run_state, trajectory = jax.lax.scan(env_step, run_state, length=num_steps)
    _, _, last_value = model.step(run_state.hidden, run_state.obs, run_state.start)
    return run_state, trajectory, last_value


def to_experience(trajectory: Transition, last_obs: jax.Array) -> Experience:
    """The rollout as an intrinsic add-on sees it."""
    return Experience(
        obs=jnp.concatenate([trajectory.obs, last_obs[None]], axis=0),
        action=trajectory.action,
        episode_end=jnp.logical_or(trajectory.terminated, trajectory.truncated),
    )


def combine_rewards(
    extrinsic: jax.Array, bonus: jax.Array, hp: Hyperparams, *, num_streams: int
) -> jax.Array:
    """[T, B] each -> rewards [T, B, K]: r + c b (K = 1) or (r, c b) (K = 2)."""
    scaled = hp.intrinsic_reward_coef * bonus
    if num_streams == 1:
        return (extrinsic + scaled)[..., None]
    return jnp.stack([extrinsic, scaled], axis=-1)


def compute_advantages(
    trajectory: Transition,
    rewards: jax.Array,
    last_value: jax.Array,
    hp: Hyperparams,
    *,
    episodic: tuple[bool, ...],
) -> tuple[jax.Array, jax.Array]:
    """GAE per reward stream: rewards [T, B, K], last_value [B, K] -> advantages and
    value targets, [T, B, K] each. Stream 0 (extrinsic) cuts at true ends and
    bootstraps through time limits; stream 1 (intrinsic) uses its own discount and,
    when not episodic, runs on through episode ends, bootstrapped with its own value."""
    t = trajectory
    gammas = (hp.gamma, hp.intrinsic_gamma)
    results = []
    for k, cut_at_ends in enumerate(episodic):
        args = (rewards[..., k], t.value[..., k], last_value[..., k])
        if cut_at_ends:
            args += (t.final_value[..., k], t.terminated, t.truncated)
            results.append(episodic_gae(*args, gammas[k], hp.gae_lambda))
        else:
            results.append(continuing_gae(*args, gammas[k], hp.gae_lambda))
    advantages, targets = zip(*results, strict=True)
    return jnp.stack(advantages, axis=-1), jnp.stack(targets, axis=-1)


def weigh_advantages(advantages: jax.Array, hp: Hyperparams) -> jax.Array:
    """[T, B, K] -> [T, B]: the advantage the policy follows (K = 1: unchanged)."""
    if advantages.shape[-1] == 1:
        return advantages[..., 0]
    return hp.extrinsic_adv_coef * advantages[..., 0] + hp.intrinsic_adv_coef * advantages[..., 1]


def ppo_loss(
    params: Any,
    minibatch: Batch,
    hp: Hyperparams,
    *,
    graphdef: Any,
    clip_value: bool,
    normalize_minibatch: bool,
) -> tuple[jax.Array, dict]:
    """L = L_policy + c_v L_value - c_e H on one minibatch; returns (L, loss metrics)."""
    model = nnx.merge(graphdef, params)
    dist, value = model.unroll(minibatch.hidden, minibatch.obs, minibatch.start)
    log_prob = dist.log_prob(minibatch.action)
    advantage = normalize(minibatch.advantage) if normalize_minibatch else minibatch.advantage
    pol, approx_kl, clip_fraction = policy_loss(
        log_prob, minibatch.log_prob, advantage, hp.clip_eps
    )
    clip = hp.value_clip_eps if clip_value else None
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


def clip_by_global_norm(grads: Any, max_norm: jax.Array) -> tuple[Any, jax.Array]:
    """g * min(1, max_norm / ||g||); returns the clipped grads and ||g||."""
    norm = optax.tree.norm(grads)
    scale = jnp.minimum(1.0, max_norm / jnp.maximum(norm, 1e-12))
    return jax.tree.map(lambda g: g * scale, grads), norm


def update_minibatch(
    state: UpdateState,
    minibatch: Batch,
    hp: Hyperparams,
    *,
    loss_fn: Callable,
    tx: optax.GradientTransformation,
    lr_schedule: Callable,
) -> tuple[UpdateState, dict]:
    """One optimiser step: clip the gradient's global norm, Adam, scaled step size."""
    grads, metrics = jax.grad(loss_fn, has_aux=True)(state.params, minibatch, hp)
    grads, grad_norm = clip_by_global_norm(grads, hp.max_grad_norm)
    direction, opt_state = tx.update(grads, state.opt_state, state.params)
    lr = hp.learning_rate * lr_schedule(state.opt_step)
    params = jax.tree.map(lambda p, d: p - lr * d, state.params, direction)
    metrics = {**metrics, "stats/grad_norm": grad_norm, "stats/learning_rate": lr}
    return UpdateState(params, opt_state, state.opt_step + 1), metrics


def update_epoch(
    carry: tuple[UpdateState, jax.Array],
    _: Any,
    batch: Batch,
    hp: Hyperparams,
    *,
    step_fn: Callable,
    shuffle_fn: Callable,
) -> tuple[tuple[UpdateState, jax.Array], dict]:
    """Reshuffle the batch, then one optimiser step per minibatch."""
    state, key = carry
    key, shuffle_key = jax.random.split(key)
    minibatches = shuffle_fn(shuffle_key, batch)
    state, metrics = jax.lax.scan(partial(step_fn, hp=hp), state, minibatches)
    return (state, key), metrics


def summarize(
    trajectory: Transition,
    batch: Batch,
    bonus: jax.Array,
    loss_metrics: dict,
    addon_metrics: dict,
    achievement_names: tuple[str, ...],
) -> dict:
    """Fixed-shape scalars for one update: episode means over episodes that ended
    in it (with their count, so the host can report null for none), losses averaged
    over epochs and minibatches, the add-on's metrics, and the extrinsic value
    function's explained variance."""
    ended = jnp.logical_or(trajectory.terminated, trajectory.truncated).astype(jnp.float32)
    count = ended.sum()

    def episode_mean(x):
        weights = ended.reshape(ended.shape + (1,) * (x.ndim - 2))
        return (x * weights).sum(axis=(0, 1)) / jnp.maximum(count, 1.0)

    metrics = {k: v.mean() for k, v in loss_metrics.items()}
    metrics["episode_count"] = count
    metrics["episode_return"] = episode_mean(trajectory.episode["return"])
    metrics["episode_length"] = episode_mean(trajectory.episode["length"])
    if achievement_names:
        rates = episode_mean(trajectory.episode["achievements"])
        metrics.update({f"achievements/{n}": rates[i] for i, n in enumerate(achievement_names)})
    metrics["reward/extrinsic"] = trajectory.reward.mean()
    metrics["reward/intrinsic"] = bonus.mean()
    metrics.update(addon_metrics)
    target, value = batch.target[..., 0], batch.value[..., 0]
    residual = jnp.var(target - value)
    metrics["stats/explained_variance"] = 1.0 - residual / jnp.maximum(jnp.var(target), 1e-8)
    return metrics


def train_update(
    run_state: RunState,
    hp: Hyperparams,
    *,
    rollout_fn: Callable,
    epoch_fn: Callable,
    addon: Addon,
    advantage_fn: Callable,
    num_streams: int,
    num_epochs: int,
    steps_per_update: int,
    advantage_normalization: str,
    achievement_names: tuple[str, ...],
    sequences: bool,
) -> tuple[RunState, dict]:
    """One PPO iteration: collect, let the add-on score and learn from the rollout,
    estimate advantages, optimise, summarise."""
    run_state, trajectory, last_value = rollout_fn(run_state)
    key, addon_key, epoch_key = jax.random.split(run_state.key, 3)
    experience = to_experience(trajectory, run_state.obs)
    addon_state, bonus, reward_metrics = addon.reward(run_state.addon, experience)
    addon_state, update_metrics = addon.update(addon_state, experience, addon_key)
    rewards = combine_rewards(trajectory.reward, bonus, hp, num_streams=num_streams)
    stream_advantages, targets = advantage_fn(trajectory, rewards, last_value, hp)
    advantages = weigh_advantages(stream_advantages, hp)
    if advantage_normalization == "batch":
        advantages = normalize(advantages)
    batch = Batch(
        obs=trajectory.obs,
        hidden=trajectory.hidden,
        start=trajectory.start,
        action=trajectory.action,
        log_prob=trajectory.log_prob,
        value=trajectory.value,
        advantage=advantages,
        target=targets,
    )
    if not sequences:  # a recurrent network trains on whole env sequences
        batch = flatten_time(batch)
    start = UpdateState(run_state.params, run_state.opt_state, run_state.update * steps_per_update)
    (state, _), loss_metrics = jax.lax.scan(
        partial(epoch_fn, batch=batch, hp=hp), (start, epoch_key), length=num_epochs
    )
    run_state = run_state.replace(
        params=state.params,
        opt_state=state.opt_state,
        key=key,
        update=run_state.update + 1,
        addon=addon_state,
    )
    addon_metrics = {**reward_metrics, **update_metrics}
    metrics = summarize(trajectory, batch, bonus, loss_metrics, addon_metrics, achievement_names)
    return run_state, metrics


# --------------------------------------------------------------------------------------
# Assembly
# --------------------------------------------------------------------------------------


def linear_decay(total_steps: int) -> Callable[[jax.Array], jax.Array]:
    """Multiplier 1 -> 0 over optimiser steps 0 .. total_steps - 1 (exactly 0 at the last)."""
    return lambda step: 1.0 - step / max(total_steps - 1, 1)


def make_ppo(config: Config, env: VecEnv, addon: Addon | None = None) -> PPO:
    """Bind the configuration and the intrinsic add-on (default: no bonus) onto the
    phases; returns init and update."""
    p = config.ppo
    addon = addon if addon is not None else no_bonus(NoOptions(), None)
    num_streams = num_reward_streams(config)
    make_network = partial(build_network, config, env)
    network = make_network(jax.random.key(0))
    graphdef, _ = nnx.split(network)
    sequences = config.network.kind == "gru"  # minibatches of whole env sequences
    if sequences:
        shuffle_fn = partial(shuffle_env_sequences, num_minibatches=p.num_minibatches)
    else:
        shuffle_fn = partial(shuffle_into_minibatches, num_minibatches=p.num_minibatches)
    tx = optax.scale_by_adam(eps=p.adam_eps)
    steps_per_update = p.num_epochs * p.num_minibatches
    total_steps = config.num_updates * steps_per_update
    lr_schedule = linear_decay(total_steps) if p.anneal_lr else (lambda step: 1.0)

    loss_fn = partial(
        ppo_loss,
        graphdef=graphdef,
        clip_value=p.clip_value,
        normalize_minibatch=p.advantage_normalization == "minibatch",
    )
    step_fn = partial(update_minibatch, loss_fn=loss_fn, tx=tx, lr_schedule=lr_schedule)
    epoch_fn = partial(update_epoch, step_fn=step_fn, shuffle_fn=shuffle_fn)
    rollout_fn = partial(collect_rollout, env=env, graphdef=graphdef, num_steps=p.num_steps)
    update_fn = partial(
        train_update,
        rollout_fn=rollout_fn,
        epoch_fn=epoch_fn,
        addon=addon,
        advantage_fn=partial(
            compute_advantages, episodic=(True, config.intrinsic.episodic)[:num_streams]
        ),
        num_streams=num_streams,
        num_epochs=p.num_epochs,
        steps_per_update=steps_per_update,
        advantage_normalization=p.advantage_normalization,
        achievement_names=env.spec.achievement_names,
        sequences=sequences,
    )
    return PPO(
        init=partial(
            init, env=env, tx=tx, addon=addon, hidden=network.initial_hidden(env.num_envs)
        ),
        init_params=partial(init_params, make_network=make_network, addon=addon),
        update=update_fn,
        graphdef=graphdef,
    )
