"""Running mean and variance over batches (Chan et al. 1979's parallel update).

Merging a batch of n values with mean m_b and variance v_b into (N, mu, var):

    delta = m_b - mu,   N' = N + n
    mu'   = mu + delta * n / N'
    var'  = (var * N + v_b * n + delta^2 * N * n / N') / N'

Used to normalise observations and intrinsic rewards by statistics of all the
data seen so far, without keeping it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class Moments:
    count: jax.Array  # float32 scalar
    mean: jax.Array  # [*shape]
    var: jax.Array  # [*shape]


def init_moments(shape: Sequence[int] = ()) -> Moments:
    """Mean 0, variance 1, with a tiny count so the first batch sets both."""
    return Moments(
        count=jnp.float32(1e-4),
        mean=jnp.zeros(shape, jnp.float32),
        var=jnp.ones(shape, jnp.float32),
    )


def update_moments(moments: Moments, x: jax.Array, num_batch_axes: int) -> Moments:
    """Merge x [*batch, *shape] (the first num_batch_axes axes are samples)."""
    axes = tuple(range(num_batch_axes))
    n = float(math.prod(x.shape[:num_batch_axes]))
    batch_mean, batch_var = x.mean(axis=axes), x.var(axis=axes)
    delta = batch_mean - moments.mean
    total = moments.count + n
    mean = moments.mean + delta * n / total
    m2 = moments.var * moments.count + batch_var * n + jnp.square(delta) * moments.count * n / total
    return Moments(count=total, mean=mean, var=m2 / total)


def standardize(x: jax.Array, moments: Moments, eps: float = 1e-8) -> jax.Array:
    """(x - mean) / sqrt(var + eps)"""
    return (x - moments.mean) / jnp.sqrt(moments.var + eps)
