"""A gated recurrent unit (Cho et al. 2014) with resets, scanned over time, and its
backpropagation through time written out.

Why by hand: JAX's own transpose of the scan adds U's gradient into the loop's carry
at every step, a read and a write of all of U [H, 3H] per step. Here each step
emits its gradient of U h and U's gradient is one matrix product after the loop.
The gradients are JAX's own up to rounding (``tests/test_memory.py``); the
gradient of an unroll takes 0.6x JAX's time at the recall tests' size and 0.7x at
Craftax's (``benchmarks/backprop_through_time.py``). As a ``jax.custom_vjp`` it
takes reverse-mode derivatives of any order; forward mode (``jax.jvp``) does not
pass through it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from nnxrl.networks.initializers import chrono_bias, orthogonal
from nnxrl.networks.torso import orthogonal_linear


class GRU(nnx.Module):
    """Gated recurrent unit with resets:

        r = sigmoid(W_r x + U_r h + b_r),   z = sigmoid(W_z x + U_z h + b_z)
        n = tanh(W_n x + b_n + r * (U_n h))
        h' = (1 - z) * n + z * h,            h := 0 first where the step starts an episode

    W x for all steps is one matmul before the scan; only U h runs step by step. The
    biases start at 0 (z = 0.5: the state halves every step), or with ``chrono`` T
    b_z = log(U(1, T - 1)) (``initializers.chrono_bias``).
    """

    def __init__(self, in_features: int, hidden_size: int, rngs: nnx.Rngs, chrono: int = 0):
        self.input = orthogonal_linear(in_features, 3 * hidden_size, 1.0, rngs)
        if chrono:
            keep = slice(hidden_size, 2 * hidden_size)  # z
            bias = chrono_bias(rngs.params(), hidden_size, chrono)
            self.input.bias[...] = self.input.bias[...].at[keep].set(bias)
        self.recurrent_kernel = nnx.Param(
            orthogonal(1.0)(rngs.params(), (hidden_size, 3 * hidden_size))
        )
        self.hidden_size = hidden_size
        self.state_size = hidden_size

    def __call__(
        self, hidden: jax.Array, x: jax.Array, start: jax.Array
    ) -> tuple[jax.Array, jax.Array]:
        """hidden [B, H], x [T, B, D], start [T, B] -> (last hidden [B, H], outputs [T, B, H])."""
        return gru_scan(self.recurrent_kernel[...], hidden, self.input(x), start)


@jax.custom_vjp
def gru_scan(
    u: jax.Array, hidden: jax.Array, wx: jax.Array, start: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """U [H, 3H], hidden [B, H], W x + b [T, B, 3H], start [T, B] ->
    (last hidden [B, H], outputs [T, B, H])."""

    def step(h, inputs):
        h, _ = gru_step(u, h, *inputs)
        return h, h

    return jax.lax.scan(step, hidden, (wx, start))


def gru_step(u: jax.Array, h: jax.Array, wx: jax.Array, start: jax.Array) -> tuple:
    """One step: U [H, 3H], h [B, H], W x + b [B, 3H], start [B] -> (h', what the
    step's gradient needs: the reset h, r, z, n and U_n h, each [B, H])."""
    h = jnp.where(start[:, None], 0.0, h)
    xr, xz, xn = jnp.split(wx, 3, axis=-1)
    hr, hz, hn = jnp.split(h @ u, 3, axis=-1)
    r = jax.nn.sigmoid(xr + hr)
    z = jax.nn.sigmoid(xz + hz)
    n = jnp.tanh(xn + r * hn)
    return (1.0 - z) * n + z * h, (h, r, z, n, hn)


def _forward(u, hidden, wx, start):
    """The scan again, keeping what each step's gradient needs (``_backward``)."""

    def step(h, inputs):
        h, saved = gru_step(u, h, *inputs)
        return h, (h, saved)

    last, (outputs, saved) = jax.lax.scan(step, hidden, (wx, start))
    return (last, outputs), (u, start, saved)


def _backward(residuals, cotangents):
    """Through time in reverse, with g the gradient reaching h' (from the next step
    and from the output):

        dn = g (1 - z) (1 - n^2),   dz = g (h - n) z (1 - z),   dr = dn (U_n h) r (1 - r)
        d(W x) = [dr, dz, dn],      d(U h) = [dr, dz, r dn]
        dh = g z + d(U h) U^T,      := 0 where the step started an episode
        dU = sum over steps of h^T d(U h)    (one matmul after the loop)
    """
    u, start, saved = residuals
    d_last, d_outputs = cotangents

    def step(g, inputs):
        d_output, start_t, (h, r, z, n, hn) = inputs
        g = g + d_output
        dn = g * (1.0 - z) * (1.0 - n * n)
        dz = g * (h - n) * z * (1.0 - z)
        dr = dn * hn * r * (1.0 - r)
        d_uh = jnp.concatenate([dr, dz, dn * r], axis=-1)
        dh = jnp.where(start_t[:, None], 0.0, g * z + d_uh @ u.T)
        return dh, (jnp.concatenate([dr, dz, dn], axis=-1), d_uh)

    inputs = (d_outputs, start, saved)
    d_hidden, (d_wx, d_uh) = jax.lax.scan(step, d_last, inputs, reverse=True)
    du = jnp.einsum("tbh,tbk->hk", saved[0], d_uh)
    return du, d_hidden, d_wx, None


gru_scan.defvjp(_forward, _backward)
