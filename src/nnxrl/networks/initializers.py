"""Orthogonal weight initialisation (Saxe et al. 2014, arXiv:1312.6120) without LAPACK.

Flax's orthogonal initialiser takes the QR decomposition of a Gaussian matrix,
which on CPU is a LAPACK call inside the compiled program; such a call was seen
to deadlock the XLA CPU runtime now and then. Gram-Schmidt on the Gaussian
columns gives the same (Haar) distribution with plain matrix products:

    G ~ N(0, 1)^{n x k}, n >= k;   q_j = normalise(g_j - Q_{<j} Q_{<j}^T g_j)

(projected out twice, which keeps float32 columns orthogonal to ~1e-6).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np


def orthonormal_columns(g: jax.Array) -> jax.Array:
    """[n, k] with n >= k -> [n, k] with orthonormal columns spanning g's columns."""
    n, k = g.shape
    assert n >= k, f"orthonormal_columns needs a tall matrix, got {g.shape}"

    def add_column(q, j):
        v = g[:, j]
        for _ in range(2):  # "twice is enough" (Giraud et al. 2005)
            v = v - q @ (q.T @ v)
        return q.at[:, j].set(v / jnp.linalg.norm(v)), None

    q, _ = jax.lax.scan(add_column, jnp.zeros_like(g), jnp.arange(k))
    return q


def orthogonal(scale: float = 1.0):
    """An initialiser: kernel [..., in, out] whose [prod(...) * in, out] matrix has
    orthogonal columns (or rows, when out > rows), times ``scale``."""

    def init(key: jax.Array, shape: Sequence[int], dtype=jnp.float32) -> jax.Array:
        rows, cols = int(np.prod(shape[:-1])), shape[-1]
        tall = rows >= cols
        g = jax.random.normal(key, (max(rows, cols), min(rows, cols)), jnp.float32)
        q = orthonormal_columns(g)
        matrix = q if tall else q.T
        return (scale * matrix).reshape(shape).astype(dtype)

    return init
