"""Shuffling a batch into minibatches.

A batch is a pytree whose leaves share a leading axis of N items; one epoch
visits every item once, in ``num_minibatches`` groups of N / num_minibatches,
in an order drawn afresh from ``key``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp


def flatten_time(batch: Any) -> Any:
    """[T, B, ...] leaves -> [T * B, ...]."""
    # explicit sizes, not -1: leaves may be empty (a feed-forward net's [T, B, 0] hidden)
    return jax.tree.map(lambda x: x.reshape((x.shape[0] * x.shape[1], *x.shape[2:])), batch)


def shuffle_into_minibatches(key: jax.Array, batch: Any, num_minibatches: int) -> Any:
    """[N, ...] leaves -> [num_minibatches, N / num_minibatches, ...] in a random order."""
    n = jax.tree.leaves(batch)[0].shape[0]
    assert n % num_minibatches == 0, f"{n} items do not split into {num_minibatches} minibatches"
    order = jax.random.permutation(key, n)
    return jax.tree.map(
        lambda x: jnp.take(x, order, axis=0).reshape(
            (num_minibatches, n // num_minibatches, *x.shape[1:])
        ),
        batch,
    )


def shuffle_env_sequences(key: jax.Array, batch: Any, num_minibatches: int) -> Any:
    """Minibatches of whole env sequences: [T_i, B, ...] leaves (T_i may differ per
    leaf) -> [num_minibatches, T_i, B / num_minibatches, ...]. Envs are shuffled;
    each env's steps keep their time order."""
    num_envs = jax.tree.leaves(batch)[0].shape[1]
    assert num_envs % num_minibatches == 0, (
        f"{num_envs} envs do not split into {num_minibatches} minibatches"
    )
    order = jax.random.permutation(key, num_envs).reshape(num_minibatches, -1)

    def split(x):
        x = jnp.take(x, order, axis=1)  # [T, M, B / M, ...]
        return jnp.moveaxis(x, 1, 0)

    return jax.tree.map(split, batch)
