"""A recurrent actor-critic: embedding -> memory core -> actor and critic heads.

As in the Craftax baselines' PPO-RNN, actor and critic share the embedding and the
core (the GRU unless given: ``gru.py``, ``lstm.py``, ``min_gru.py``); each has its
own MLP head. The hidden state is reset to zeros wherever an episode starts, inside
the scan over time, so one sequence may hold several episodes and the outputs after
a reset equal those of a fresh sequence.

A core is ``make_core(in_features, hidden_size, rngs)``, a module called as
``core(state [B, S], x [T, B, D], start [T, B]) -> (last state [B, S], outputs
[T, B, hidden_size])`` with ``state_size`` S.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from nnxrl.networks.distributions import Categorical
from nnxrl.networks.gru import GRU
from nnxrl.networks.policy_head import PolicyHead
from nnxrl.networks.torso import ACTIVATIONS, MLP, Encoder, orthogonal_linear


class ActsFromCore:
    """What a model with a memory ``core`` acts from while its parameters are fixed
    (a rollout, an evaluation): the core's ``acting_state`` when it has one (what it
    caches meanwhile: the Transformer-XL's keys and values), else the hidden state;
    ``carried_state`` gives back the state kept between rollouts."""

    def acting_state(self, hidden: jax.Array) -> jax.Array:
        prepare = getattr(self.core, "acting_state", None)
        return hidden if prepare is None else prepare(hidden)

    def carried_state(self, hidden: jax.Array) -> jax.Array:
        drop = getattr(self.core, "carried_state", None)
        return hidden if drop is None else drop(hidden)


class RecurrentActorCritic(ActsFromCore, nnx.Module):
    """pi(a | history) and V(history) [..., num_values] through a shared memory core
    (``make_core``: the GRU unless given)."""

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
        layer_norm: bool = False,
        head: PolicyHead | None = None,
        make_core: Callable[[int, int, nnx.Rngs], nnx.Module] = GRU,
    ):
        self.encoder = Encoder(obs_shape, conv_features, activation, rngs)
        self.embed = orthogonal_linear(self.encoder.out_features, width, np.sqrt(2), rngs)
        self.core = make_core(width, width, rngs)
        self.policy = head or PolicyHead(num_actions, rngs)  # Categorical unless given
        outputs = self.policy.outputs
        self.actor = MLP(width, outputs, num_layers, width, activation, 0.01, rngs, layer_norm)
        self.critic = MLP(width, num_values, num_layers, width, activation, 1.0, rngs, layer_norm)
        self.activation = ACTIVATIONS[activation]
        self.hidden_size = self.core.state_size

    def initial_hidden(self, batch_size: int) -> jax.Array:
        return jnp.zeros((batch_size, self.hidden_size), jnp.float32)

    def unroll(
        self, hidden: jax.Array, obs: jax.Array, start: jax.Array
    ) -> tuple[Categorical, jax.Array]:
        """Whole sequences: hidden [B, S] the state before the first step, obs
        [T, B, ...], start [T, B] -> (Categorical over [T, B, A], value [T, B, K])."""
        x = self.activation(self.embed(self.encoder(obs)))
        _, h = self.core(hidden, x, start)
        return self.policy(self.actor(h)), self.critic(h)

    def step(
        self, hidden: jax.Array, obs: jax.Array, start: jax.Array
    ) -> tuple[jax.Array, Categorical, jax.Array]:
        """One step of B envs: hidden [B, S], obs [B, ...], start [B] ->
        (next hidden [B, S], Categorical over [B, A], value [B, K])."""
        x = self.activation(self.embed(self.encoder(obs[None])))
        hidden, h = self.core(hidden, x, start[None])
        return hidden, self.policy(self.actor(h[0])), self.critic(h[0])
