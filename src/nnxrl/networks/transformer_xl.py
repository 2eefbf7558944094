"""A gated Transformer-XL memory (Dai et al. 2019; the gating of GTrXL, Parisotto et
al. 2020): each step attends to its own layer inputs over the last M steps, kept in a
window carried from step to step and from rollout to rollout, with the same interface
as the GRU (``gru.py``).

The carried state is the window: for each layer, the inputs it saw at the last M
steps, and for each slot whether it belongs to the current episode. ``__call__`` runs
any number of steps T at once (the rollout's ``step``: T = 1; the update's
``unroll``: the whole rollout from the window stored before it), and the mask is the
same in both, so the two agree: a query at step t sees the M steps before it and
itself, within its own episode, whether those steps are in the window or in the
sequence. Positions are relative: a learned bias per head and distance 0..M.

Gradients flow through the sequence being unrolled (the rollout, ``num_steps``), not
into the window stored before it, as in Transformer-XL's segment recurrence.

Acting caches the keys and values: within a rollout the parameters are fixed, so a
window slot's keys and values are the same at every step that sees it.
``acting_state`` turns the window into an ``ActingMemory`` (rings of the inputs and of
their keys and values, projected once with the parameters the rollout acts with), from
which a step projects only its own input and writes it into the ring in place, where
the uncached step projects all M + 1 inputs again; ``carried_state`` gives the window
back, so what is stored between rollouts (and checkpointed) holds inputs alone, from
which the update's unroll projects keys and values with its own parameters. At
Craftax's settings (M = 128, width 256, 2 layers), 64 envs on CPU: 6.3 ms a step
against 43-50 ms uncached (`benchmarks/ab.py`, docs/memory.md).
"""

from __future__ import annotations

from typing import Any, NamedTuple

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
    first, then the M slots' flags (1: the slot is in the current episode). The acting
    state (``acting_state``) adds every layer's keys and values of its window [M, 2H].
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

    def __call__(self, state: Any, x: jax.Array, start: jax.Array) -> tuple[Any, jax.Array]:
        """state [B, S], x [T, B, D], start [T, B] -> (last state [B, S], outputs
        [T, B, H] of the last layer). From an ``ActingMemory`` (``acting_state``): one
        step (T = 1) -> (the next ActingMemory, outputs [1, B, H])."""
        if self.input is not None:
            x = self.input(x)
        if isinstance(state, ActingMemory):
            return self.act(state, x, start)
        windows, in_episode = self.split_state(state)
        mask, end_flags = attention_mask(in_episode, start, self.memory)
        distance = relative_distance(start.shape[0], self.memory)
        new_windows = []
        for block, window in zip(self.blocks, windows, strict=True):
            context = jnp.concatenate([window, jnp.swapaxes(x, 0, 1)], 1)  # [B, M + T, H]
            new_windows.append(context[:, -self.memory :])
            x = block(block.keys_values(context), x, mask, distance)
        flat = [w.reshape(w.shape[0], -1) for w in new_windows]
        return jnp.concatenate([*flat, end_flags], axis=-1), x

    def split_state(self, state: jax.Array) -> tuple[list[jax.Array], jax.Array]:
        """[B, S] -> (per layer the window [B, M, H], the slots' flags [B, M] bool)."""
        size, shape = self.memory * self.hidden_size, (-1, self.memory, self.hidden_size)
        windows = [
            state[:, i * size : (i + 1) * size].reshape(shape) for i in range(len(self.blocks))
        ]
        return windows, state[:, len(self.blocks) * size :] > 0.5

    def acting_state(self, state: jax.Array) -> ActingMemory:
        """[B, S] -> an ActingMemory: rings of M + 1 slots holding the windows, their
        keys and values (projected with these parameters) and flags after a free slot
        0, which the next step takes."""
        windows, in_episode = self.split_state(state)

        def after_free_slot(a: jax.Array) -> jax.Array:
            return jnp.concatenate([jnp.zeros_like(a[:, :1]), a], 1)

        keys_values = [
            jnp.split(after_free_slot(block.keys_values(w)), 2, axis=-1)
            for block, w in zip(self.blocks, windows, strict=True)
        ]
        return ActingMemory(
            windows=tuple(after_free_slot(w) for w in windows),
            keys=tuple(k for k, _ in keys_values),
            values=tuple(v for _, v in keys_values),
            in_episode=after_free_slot(in_episode),
            next=jnp.zeros((), jnp.int32),
        )

    def act(
        self, memory: ActingMemory, x: jax.Array, start: jax.Array
    ) -> tuple[ActingMemory, jax.Array]:
        """One step from ``memory``: x [1, B, H], start [1, B]. Its slot ``next`` holds
        the step M + 1 back, out of reach: the query attends to the other M slots'
        cached keys and values and to its own, which then take that slot."""
        if x.shape[0] != 1:
            raise ValueError(f"an acting state steps one step at a time, not {x.shape[0]}")
        slot, slots = memory.next, jnp.arange(self.memory + 1)
        in_episode = memory.in_episode & ~start[0][:, None]  # [B, M + 1]
        mask = in_episode & (slots != slot)
        distance = (slot - slots) % (self.memory + 1)  # steps back, 1..M where it counts
        windows, keys, values = [], [], []
        rings = zip(self.blocks, memory.windows, memory.keys, memory.values, strict=True)
        for block, window, ring_k, ring_v in rings:
            windows.append(write_slot(window, x[0], slot))
            own = jnp.split(block.keys_values(x[0]), 2, axis=-1)  # key and value [B, H]
            x = block.step((ring_k, ring_v), own, x, mask, distance)
            # own's writes made to depend on the output, which read the rings: XLA then
            # reads before it writes, in place (else it copies each ring twice a step:
            # 14.3 -> 10.0 ms a step at M = 128, width 256, 2 layers, 64 envs)
            own = [a + 0.0 * x[0, :, :1] for a in own]
            keys.append(write_slot(ring_k, own[0], slot))
            values.append(write_slot(ring_v, own[1], slot))
        in_episode = in_episode | (slots == slot)
        next_slot = (slot + 1) % (self.memory + 1)
        return ActingMemory(tuple(windows), tuple(keys), tuple(values), in_episode, next_slot), x

    def carried_state(self, memory: ActingMemory) -> jax.Array:
        """An ActingMemory -> [B, S]: the last M steps of its rings, oldest first."""

        def last_steps(ring: jax.Array) -> jax.Array:
            ordered = jnp.roll(ring, -memory.next, axis=1)[:, 1:]  # slot next: oldest
            return ordered.reshape(ordered.shape[0], -1)

        flags = last_steps(memory.in_episode).astype(jnp.float32)
        return jnp.concatenate([*[last_steps(w) for w in memory.windows], flags], -1)


class ActingMemory(NamedTuple):
    """What a Transformer-XL acts from within a rollout, its parameters fixed: per
    layer rings of M + 1 slots of the window's inputs, of their keys and of their
    values ([B, M + 1, H] each), the slots' flags [B, M + 1] bool (in the current
    episode) and ``next``, the slot the next step writes (the oldest)."""

    windows: tuple
    keys: tuple
    values: tuple
    in_episode: jax.Array
    next: jax.Array


def write_slot(ring: jax.Array, value: jax.Array, slot: jax.Array) -> jax.Array:
    """ring [B, N, ...] with value [B, ...] at ``slot`` (in place inside a scan)."""
    return jax.lax.dynamic_update_slice_in_dim(ring, value[:, None], slot, axis=1)


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

    def __call__(
        self, keys_values: jax.Array, x: jax.Array, mask: jax.Array, distance: jax.Array
    ) -> jax.Array:
        """keys_values [B, M + T, 2H] of [window; x] (``keys_values``), x [T, B, H],
        mask [B, T, M + T], distance [T, M + T] (``relative_distance``) -> [T, B, H]."""
        queries = self.norm_query(jnp.swapaxes(x, 0, 1))
        attended = self.attend(queries, keys_values, mask, distance)
        return self.feed_forward(x, jnp.swapaxes(attended, 0, 1))

    def step(
        self, ring: tuple, own: list, x: jax.Array, mask: jax.Array, distance: jax.Array
    ) -> jax.Array:
        """One acting step: ring the cached keys and values [B, N, H] each, own the
        step's [B, H] each, x [1, B, H], mask [B, N], distance [N] (of the ring's
        slots) -> [1, B, H]."""
        attended = self.attend_one(self.norm_query(x[0]), ring, own, mask, distance)
        return self.feed_forward(x, attended[None])

    def feed_forward(self, x: jax.Array, attended: jax.Array) -> jax.Array:
        """The attention's output let into x through its gate, then the gated MLP."""
        x = self.attention_gate(x, jax.nn.relu(attended))
        y = self.mlp_out(jax.nn.relu(self.mlp_in(self.norm_mlp(x))))
        return self.mlp_gate(x, jax.nn.relu(y))

    def keys_values(self, inputs: jax.Array) -> jax.Array:
        """Layer inputs [B, N, H] -> their keys and values [B, N, 2H]: W_kv LN(x)."""
        return self.key_value(self.norm_context(inputs))

    def attend(
        self, queries: jax.Array, keys_values: jax.Array, mask: jax.Array, distance: jax.Array
    ) -> jax.Array:
        """Multi-head attention with a relative-position bias: queries [B, T, H],
        keys_values [B, M + T, 2H], mask [B, T, M + T], distance [T, M + T] -> [B, T, H].

            logits[b, h, t, j] = q_t . k_j / sqrt(H / heads) + bias[h, M + t - j]

        (M + t - j: how many steps key j lies before query t, 0..M where the mask
        allows it), softmax over j where the mask holds."""
        b, t, width = queries.shape
        split = (self.heads, width // self.heads)
        q = self.query(queries).reshape(b, t, *split)
        k, v = jnp.split(keys_values, 2, axis=-1)
        k, v = k.reshape(b, -1, *split), v.reshape(b, -1, *split)
        bias = self.position_bias[...][:, jnp.clip(distance, 0, self.memory)]  # [heads, T, M+T]
        logits = jnp.einsum("bthd,bjhd->bhtj", q, k) / np.sqrt(split[1])
        logits = jnp.where(mask[:, None], logits + bias, -jnp.inf)
        weights = jax.nn.softmax(logits, axis=-1)
        return self.out(jnp.einsum("bhtj,bjhd->bthd", weights, v).reshape(b, t, width))

    def attend_one(
        self, query: jax.Array, ring: tuple, own: list, mask: jax.Array, distance: jax.Array
    ) -> jax.Array:
        """``attend`` for one query [B, H] over the ring's cached keys and values
        (``ring``, [B, N, H] each) where mask [B, N] holds (``distance`` [N] steps
        back) and its own (``own``, [B, H] each; distance 0) -> [B, H]. The products
        are summed in the cache's layout: the ring is read once, not copied (2x
        faster than the einsum on CPU)."""
        b, width = query.shape
        split = (self.heads, width // self.heads)
        q = self.query(query).reshape(b, 1, *split)
        k, v = (a.reshape(b, -1, *split) for a in ring)
        k_own, v_own = (a.reshape(b, *split) for a in own)
        bias = self.position_bias[...]  # [heads, distance]
        scale = np.sqrt(split[1])
        logits = (q * k).sum(-1) / scale + bias[:, jnp.clip(distance, 0, self.memory)].T
        logits = jnp.where(mask[..., None], logits, -jnp.inf)  # [B, N, heads]
        own_logit = (q[:, 0] * k_own).sum(-1) / scale + bias[:, 0]  # [B, heads]
        weights = jax.nn.softmax(jnp.concatenate([logits, own_logit[:, None]], 1), axis=1)
        mixed = (weights[:, :-1, :, None] * v).sum(1) + weights[:, -1, :, None] * v_own
        return self.out(mixed.reshape(b, width))


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


def relative_distance(steps: int, memory: int) -> jax.Array:
    """[T, M + T]: how many steps key j of [window; sequence] lies before query t,
    M + t - j (outside 0..M where the mask excludes it)."""
    return memory + jnp.arange(steps)[:, None] - jnp.arange(memory + steps)[None, :]


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
