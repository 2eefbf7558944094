"""The returns of the last N finished episodes of one seed, carried in the run state.

A rolling mean over the last N episodes (N = ``logging.return_window``, 100 by
default, as Stable-Baselines3 and cleanrl report) says how the agent does even in
updates in which no episode ends, which a per-update mean cannot: a CartPole agent
that balances for the whole 500 steps ends few episodes. The window lives on the
device so it is exact (every episode counts, in order) and is checkpointed with the
run, so a resumed run continues it bit for bit.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class ReturnWindow:
    """returns: [N] float32, the newest episode last; the first N - count slots are
    empty (zero). count: int32, how many episodes the window holds (at most N)."""

    returns: jax.Array
    count: jax.Array


def empty_window(size: int) -> ReturnWindow:
    return ReturnWindow(returns=jnp.zeros(size, jnp.float32), count=jnp.int32(0))


def record_episodes(window: ReturnWindow, trajectory: Any) -> ReturnWindow:
    """Push the episodes that ended in a rollout, in step order (then env order).

    trajectory: terminated, truncated [T, B] and episode["return"] [T, B] (the return
    of the episode that ended at that step). With E = T * B candidates, the window
    and the candidates are laid end to end ([N + E], oldest first) and each valid
    entry with r_i = #valid entries at or after i is kept iff r_i <= N, at slot
    N - r_i. O(N + E) work, no sort."""
    size = window.returns.shape[0]
    ended = jnp.logical_or(trajectory.terminated, trajectory.truncated).reshape(-1)
    values = jnp.concatenate([window.returns, trajectory.episode["return"].reshape(-1)])
    held = jnp.arange(size) >= size - window.count
    valid = jnp.concatenate([held, ended])
    rank = jnp.cumsum(valid[::-1].astype(jnp.int32))[::-1]
    slot = jnp.where(jnp.logical_and(valid, rank <= size), size - rank, size)
    returns = jnp.zeros(size, jnp.float32).at[slot].set(values.astype(jnp.float32), mode="drop")
    count = jnp.minimum(window.count + ended.sum(dtype=jnp.int32), size)
    return ReturnWindow(returns=returns, count=count)


def window_metrics(window: ReturnWindow) -> dict[str, jax.Array]:
    """``episode_return_window``: the mean return of the episodes in the window (0 while
    it is empty; the host reports it as null when ``episodes_in_window`` is 0)."""
    count = window.count.astype(jnp.float32)
    return {
        "episode_return_window": window.returns.sum() / jnp.maximum(count, 1.0),
        "episodes_in_window": count,
    }
