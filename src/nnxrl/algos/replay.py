"""The replay buffer an off-policy algorithm keeps in its run state: flashbax's
trajectory buffer (uniform sampling), one per seed, filled and sampled inside the
compiled chunk, saved in checkpoints with the rest of the state.

Each env is a row of the buffer, its transitions in time order, so that a sample
is ``n`` consecutive steps of one env: an n-step return is computed when a batch is
sampled (``n_step_targets``), across episode ends as the stored flags say. A
transition holds its next observation (the final one where an episode ended, so
that a time limit is bootstrapped from the state it cut, not from the reset)."""

from __future__ import annotations

from typing import Any, NamedTuple

import flashbax as fbx
import jax
import jax.numpy as jnp


class Stored(NamedTuple):
    """One env step as the buffer keeps it (leading axes [B, T] when added)."""

    obs: jax.Array  # [*obs_shape] what the network saw
    action: jax.Array  # [] or [action_dim]
    reward: jax.Array  # [K] per reward stream (the add-on's bonus in it, or in its own)
    terminated: jax.Array  # [] bool: the episode ended in a terminal state
    truncated: jax.Array  # [] bool: a time limit cut it
    next_obs: jax.Array  # [*obs_shape] the observation after the step (final if ended)
    next_legal: Any  # [A] bool legal actions at next_obs, () where every action is


def make_buffer(
    capacity: int, num_envs: int, batch_size: int, sequence: int, min_steps: int
) -> Any:
    """A flashbax trajectory buffer of ``capacity`` transitions over ``num_envs``
    rows, sampling ``batch_size`` runs of ``sequence`` consecutive steps once every
    row holds ``min_steps`` (at least ``sequence``)."""
    per_env = max(capacity // num_envs, sequence + 1)
    return fbx.make_trajectory_buffer(
        add_batch_size=num_envs,
        sample_batch_size=batch_size,
        sample_sequence_length=sequence,
        period=1,
        min_length_time_axis=max(min_steps, sequence),
        max_length_time_axis=per_env,
    )


def stored_transitions(trajectory: Any, final: Any, rewards: jax.Array) -> Stored:
    """A rollout's Transitions [T, B], the final observations and legal actions of
    its steps ``final`` and rewards [T, B, K] -> what the buffer adds, [B, T, ...]."""
    final_obs, final_legal = final
    stored = Stored(
        obs=trajectory.obs,
        action=trajectory.action,
        reward=rewards,
        terminated=trajectory.terminated,
        truncated=trajectory.truncated,
        next_obs=final_obs,
        next_legal=() if final_legal is None else final_legal,
    )
    return jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), stored)


def bootstrap_steps(sample: Stored, episodic: tuple[bool, ...]) -> jax.Array:
    """Each stream's bootstrap step j [N, K] of sampled runs [N, n]: the first step
    whose episode ended, else the last; a stream that is not episodic (``episodic``
    False) runs on to the last step. Only the next observation of step j is valued,
    so a loss runs its networks on [N, K] observations, not on all [N, n]."""
    n = sample.terminated.shape[1]
    ended = jnp.logical_or(sample.terminated, sample.truncated)  # [N, n]
    first_end = jnp.where(ended.any(axis=1), jnp.argmax(ended, axis=1), n - 1)  # [N]
    last = jnp.full_like(first_end, n - 1)
    return jnp.stack([first_end if cut else last for cut in episodic], axis=-1)


def at_steps(x: jax.Array, steps: jax.Array) -> jax.Array:
    """``x`` [N, n, ...] at each stream's step ``steps`` [N, K] -> [N, K, ...]."""
    return x[jnp.arange(x.shape[0])[:, None], steps]


def n_step_targets(
    sample: Stored,
    steps: jax.Array,
    next_values: jax.Array,
    gammas: jax.Array,
    episodic: tuple[bool, ...],
) -> jax.Array:
    """Targets [N, K] of sampled runs of n steps ``sample`` [N, n, ...], with ``steps``
    [N, K] each stream's bootstrap step j (``bootstrap_steps``), ``next_values`` [N, K]
    the value of step j's next observation and ``gammas`` [K] the streams' discounts:
    G = sum_{i<=j} g^i r_i + g^(j+1) v_j. An episodic stream does not bootstrap after
    a termination (a truncation bootstraps from its final observation)."""
    return jnp.stack(
        [
            stream_target(
                sample, sample.reward[..., k], steps[:, k], next_values[:, k], gammas[k], cut
            )
            for k, cut in enumerate(episodic)
        ],
        axis=-1,
    )


def stream_target(
    sample: Stored,
    rewards: jax.Array,
    last: jax.Array,
    next_value: jax.Array,
    gamma: Any,
    cut_at_ends: bool,
) -> jax.Array:
    """One stream's n-step targets [N] from its rewards [N, n], its bootstrap steps
    ``last`` [N] and the next values there [N]."""
    steps = jnp.arange(rewards.shape[1])
    live = (steps[None, :] <= last[:, None]).astype(rewards.dtype)  # [N, n]
    returns = (live * rewards * gamma ** steps.astype(rewards.dtype)).sum(axis=1)
    terminal = jnp.logical_and(sample.terminated[jnp.arange(rewards.shape[0]), last], cut_at_ends)
    bootstrap = jnp.where(terminal, 0.0, next_value)
    return returns + gamma ** (last + 1).astype(rewards.dtype) * bootstrap
