"""A 2-D convolution written as patch extraction and one matmul.

For an input ``x`` [B, H, W, C], a kernel ``k`` [kh, kw, C, F] and strides (sh, sw),
with the input zero-padded as for ``padding="SAME"`` (output H' = ceil(H / sh),
W' = ceil(W / sw)):

    patches[b, i, j, (u, v, c)] = x_pad[b, sh * i + u, sw * j + v, c]
    y[b, i, j, f] = sum_{u, v, c} patches[b, i, j, (u, v, c)] * k[u, v, c, f] + bias[f]

which is ``patches.reshape(B * H' * W', kh * kw * C) @ k.reshape(kh * kw * C, F)``:
the same function as ``lax.conv_general_dilated`` with NHWC/HWIO layouts, the
same parameters, summed in another order.

Why it exists (measured in ``benchmarks/throughput.py``): inside a ``scan``, which is
where every PPO/PQN update runs, XLA's CPU convolution and its gradients ran ~6x
slower than outside one (3 layers 3x3 stride 2 on [1024, 10, 10, 4], fwd + bwd:
220 ms per SGD step inside a scan vs 34 ms as patches + matmul), while a matmul
keeps its speed. The kh * kw patches are strided slices, whose gradients are pads:
cheap. On GPUs cuDNN's convolutions are fast, so callers use this on CPU only.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from jax import lax


def conv_as_matmul(
    x: jax.Array, kernel: jax.Array, bias: jax.Array | None, strides: Sequence[int]
) -> jax.Array:
    """SAME-padded convolution: x [B, H, W, C], kernel [kh, kw, C, F], bias [F] or
    None -> [B, ceil(H / sh), ceil(W / sw), F]."""
    kh, kw, c, f = kernel.shape
    b, h, w, _ = x.shape
    sh, sw = strides
    (ph, ph_hi), (pw, pw_hi) = lax.padtype_to_pads((h, w), (kh, kw), (sh, sw), "SAME")
    x = jnp.pad(x, ((0, 0), (ph, ph_hi), (pw, pw_hi), (0, 0)))
    oh, ow = -(-h // sh), -(-w // sw)
    patches = jnp.concatenate(
        [
            lax.slice(
                x,
                (0, u, v, 0),
                (b, u + sh * (oh - 1) + 1, v + sw * (ow - 1) + 1, c),
                (1, sh, sw, 1),
            )
            for u in range(kh)
            for v in range(kw)
        ],
        axis=-1,
    )
    y = jnp.dot(patches.reshape(b * oh * ow, kh * kw * c), kernel.reshape(kh * kw * c, f))
    y = y.reshape(b, oh, ow, f)
    return y if bias is None else y + bias
