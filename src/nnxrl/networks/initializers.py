"""Orthogonal weight initialisation (Saxe et al. 2014, arXiv:1312.6120), done on the host.

    G ~ N(0, 1)^{max(r, c) x min(r, c)};  G = QR;  W = scale * Q diag(sign(diag R))

(transposed when the kernel is wide), with ``r`` the product of all but the last
kernel dimension and ``c`` the last. The draw is seeded from the JAX key, so the
same key gives the same weights.

Why the host: Flax's orthogonal initialiser runs the QR as a LAPACK call inside
the compiled program, and on CPU such a call was seen to deadlock the XLA runtime
now and then; it also adds more than a second of compilation to every run.
Networks are therefore built eagerly, outside ``jit``, and only their parameters
enter the compiled programs.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np


def orthogonal(scale: float = 1.0):
    """An initialiser ``(key, shape, dtype) -> array``; the key must be concrete."""

    def init(key: jax.Array, shape: Sequence[int], dtype=jnp.float32) -> jax.Array:
        if isinstance(key, jax.core.Tracer):
            raise TypeError(
                "nnxrl networks are initialised on the host: build them outside jit/vmap"
            )
        rng = np.random.default_rng(np.asarray(jax.random.key_data(key)).ravel())
        rows, cols = int(np.prod(shape[:-1])), int(shape[-1])
        g = rng.standard_normal((max(rows, cols), min(rows, cols)))
        q, r = np.linalg.qr(g)
        q = q * np.sign(np.diag(r))
        matrix = q if rows >= cols else q.T
        return jnp.asarray(scale * matrix, dtype=dtype).reshape(shape)

    return init
