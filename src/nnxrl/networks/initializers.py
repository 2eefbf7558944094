"""Orthogonal weight initialisation (Saxe et al. 2014, arXiv:1312.6120), inside the
compiled program, in jnp:

    G ~ N(0, 1)^{max(r, c) x min(r, c)};  G = QR;  W = scale * Q diag(sign(diag R))

(transposed when the kernel is wide), with ``r`` the product of all but the last
kernel dimension and ``c`` the last.

Why not ``jnp.linalg.qr`` (what Flax's orthogonal initialiser uses): on CPU it is a
LAPACK custom call inside the program, and after other programs have run in the
same process that call hangs the XLA CPU runtime (``benchmarks/qr_deadlock.py``
reproduces it). Gram-Schmidt is plain matrix-vector products; it runs once per run.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np


def orthogonal(scale: float = 1.0):
    """An initialiser ``(key, shape, dtype) -> array`` that runs inside ``jit`` and
    ``vmap``: Gram-Schmidt on the Gaussian columns (``gram_schmidt``) gives Q with a
    positive-diagonal R, i.e. Q diag(sign(diag R)), with no LAPACK call."""

    def init(key: jax.Array, shape: Sequence[int], dtype=jnp.float32) -> jax.Array:
        rows, cols = int(np.prod(shape[:-1])), int(shape[-1])
        g = jax.random.normal(key, (max(rows, cols), min(rows, cols)), jnp.float32)
        q = gram_schmidt(g)
        matrix = q if rows >= cols else q.T
        return (scale * matrix).astype(dtype).reshape(shape)

    return init


def gram_schmidt(g: jax.Array) -> jax.Array:
    """Orthonormal columns spanning g's [n, k] (n >= k), column by column:

    q_j = v / ||v||,  v = g_j - Q_{<j} Q_{<j}^T g_j  (projected out twice, which
    keeps float32 columns orthogonal to ~1e-6)."""

    def column(j: jax.Array, q: jax.Array) -> jax.Array:
        v = jax.lax.dynamic_index_in_dim(g, j, axis=1, keepdims=False)
        for _ in range(2):
            v = v - q @ (q.T @ v)
        return q.at[:, j].set(v / jnp.linalg.norm(v))

    return jax.lax.fori_loop(0, g.shape[1], column, jnp.zeros_like(g))
