"""Shuffling a batch into minibatches.

A batch is a pytree whose leaves share leading axes [T, B] (T steps of B envs); one
epoch visits every step (or every env sequence) once, in ``num_minibatches``
minibatches, in an order drawn afresh from ``key``. Shuffling can stay within blocks
of envs (``groups``), so that on a device mesh no data crosses devices (``parallel/mesh.py``).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp


def shuffle_steps(key: jax.Array, batch: Any, num_minibatches: int, groups: int = 1) -> Any:
    """[T, B, ...] leaves -> [M, T * B / M, ...]: single steps in a random order,
    M = num_minibatches.

    The envs are cut into ``groups`` equal blocks (G; one per device that holds a
    block of envs) and each block's T * B / G steps are shuffled on their own; minibatch
    m is the m-th slice of every block's order, so it takes T * B / (G M) steps from
    each block and no step moves to another block's device. G = 1 is the plain
    shuffle of all T * B steps."""
    t, b = jax.tree.leaves(batch)[0].shape[:2]
    assert b % groups == 0, f"{b} envs do not split into {groups} groups"
    per_group = t * b // groups
    orders = block_orders(key, groups, per_group, num_minibatches)

    def split(x: jax.Array) -> jax.Array:
        rest = x.shape[2:]
        x = jnp.moveaxis(x.reshape((t, groups, b // groups, *rest)), 1, 0)  # [G, T, B/G]
        x = x.reshape((groups, per_group, *rest))
        x = jax.vmap(lambda xg, og: jnp.take(xg, og, axis=0))(x, orders)  # [G, M, n]
        return jnp.moveaxis(x, 1, 0).reshape((num_minibatches, t * b // num_minibatches, *rest))

    return jax.tree.map(split, batch)


def shuffle_env_sequences(key: jax.Array, batch: Any, num_minibatches: int, groups: int = 1) -> Any:
    """Minibatches of whole env sequences: [T_i, B, ...] leaves (T_i may differ per
    leaf) -> [M, T_i, B / M, ...]. Envs are shuffled (within each of ``groups`` equal
    blocks of envs, as in ``shuffle_steps``: minibatch m takes B / (G M) envs from every
    block); each env's steps keep their time order."""
    num_envs = jax.tree.leaves(batch)[0].shape[1]
    assert num_envs % groups == 0, f"{num_envs} envs do not split into {groups} groups"
    per_group = num_envs // groups
    orders = block_orders(key, groups, per_group, num_minibatches)

    def split(x: jax.Array) -> jax.Array:
        t, rest = x.shape[0], x.shape[2:]
        x = x.reshape((t, groups, per_group, *rest))
        take = jax.vmap(lambda xg, og: jnp.take(xg, og, axis=1), in_axes=(1, 0), out_axes=1)
        x = take(x, orders)  # [T, G, M, B / (G M)]
        x = jnp.moveaxis(x, 2, 0)  # [M, T, G, B / (G M)]
        return x.reshape((num_minibatches, t, num_envs // num_minibatches, *rest))

    return jax.tree.map(split, batch)


def block_orders(key: jax.Array, groups: int, per_group: int, num_minibatches: int) -> jax.Array:
    """[G, M, per_group / M]: a random order of each block's ``per_group`` items (its
    own key per block), cut into the M minibatches' shares."""
    assert per_group % num_minibatches == 0, (
        f"{per_group} items per group do not split into {num_minibatches} minibatches"
    )
    orders = jax.vmap(lambda k: jax.random.permutation(k, per_group))(jax.random.split(key, groups))
    return orders.reshape(groups, num_minibatches, per_group // num_minibatches)
