"""A chunk of training updates as one scan, guarded against non-finite values.

The host calls one compiled chunk at a time (mapped over seeds, ``members.py``) and logs its
metrics. After every update the guard checks the update's metrics and the new
parameters of every seed; the first time any seed has a NaN or inf, every seed
keeps the state it had before that update for the rest of the chunk, and the
metrics say where it happened (``nonfinite`` per update per seed). The host then
stops at that update with the last good state in hand, ready to checkpoint.

The one part of the state the guard does not hold back is a replay buffer's stored
transitions (``off_policy.set_aside_transitions``): choosing between two copies of
a buffer would copy it every update (a 10^5-transition buffer cost a third of SAC's
speed). Its write position is held back with the rest, so after a halt the rows
the failed update wrote count as unwritten and the next update, made from the same
state, writes the same transitions there before anything is sampled: a resume from
the last good checkpoint goes on as if the failed update had never run.

A PBT sweep's chunk (``pbt_chunk``) is the same chunk for every member, then PBT's
step (``sweeps/pbt.py: pbt_step``) when the update count reaches the interval.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from nnxrl.algos.off_policy import put_back_transitions, set_aside_transitions
from nnxrl.sweeps.pbt import PBTStatic, pbt_step

SEED_AXIS = "seed"  # the vmapped axis name the guard reduces over


def all_finite(tree: Any) -> jax.Array:
    """True when every floating-point leaf of ``tree`` is finite (a scalar bool)."""
    checks = [
        jnp.all(jnp.isfinite(x))
        for x in jax.tree.leaves(tree)
        if jnp.issubdtype(jnp.asarray(x).dtype, jnp.floating)
    ]
    return jnp.all(jnp.stack(checks)) if checks else jnp.bool_(True)


def train_chunk(
    state: Any,
    hp: Any,
    *,
    update_fn: Callable[[Any, Any], tuple[Any, dict]],
    num_updates: int,
    axis_name: str | None = SEED_AXIS,
) -> tuple[Any, dict]:
    """num_updates guarded updates; metrics are [num_updates] per key, plus
    ``nonfinite`` (1.0 where this seed's update produced a NaN or inf)."""

    def guarded_update(carry, _):
        state, halted = carry
        new_state, metrics = update_fn(state, hp)
        new_state, transitions = set_aside_transitions(new_state)
        state, _ = set_aside_transitions(state)
        finite = jnp.logical_and(all_finite(metrics), all_finite(new_state.params))
        everywhere = finite
        if axis_name is not None:  # every seed stops together
            everywhere = jax.lax.pmin(finite.astype(jnp.int32), axis_name) > 0
        keep = jnp.logical_and(everywhere, jnp.logical_not(halted))
        # one branch over the whole state, not a select per leaf: less to compile
        state = jax.lax.cond(keep, lambda: new_state, lambda: state)
        state = put_back_transitions(state, transitions)
        metrics = {**metrics, "nonfinite": jnp.logical_not(finite).astype(jnp.float32)}
        return (state, jnp.logical_or(halted, jnp.logical_not(everywhere))), metrics

    (state, _), metrics = jax.lax.scan(
        guarded_update, (state, jnp.bool_(False)), length=num_updates
    )
    return state, metrics


def pbt_chunk(
    state: Any,
    hp: Any,
    *,
    train_members: Callable[[Any, Any], tuple[Any, dict]],
    s: PBTStatic,
) -> tuple[Any, dict]:
    """The chunk of every member (``train_members``: the guarded chunk of a plain
    sweep, ``train_chunk``, mapped over members, each with its own
    ``state.hyperparams``; ``hp``, the initial values, is unused), then ``pbt_step`` if
    the update count has reached a multiple of the interval (the run loop cuts chunks
    there: ``run/loop.py``). state [P * S, ...] -> (state, metrics [P * S, num_updates]
    per key), with ``pbt/donor`` (the member copied after that update, -1: none) and
    ``hp/<key>`` (the value that update trained with) besides the updates' own."""
    used = state.hyperparams
    state, metrics = train_members(state, used)
    update = state.update[0]
    due = jnp.logical_and(update % s.interval == 0, update < s.num_updates)
    key = jax.random.fold_in(jax.random.key(s.seed), update)
    fitness = metrics["episode_return_window"][:, -1]
    no_step = jnp.full(fitness.shape, -1, jnp.int32)
    state, donor = jax.lax.cond(
        due, lambda st: pbt_step(st, fitness, key, s), lambda st: (st, no_step), state
    )
    shape = metrics["episode_return_window"].shape  # [M, U]
    donors = jnp.full(shape, -1.0).at[:, -1].set(donor.astype(jnp.float32))
    values = {
        f"hp/{k.name}": jnp.broadcast_to(getattr(used, k.field)[:, None], shape) for k in s.keys
    }
    return state, {**metrics, "pbt/donor": donors, **values}
