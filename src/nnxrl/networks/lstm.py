"""A long short-term memory core (Hochreiter & Schmidhuber 1997) with resets, scanned
over time; the same interface as the GRU (``recurrent.py``), its state (c, h) carried
as one array [B, 2H]."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from nnxrl.networks.initializers import orthogonal
from nnxrl.networks.torso import orthogonal_linear


class LSTM(nnx.Module):
    """Long short-term memory with resets:

        i, f, g, o = split(W x + b + U h)
        c' = sigmoid(f) * c + sigmoid(i) * tanh(g),   h' = sigmoid(o) * tanh(c')
        (c, h) := 0 first where the step starts an episode

    The forget gate's bias starts at 1 (Jozefowicz et al. 2015), so that memory is kept
    by default early in training. W x for all steps is one matmul before the scan.
    """

    def __init__(self, in_features: int, hidden_size: int, rngs: nnx.Rngs):
        self.input = orthogonal_linear(in_features, 4 * hidden_size, 1.0, rngs)
        forget = slice(hidden_size, 2 * hidden_size)
        self.input.bias[...] = self.input.bias[...].at[forget].set(1.0)
        self.recurrent_kernel = nnx.Param(
            orthogonal(1.0)(rngs.params(), (hidden_size, 4 * hidden_size))
        )
        self.hidden_size = hidden_size
        self.state_size = 2 * hidden_size

    def __call__(
        self, state: jax.Array, x: jax.Array, start: jax.Array
    ) -> tuple[jax.Array, jax.Array]:
        """state [B, 2H] (c then h), x [T, B, D], start [T, B] ->
        (last state [B, 2H], outputs h [T, B, H])."""
        projected = self.input(x)
        u = self.recurrent_kernel[...]

        def step(carry, inputs):
            x_t, start_t = inputs
            carry = jnp.where(start_t[:, None], 0.0, carry)
            c, h = jnp.split(carry, 2, axis=-1)
            i, f, g, o = jnp.split(x_t + h @ u, 4, axis=-1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return jnp.concatenate([c, h], axis=-1), h

        return jax.lax.scan(step, state, (projected, start))
