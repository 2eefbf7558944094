"""A gated Transformer-XL memory (Dai et al. 2019; the gating of GTrXL, Parisotto et
al. 2020): each step attends to its own layer inputs over the last M steps, kept in a
window carried from step to step and from rollout to rollout, with the same interface
as the GRU (``recurrent.py``).

The carried state is the window: for each layer, the inputs it saw at the last M
steps, and for each slot whether it belongs to the current episode. ``__call__`` runs
any number of steps T at once (the rollout's ``step``: T = 1; the update's
``unroll``: the whole rollout from the window stored before it), and the mask is the
same in both, so the two agree: a query at step t sees the M steps before it and
itself, within its own episode, whether those steps are in the window or in the
sequence. Positions are relative: a learned bias per head and distance 0..M.

Gradients flow through the sequence being unrolled (the rollout, ``num_steps``), not
into the window stored before it, as in Transformer-XL's segment recurrence.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from nnxrl.networks.torso import orthogonal_linear


class TransformerXL(nnx.Module):
    """``layers`` gated Transformer-XL layers of width H with ``heads`` heads and a
    window of ``memory`` (M) steps. Each layer (pre-LayerNorm, GTrXL's identity-
    leaning GRU gates):

        y = MultiHeadAttention(LN(x_t), LN([window; x_{<=t}]))   masked to the last M
        x = gate(x, relu(y));   x = gate(x, relu(MLP(LN(x))))

    The state [B, layers * M * H + M] is every layer's window of inputs [M, H], oldest
    first, then the M slots' flags (1: the slot is in the current episode).
    """

    def __init__(
        self,
        in_features: int,
        hidden_size: int,
        rngs: nnx.Rngs,
        layers: int = 2,
        heads: int = 4,
        memory: int = 32,
        gate_bias: float = 2.0,
    ):
        assert hidden_size % heads == 0, f"{heads} heads do not divide width {hidden_size}"
        self.input = (
            orthogonal_linear(in_features, hidden_size, 1.0, rngs)
            if in_features != hidden_size
            else None
        )
        self.blocks = nnx.List(
            [GatedBlock(hidden_size, heads, memory, gate_bias, rngs) for _ in range(layers)]
        )
        self.hidden_size = hidden_size
        self.memory = memory
        self.state_size = layers * memory * hidden_size + memory

    def __call__(
        self, state: jax.Array, x: jax.Array, start: jax.Array
    ) -> tuple[jax.Array, jax.Array]:
        """state [B, S], x [T, B, D], start [T, B] -> (last state [B, S], outputs
        [T, B, H] of the last layer)."""
        if self.input is not None:
            x = self.input(x)
        windows, in_episode = self.split_state(state)
        mask, end_flags = attention_mask(in_episode, start, self.memory)
        new_windows = []
        for block, window in zip(self.blocks, windows, strict=True):
            new_windows.append(
                jnp.concatenate([window, jnp.swapaxes(x, 0, 1)], 1)[:, -self.memory :]
            )
            x = block(window, x, mask)
        flat = [w.reshape(w.shape[0], -1) for w in new_windows]
        return jnp.concatenate([*flat, end_flags], axis=-1), x

    def split_state(self, state: jax.Array) -> tuple[list[jax.Array], jax.Array]:
        """[B, S] -> (per layer the window [B, M, H], the slots' flags [B, M] bool)."""
        size = self.memory * self.hidden_size
        windows = [
            state[:, i * size : (i + 1) * size].reshape(-1, self.memory, self.hidden_size)
            for i in range(len(self.blocks))
        ]
        return windows, state[:, len(self.blocks) * size :] > 0.5


class GatedBlock(nnx.Module):
    """One GTrXL layer: attention over the window and the sequence, then an MLP, each
    added through a GRU-style gate that starts close to the identity (Parisotto et al.
    2020, eq. 8-11: z's bias is -gate_bias)."""

    def __init__(self, width: int, heads: int, memory: int, gate_bias: float, rngs: nnx.Rngs):
        self.norm_query = nnx.LayerNorm(width, rngs=rngs)
        self.norm_context = nnx.LayerNorm(width, rngs=rngs)
        self.query = orthogonal_linear(width, width, 1.0, rngs)
        self.key_value = orthogonal_linear(width, 2 * width, 1.0, rngs)
        self.out = orthogonal_linear(width, width, 1.0, rngs)
        self.position_bias = nnx.Param(jnp.zeros((heads, memory + 1)))  # [heads, distance]
        self.attention_gate = Gate(width, gate_bias, rngs)
        self.norm_mlp = nnx.LayerNorm(width, rngs=rngs)
        self.mlp_in = orthogonal_linear(width, width, np.sqrt(2), rngs)
        self.mlp_out = orthogonal_linear(width, width, 1.0, rngs)
        self.mlp_gate = Gate(width, gate_bias, rngs)
        self.heads = heads
        self.memory = memory

    def __call__(self, window: jax.Array, x: jax.Array, mask: jax.Array) -> jax.Array:
        """window [B, M, H], x [T, B, H], mask [B, T, M + T] -> [T, B, H]."""
        context = jnp.concatenate([window, jnp.swapaxes(x, 0, 1)], axis=1)  # [B, M + T, H]
        attended = self.attend(
            self.norm_query(jnp.swapaxes(x, 0, 1)), self.norm_context(context), mask
        )
        x = self.attention_gate(x, jax.nn.relu(jnp.swapaxes(attended, 0, 1)))
        y = self.mlp_out(jax.nn.relu(self.mlp_in(self.norm_mlp(x))))
        return self.mlp_gate(x, jax.nn.relu(y))

    def attend(self, queries: jax.Array, context: jax.Array, mask: jax.Array) -> jax.Array:
        """Multi-head attention with a relative-position bias: queries [B, T, H],
        context [B, M + T, H], mask [B, T, M + T] -> [B, T, H].

            logits[b, h, t, j] = q_t . k_j / sqrt(H / heads) + bias[h, M + t - j]

        (M + t - j: how many steps key j lies before query t, 0..M where the mask
        allows it), softmax over j where the mask holds."""
        b, t, width = queries.shape
        split = (self.heads, width // self.heads)
        q = self.query(queries).reshape(b, t, *split)
        k, v = jnp.split(self.key_value(context), 2, axis=-1)
        k, v = k.reshape(b, -1, *split), v.reshape(b, -1, *split)
        logits = jnp.einsum("bthd,bjhd->bhtj", q, k) / np.sqrt(split[1])
        distance = self.memory + jnp.arange(t)[:, None] - jnp.arange(self.memory + t)[None, :]
        bias = self.position_bias[...][:, jnp.clip(distance, 0, self.memory)]  # [heads, T, M+T]
        logits = jnp.where(mask[:, None], logits + bias, -jnp.inf)
        weights = jax.nn.softmax(logits, axis=-1)
        return self.out(jnp.einsum("bhtj,bjhd->bthd", weights, v).reshape(b, t, width))


class Gate(nnx.Module):
    """GTrXL's GRU-type gate g(x, y), which lets y into the residual stream x:

    r = sigmoid(W_r y + U_r x),   z = sigmoid(W_z y + U_z x - b_g)
    h = tanh(W_g y + U_g (r * x)),   g = (1 - z) * x + z * h
    """

    def __init__(self, width: int, gate_bias: float, rngs: nnx.Rngs):
        self.from_y = orthogonal_linear(width, 3 * width, 1.0, rngs)
        self.from_x = orthogonal_linear(width, 2 * width, 1.0, rngs, bias=False)
        self.candidate_x = orthogonal_linear(width, width, 1.0, rngs, bias=False)
        self.gate_bias = gate_bias

    def __call__(self, x: jax.Array, y: jax.Array) -> jax.Array:
        wr, wz, wg = jnp.split(self.from_y(y), 3, axis=-1)
        ur, uz = jnp.split(self.from_x(x), 2, axis=-1)
        r = jax.nn.sigmoid(wr + ur)
        z = jax.nn.sigmoid(wz + uz - self.gate_bias)
        h = jnp.tanh(wg + self.candidate_x(r * x))
        return (1.0 - z) * x + z * h


def attention_mask(
    in_episode: jax.Array, start: jax.Array, memory: int
) -> tuple[jax.Array, jax.Array]:
    """Which keys each query may attend to, and the window's flags after the sequence.

    in_episode [B, M] (window slot i, oldest first, is in the episode the sequence
    begins in), start [T, B] -> (mask [B, T, M + T], flags [B, M]). Over the keys j of
    [window; sequence], query t sees key j when it lies at most M steps before it
    (t <= j <= M + t) and in the same episode: e_j = e_t, with e the number of
    episode starts up to a step (0 for the window's slots that are in the episode,
    -1 for the others).
    """
    t = start.shape[0]
    episode = jnp.cumsum(start.T.astype(jnp.int32), axis=1)  # [B, T]
    window = jnp.where(in_episode, 0, -1)  # [B, M]
    keys = jnp.concatenate([window, episode], axis=1)  # [B, M + T]
    j, q = jnp.arange(memory + t)[None, :], jnp.arange(t)[:, None]
    in_reach = (j >= q) & (j <= memory + q)  # [T, M + T]
    mask = in_reach[None] & (keys[:, None, :] == episode[:, :, None])
    flags = keys[:, -memory:] == episode[:, -1:]  # the slots in the last step's episode
    return mask, flags.astype(jnp.float32)
