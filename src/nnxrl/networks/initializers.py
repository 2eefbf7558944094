"""Orthogonal weight initialisation (Saxe et al. 2014, arXiv:1312.6120), inside the
compiled program, in jnp:

    G ~ N(0, 1)^{max(r, c) x min(r, c)};  G = QR;  W = scale * Q diag(sign(diag R))

(transposed when the kernel is wide), with ``r`` the product of all but the last
kernel dimension and ``c`` the last.

Why not ``jnp.linalg.qr`` (what Flax's orthogonal initialiser uses): on CPU it is a
LAPACK custom call inside the program, and after other programs have run in the
same process that call hangs the XLA CPU runtime (``benchmarks/qr_deadlock.py``
reproduces it). Gram-Schmidt is plain matrix products; it runs once per run.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

PANEL = 32  # columns orthogonalised together by ``gram_schmidt``


def chrono_bias(key: jax.Array, size: int, horizon: int) -> jax.Array:
    """Chrono initialisation (Tallec and Ollivier 2018, arXiv:1804.11188): a gate
    bias b = log(u), u ~ U(1, horizon - 1) [size], so that sigmoid(b) = u / (1 + u)
    keeps a unit's memory for about 1 + u steps, time scales spread up to ``horizon``
    (a gate at bias 0 halves it every step)."""
    return jnp.log(jax.random.uniform(key, (size,), jnp.float32, 1.0, horizon - 1.0))


def orthogonal(scale: float = 1.0):
    """An initialiser ``(key, shape, dtype) -> array`` that runs inside ``jit`` and
    ``vmap``: Gram-Schmidt on the Gaussian columns (``gram_schmidt``) gives Q with a
    positive-diagonal R, i.e. Q diag(sign(diag R)), with no LAPACK call."""

    def init(key: jax.Array, shape: Sequence[int], dtype=jnp.float32) -> jax.Array:
        shape = tuple(int(d) for d in shape)
        return orthogonal_matrix(key, shape, float(scale)).astype(dtype)

    return init


@partial(jax.jit, static_argnames=("shape", "scale"))
def orthogonal_matrix(key: jax.Array, shape: tuple[int, ...], scale: float) -> jax.Array:
    """scale * Q [*shape] for one key. A ``jit`` of its own, so that a process traces
    it once per shape and scale: a network is built (traced) several times in a run,
    for its shapes, its init and its evaluation, and Gram-Schmidt's loops are most
    of a build's tracing."""
    rows, cols = int(np.prod(shape[:-1])), shape[-1]
    g = jax.random.normal(key, (max(rows, cols), min(rows, cols)), jnp.float32)
    q = gram_schmidt(g)
    matrix = q if rows >= cols else q.T
    return (scale * matrix).reshape(shape)


def gram_schmidt(g: jax.Array) -> jax.Array:
    """Orthonormal columns spanning g's [n, k] (n >= k), a panel of ``PANEL`` columns at
    a time (one panel of all k when ``PANEL`` does not divide k; block Gram-Schmidt,
    every projection done twice, which keeps float32 columns orthogonal to ~1e-6 for
    tall matrices, ~1e-5 for square ones):

        P = G[:, panel];  P <- P - Q Q^T P, twice (Q: the columns so far, the rest 0);
        Q[:, panel] = the same, column by column inside P (``panel_gram_schmidt``)

    The same Q as one column at a time, up to rounding; the projections are matrix
    products, so a Craftax-Symbolic first layer (8268 x 512) takes a fifth of the
    time (``benchmarks/first_update.py``'s init run)."""
    k = g.shape[1]
    width = PANEL if k % PANEL == 0 else k

    def panel(i: jax.Array, q: jax.Array) -> jax.Array:
        p = jax.lax.dynamic_slice_in_dim(g, i * width, width, axis=1)
        for _ in range(2):
            p = p - q @ (q.T @ p)
        return jax.lax.dynamic_update_slice_in_dim(q, panel_gram_schmidt(p), i * width, axis=1)

    return jax.lax.fori_loop(0, k // width, panel, jnp.zeros_like(g))


def panel_gram_schmidt(p: jax.Array) -> jax.Array:
    """Orthonormal columns spanning p's [n, b], column by column:

    q_j = v / ||v||,  v = p_j - Q_{<j} Q_{<j}^T p_j  (projected out twice)."""

    def column(j: jax.Array, q: jax.Array) -> jax.Array:
        v = jax.lax.dynamic_index_in_dim(p, j, axis=1, keepdims=False)
        for _ in range(2):
            v = v - q @ (q.T @ v)
        return q.at[:, j].set(v / jnp.linalg.norm(v))

    return jax.lax.fori_loop(0, p.shape[1], column, jnp.zeros_like(p))
