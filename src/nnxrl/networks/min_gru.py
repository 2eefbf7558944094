"""A minimal GRU (minGRU, Feng et al. 2024, "Were RNNs All We Needed?") trained by a
parallel scan: its gates read the input alone, so the recurrence is linear in the
state and a sequence is one ``jax.lax.associative_scan`` (depth O(log T)) instead of T
dependent steps.

Why minGRU among the linear recurrences (LRU, S5, FFM): its state is real, its
recurrence is a gated average with no eigenvalue parameterisation or discretisation
step to get right, an episode start is one multiplier set to zero, and it keeps the
GRU's update gate, which Craftax's recurrent baselines already rely on.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from nnxrl.networks.initializers import chrono_bias
from nnxrl.networks.torso import orthogonal_linear


class MinGRU(nnx.Module):
    """``layers`` minGRU layers, each feeding its states to the next:

        z_t = sigmoid(W_z x_t + b_z),   h~_t = W_h x_t + b_h
        h_t = (1 - z_t) * h_{t-1} + z_t * h~_t,   h_{t-1} := 0 where step t starts an episode

    that is h_t = a_t * h_{t-1} + b_t with a_t = (1 - z_t) * (1 - start_t) and
    b_t = z_t * h~_t, computed for all t at once by ``linear_recurrence``. The state
    [B, layers * H] holds every layer's last h. The biases start at 0 (a_t = 0.5 at
    first), or with ``chrono`` T each layer's b_z = -log(U(1, T - 1))
    (``initializers.chrono_bias``), so that 1 - z starts between 1/2 and 1 - 1/T.
    """

    def __init__(
        self, in_features: int, hidden_size: int, rngs: nnx.Rngs, layers: int = 1, chrono: int = 0
    ):
        sizes = [in_features] + [hidden_size] * (layers - 1)
        self.gates = nnx.List([orthogonal_linear(d, 2 * hidden_size, 1.0, rngs) for d in sizes])
        if chrono:
            for gate in self.gates:
                bias = -chrono_bias(rngs.params(), hidden_size, chrono)
                gate.bias[...] = gate.bias[...].at[:hidden_size].set(bias)
        self.hidden_size = hidden_size
        self.state_size = layers * hidden_size

    def __call__(
        self, state: jax.Array, x: jax.Array, start: jax.Array
    ) -> tuple[jax.Array, jax.Array]:
        """state [B, layers * H], x [T, B, D], start [T, B] ->
        (last state [B, layers * H], outputs [T, B, H] of the last layer)."""
        keep = 1.0 - start[..., None].astype(x.dtype)  # [T, B, 1]
        last = []
        for gate, h0 in zip(self.gates, jnp.split(state, len(self.gates), axis=-1), strict=True):
            z, candidate = jnp.split(gate(x), 2, axis=-1)
            z = jax.nn.sigmoid(z)
            x = linear_recurrence((1.0 - z) * keep, z * candidate, h0)
            last.append(x[-1])
        return jnp.concatenate(last, axis=-1), x


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
