"""Q-networks for value-based learning (PQN): Q(s, .) for every action and reward stream.

``QNetwork`` is the paper's (Gallici et al. 2025): the shared encoder (conv torso for
images), then an MLP whose hidden layers are each followed by LayerNorm (switchable),
then a linear head. ``RecurrentQNetwork`` puts the GRU of the recurrent actor-critic
between an embedding MLP and the head (PQN-RNN). Both output [..., K, A]: one row of
action values per reward stream (K = 2 when an intrinsic reward has its own head), and
both are driven through the interface the actor-critics use: ``initial_hidden``,
``step`` (one env step, hidden state in and out) and ``unroll`` (whole sequences).

``dueling`` (Wang et al. 2016, "Dueling Network Architectures"): the last layer gives
one more output per stream, a state value V, beside the advantages A of the actions,
and Q = V + A - mean_a A (``q_values``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from nnxrl.networks.distributions import masked_argmax
from nnxrl.networks.gru import GRU
from nnxrl.networks.recurrent import ActsFromCore
from nnxrl.networks.torso import ACTIVATIONS, MLP, Encoder, orthogonal_linear


class QNetwork(nnx.Module):
    """Q(s, a) [..., K, A] from an encoder and a (LayerNorm) MLP."""

    def __init__(
        self,
        obs_shape: Sequence[int],
        num_actions: int,
        num_layers: int,
        width: int,
        activation: str,
        conv_features: Sequence[int],
        rngs: nnx.Rngs,
        num_values: int = 1,
        layer_norm: bool = True,
        dueling: bool = False,
    ):
        self.encoder = Encoder(obs_shape, conv_features, activation, rngs)
        d = self.encoder.out_features
        outputs = num_values * (num_actions + dueling)
        self.mlp = MLP(d, outputs, num_layers, width, activation, 1.0, rngs, layer_norm)
        self.shape = (num_values, num_actions)
        self.dueling = dueling

    def initial_hidden(self, batch_size: int) -> jax.Array:
        return jnp.zeros((batch_size, 0), jnp.float32)

    def step(
        self, hidden: jax.Array, obs: jax.Array, start: jax.Array
    ) -> tuple[jax.Array, jax.Array]:
        """hidden [B, 0], obs [B, ...], start [B] -> (hidden, Q [B, K, A])."""
        return hidden, self(obs)

    def unroll(self, hidden: jax.Array, obs: jax.Array, start: jax.Array) -> jax.Array:
        """obs [*L, ...] -> Q [*L, K, A] (hidden and start unused)."""
        return self(obs)

    def __call__(self, obs: jax.Array) -> jax.Array:
        return q_values(self.mlp(self.encoder(obs)), self.shape, self.dueling)


class RecurrentQNetwork(ActsFromCore, nnx.Module):
    """Q(history, a) [..., K, A]: encoder -> (LayerNorm) MLP embedding -> memory core
    (``make_core``: the GRU unless given; see ``gru.py``) -> linear head. The
    hidden state resets to zeros where an episode starts."""

    def __init__(
        self,
        obs_shape: Sequence[int],
        num_actions: int,
        num_layers: int,
        width: int,
        activation: str,
        conv_features: Sequence[int],
        rngs: nnx.Rngs,
        num_values: int = 1,
        layer_norm: bool = True,
        make_core: Callable[[int, int, nnx.Rngs], nnx.Module] = GRU,
        dueling: bool = False,
    ):
        self.encoder = Encoder(obs_shape, conv_features, activation, rngs)
        d = self.encoder.out_features
        # num_layers (LayerNorm) layers: an MLP's hidden layers, then its output layer
        # normalised and activated the same way
        self.embed = MLP(d, width, num_layers - 1, width, activation, np.sqrt(2), rngs, layer_norm)
        self.embed_norm = nnx.LayerNorm(width, rngs=rngs) if layer_norm else None
        self.core = make_core(width, width, rngs)
        self.head = orthogonal_linear(width, num_values * (num_actions + dueling), 1.0, rngs)
        self.activation = ACTIVATIONS[activation]
        self.shape = (num_values, num_actions)
        self.dueling = dueling
        self.hidden_size = self.core.state_size

    def initial_hidden(self, batch_size: int) -> jax.Array:
        return jnp.zeros((batch_size, self.hidden_size), jnp.float32)

    def unroll(self, hidden: jax.Array, obs: jax.Array, start: jax.Array) -> jax.Array:
        """Whole sequences: hidden [B, S] the state before the first step, obs
        [T, B, ...], start [T, B] -> Q [T, B, K, A]."""
        _, h = self.core(hidden, self._embed(obs), start)
        return self._head(h)

    def step(
        self, hidden: jax.Array, obs: jax.Array, start: jax.Array
    ) -> tuple[jax.Array, jax.Array]:
        """hidden [B, S], obs [B, ...], start [B] -> (next hidden [B, S], Q [B, K, A])."""
        hidden, h = self.core(hidden, self._embed(obs[None]), start[None])
        return hidden, self._head(h[0])

    def _embed(self, obs: jax.Array) -> jax.Array:
        x = self.embed(self.encoder(obs))
        if self.embed_norm is not None:
            x = self.embed_norm(x)
        return self.activation(x)

    def _head(self, h: jax.Array) -> jax.Array:
        return q_values(self.head(h), self.shape, self.dueling)


def q_values(out: jax.Array, shape: tuple[int, int], dueling: bool) -> jax.Array:
    """The head's outputs [..., K (A + dueling)] -> Q [..., K, A]; dueling: each
    stream's first output is V, the rest A, and Q = V + A - mean_a A."""
    if not dueling:
        return out.reshape((*out.shape[:-1], *shape))
    out = out.reshape((*out.shape[:-1], shape[0], shape[1] + 1))
    value, advantage = out[..., :1], out[..., 1:]
    return value + advantage - advantage.mean(axis=-1, keepdims=True)


def acting_values(q: jax.Array, weights: jax.Array) -> jax.Array:
    """The values an agent acts on: Q [..., K, A], weights [K] -> sum_k w_k Q_k [..., A]
    (K = 1: Q itself, whatever the weight)."""
    if q.shape[-2] == 1:
        return q[..., 0, :]
    return jnp.einsum("...ka,k->...a", q, weights)


def greedy_values(q: jax.Array, weights: jax.Array, legal: jax.Array | None = None) -> jax.Array:
    """Each stream's value of a state under the greedy action: Q [..., K, A] ->
    Q_k(s, a*) [..., K] with a* = argmax_a of the acting values over the ``legal``
    actions [..., A] (None: all; K = 1: max_a Q)."""
    best = masked_argmax(acting_values(q, weights), legal)
    index = jnp.broadcast_to(best[..., None, None], (*q.shape[:-1], 1))
    return jnp.take_along_axis(q, index, axis=-1)[..., 0]
