"""A long short-term memory core (Hochreiter & Schmidhuber 1997) with resets, scanned
over time; the same interface as the GRU (``gru.py``), its state (c, h) carried as
one array [B, 2H]. Its backpropagation through time is written out for the reason
the GRU's is: U's gradient becomes one matrix product after the loop instead of a
sum carried through it."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from nnxrl.networks.initializers import chrono_bias, orthogonal
from nnxrl.networks.torso import orthogonal_linear


class LSTM(nnx.Module):
    """Long short-term memory with resets:

        i, f, g, o = split(W x + b + U h)
        c' = sigmoid(f) * c + sigmoid(i) * tanh(g),   h' = sigmoid(o) * tanh(c')
        (c, h) := 0 first where the step starts an episode

    The forget gate's bias starts at 1 (Jozefowicz et al. 2015), so that memory is kept
    by default early in training; with ``chrono`` T, b_f = log(U(1, T - 1)) and
    b_i = -b_f (``initializers.chrono_bias``). W x for all steps is one matmul before
    the scan.
    """

    def __init__(self, in_features: int, hidden_size: int, rngs: nnx.Rngs, chrono: int = 0):
        self.input = orthogonal_linear(in_features, 4 * hidden_size, 1.0, rngs)
        forget = slice(hidden_size, 2 * hidden_size)
        bias = chrono_bias(rngs.params(), hidden_size, chrono) if chrono else 1.0
        self.input.bias[...] = self.input.bias[...].at[forget].set(bias)
        if chrono:
            self.input.bias[...] = self.input.bias[...].at[:hidden_size].set(-bias)
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
        return lstm_scan(self.recurrent_kernel[...], state, self.input(x), start)


@jax.custom_vjp
def lstm_scan(
    u: jax.Array, state: jax.Array, wx: jax.Array, start: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """U [H, 4H], state [B, 2H], W x + b [T, B, 4H], start [T, B] ->
    (last state [B, 2H], outputs h [T, B, H])."""

    def step(state, inputs):
        state, _ = lstm_step(u, state, *inputs)
        return state, jnp.split(state, 2, axis=-1)[1]

    return jax.lax.scan(step, state, (wx, start))


def lstm_step(u: jax.Array, state: jax.Array, wx: jax.Array, start: jax.Array) -> tuple:
    """One step: U [H, 4H], state (c, h) [B, 2H], W x + b [B, 4H], start [B] ->
    (state', what the step's gradient needs: the reset c and h, the gates
    sigmoid(i), sigmoid(f), tanh(g), sigmoid(o) and tanh(c'), each [B, H])."""
    c, h = jnp.split(jnp.where(start[:, None], 0.0, state), 2, axis=-1)
    i, f, g, o = jnp.split(wx + h @ u, 4, axis=-1)
    i, f, g, o = jax.nn.sigmoid(i), jax.nn.sigmoid(f), jnp.tanh(g), jax.nn.sigmoid(o)
    c_next = f * c + i * g
    tanh_c = jnp.tanh(c_next)
    return jnp.concatenate([c_next, o * tanh_c], axis=-1), (c, h, i, f, g, o, tanh_c)


def _forward(u, state, wx, start):
    """The scan again, keeping what each step's gradient needs (``_backward``)."""

    def step(state, inputs):
        state, saved = lstm_step(u, state, *inputs)
        return state, (jnp.split(state, 2, axis=-1)[1], saved)

    last, (outputs, saved) = jax.lax.scan(step, state, (wx, start))
    return (last, outputs), (u, start, saved)


def _backward(residuals, cotangents):
    """Through time in reverse, with dh' and dc' what reaches the step's outputs
    (i, f, g, o the gates after their nonlinearities, C = tanh(c')):

        dc' += dh' o (1 - C^2)
        d(W x) = d(U h) = [dc' g i (1 - i), dc' c f (1 - f), dc' i (1 - g^2), dh' C o (1 - o)]
        dc = dc' f,   dh = d(U h) U^T,   both := 0 where the step started an episode
        dU = sum over steps of h^T d(U h)    (one matmul after the loop)
    """
    u, start, saved = residuals
    d_last, d_outputs = cotangents

    def step(d_state, inputs):
        d_output, start_t, (c, h, i, f, g, o, tanh_c) = inputs
        dc, dh = jnp.split(d_state, 2, axis=-1)
        dh = dh + d_output
        dc = dc + dh * o * (1.0 - tanh_c * tanh_c)
        d_gates = [dc * g * i * (1.0 - i), dc * c * f * (1.0 - f)]
        d_gates += [dc * i * (1.0 - g * g), dh * tanh_c * o * (1.0 - o)]
        d_uh = jnp.concatenate(d_gates, axis=-1)
        d_state = jnp.concatenate([dc * f, d_uh @ u.T], axis=-1)
        return jnp.where(start_t[:, None], 0.0, d_state), d_uh

    inputs = (d_outputs, start, saved)
    d_state, d_uh = jax.lax.scan(step, d_last, inputs, reverse=True)
    du = jnp.einsum("tbh,tbk->hk", saved[1], d_uh)
    return du, d_state, d_uh, None


lstm_scan.defvjp(_forward, _backward)
