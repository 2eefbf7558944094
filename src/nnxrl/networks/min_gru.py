"""A minimal GRU (minGRU, Feng et al. 2024, "Were RNNs All We Needed?") trained by a
parallel scan: its gates read the input alone, so the recurrence is linear in the
state and a sequence is one ``jax.lax.associative_scan`` (depth O(log T)) instead of T
dependent steps.

Why minGRU among the linear recurrences (LRU, S5, FFM): its state is real, its
recurrence is a gated average with no eigenvalue parameterisation or discretisation
step to get right, an episode start is one multiplier set to zero, and it keeps the
GRU's update gate, which Craftax's recurrent baselines already rely on.

Gates that read one input learn exact recall slowly (docs/memory.md: 6-7x the GRU's
gradient steps on RepeatPrevious, told the answer); ``conv`` puts a short causal
convolution before each layer, as the minGRU and Mamba blocks do, so that they read a
window.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from nnxrl.networks.initializers import chrono_bias
from nnxrl.networks.torso import orthogonal_linear


class MinGRU(nnx.Module):
    """``layers`` minGRU layers, each feeding its states to the next:

        z_t = sigmoid(W_z x_t + b_z),   h~_t = W_h x_t + b_h
        h_t = (1 - z_t) * h_{t-1} + z_t * h~_t,   h_{t-1} := 0 where step t starts an episode

    that is h_t = a_t * h_{t-1} + b_t with a_t = (1 - z_t) * (1 - start_t) and
    b_t = z_t * h~_t, computed for all t at once by ``linear_recurrence``. The biases
    start at 0 (a_t = 0.5 at first), or with ``chrono`` T each layer's
    b_z = -log(U(1, T - 1)) (``initializers.chrono_bias``), so that 1 - z starts
    between 1/2 and 1 - 1/T.

    With ``conv`` K >= 2 a layer reads x_t + c_t instead of x_t, where
    c_t = sum_{j<K} w_j * x_{t-j} is a causal depthwise convolution over the last K
    inputs of the same episode (``CausalConv``), as the minGRU and Mamba blocks
    place one before the recurrence: the gates then read a short window, not one
    input. The state [B, S] holds every layer's last h [layers * H], then, with
    ``conv``, every layer's last K - 1 inputs.
    """

    def __init__(
        self,
        in_features: int,
        hidden_size: int,
        rngs: nnx.Rngs,
        layers: int = 1,
        chrono: int = 0,
        conv: int = 0,
    ):
        sizes = [in_features] + [hidden_size] * (layers - 1)
        self.gates = nnx.List([orthogonal_linear(d, 2 * hidden_size, 1.0, rngs) for d in sizes])
        if chrono:
            for gate in self.gates:
                bias = -chrono_bias(rngs.params(), hidden_size, chrono)
                gate.bias[...] = gate.bias[...].at[:hidden_size].set(bias)
        self.convs = nnx.List([CausalConv(d, conv, rngs) for d in sizes] if conv else [])
        self.hidden_size = hidden_size
        self.splits = [hidden_size] * layers + [(conv - 1) * d for d in sizes if conv]
        self.state_size = sum(self.splits)

    def __call__(
        self, state: jax.Array, x: jax.Array, start: jax.Array
    ) -> tuple[jax.Array, jax.Array]:
        """state [B, S], x [T, B, D], start [T, B] ->
        (last state [B, S], outputs [T, B, H] of the last layer)."""
        keep = 1.0 - start[..., None].astype(x.dtype)  # [T, B, 1]
        parts = jnp.split(state, np.cumsum(self.splits)[:-1], axis=-1)
        hs, windows = parts[: len(self.gates)], parts[len(self.gates) :]
        last, last_windows = [], []
        for i, (gate, h0) in enumerate(zip(self.gates, hs, strict=True)):
            if self.convs:
                x, window = self.convs[i](windows[i], x, start)
                last_windows.append(window)
            z, candidate = jnp.split(gate(x), 2, axis=-1)
            z = jax.nn.sigmoid(z)
            x = linear_recurrence((1.0 - z) * keep, z * candidate, h0)
            last.append(x[-1])
        return jnp.concatenate(last + last_windows, axis=-1), x


class CausalConv(nnx.Module):
    """x_t + sum_{j<K} w_j * x_{t-j} per feature, the taps reaching back only within
    x_t's episode (a tap behind an episode start reads 0), the K - 1 inputs before the
    sequence carried in a window [B, (K - 1) * D]."""

    def __init__(self, features: int, size: int, rngs: nnx.Rngs):
        bound = 1.0 / np.sqrt(size)  # as a depthwise convolution's usual init
        taps = jax.random.uniform(rngs.params(), (size, features), jnp.float32, -bound, bound)
        self.taps = nnx.Param(taps)  # [K, D], taps[j] multiplies x_{t-j}
        self.size = size

    def __call__(
        self, window: jax.Array, x: jax.Array, start: jax.Array
    ) -> tuple[jax.Array, jax.Array]:
        """window [B, (K - 1) * D] (oldest first), x [T, B, D], start [T, B] ->
        (x + c [T, B, D], the window after the sequence [B, (K - 1) * D])."""
        steps, batch, features = x.shape
        before = window.reshape(batch, self.size - 1, features).transpose(1, 0, 2)
        padded = jnp.concatenate([before, x])  # [K - 1 + T, B, D]
        # the episode of each padded position: the window's is the one before step 0
        episode = jnp.concatenate(
            [jnp.zeros((self.size - 1, batch), jnp.int32), jnp.cumsum(start, axis=0)]
        )
        out = x
        for j in range(self.size):
            back = slice(self.size - 1 - j, self.size - 1 - j + steps)
            same = (episode[back] == episode[self.size - 1 :])[..., None]
            out = out + self.taps[j] * jnp.where(same, padded[back], 0.0)
        kept = padded[steps:]  # the last K - 1 inputs, those of the last step's episode
        kept = jnp.where((episode[steps:] == episode[-1])[..., None], kept, 0.0)
        return out, kept.transpose(1, 0, 2).reshape(batch, -1)


def linear_recurrence(a: jax.Array, b: jax.Array, h0: jax.Array) -> jax.Array:
    """h_t = a_t * h_{t-1} + b_t for t = 0..T-1 from h_{-1} = h0, by an associative scan.

    a, b [T, B, H], h0 [B, H] -> h [T, B, H]. The pairs (a, b) compose as
    (a1, b1) then (a2, b2) = (a1 * a2, a2 * b1 + b2); h0 enters as b_0 + a_0 * h0.
    """
    b = b.at[0].add(a[0] * h0)

    def compose(first, second):
        a1, b1 = first
        a2, b2 = second
        return a1 * a2, a2 * b1 + b2

    _, h = jax.lax.associative_scan(compose, (a, b))
    return h
