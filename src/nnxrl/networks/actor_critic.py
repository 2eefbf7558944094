"""Separate actor and critic networks (Flax NNX) with orthogonal initialisation.

Each of actor and critic has its own encoder (conv torso for image observations)
and MLP; they share no parameters. The critic has one output per reward stream
(1 normally; 2 when an intrinsic reward is learned by its own value head).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from flax import nnx

from nnxrl.networks.distributions import Categorical
from nnxrl.networks.policy_head import PolicyHead
from nnxrl.networks.torso import MLP, Encoder


class ActorCritic(nnx.Module):
    """pi(a|s) (a Categorical, or a Gaussian for continuous actions: ``policy_head.py``)
    and V(s) [..., num_values], from two networks that share nothing."""

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
    ):
        self.actor_encoder = Encoder(obs_shape, conv_features, activation, rngs)
        self.critic_encoder = Encoder(obs_shape, conv_features, activation, rngs)
        d = self.actor_encoder.out_features
        self.policy = head or PolicyHead(num_actions, rngs)  # Categorical unless given
        outputs = self.policy.outputs
        self.actor = MLP(d, outputs, num_layers, width, activation, 0.01, rngs, layer_norm)
        self.critic = MLP(d, num_values, num_layers, width, activation, 1.0, rngs, layer_norm)

    # The recurrent interface, with an empty hidden state ([B, 0]): PPO drives both
    # kinds of network through initial_hidden, step and unroll.

    def initial_hidden(self, batch_size: int) -> jax.Array:
        return jnp.zeros((batch_size, 0), jnp.float32)

    def step(
        self, hidden: jax.Array, obs: jax.Array, start: jax.Array
    ) -> tuple[jax.Array, Categorical, jax.Array]:
        dist, value = self(obs)
        return hidden, dist, value

    def unroll(
        self, hidden: jax.Array, obs: jax.Array, start: jax.Array
    ) -> tuple[Categorical, jax.Array]:
        return self(obs)

    def value(self, obs: jax.Array) -> jax.Array:
        """[..., *obs_shape] -> [..., num_values]"""
        return self.critic(self.critic_encoder(obs))

    def __call__(self, obs: jax.Array) -> tuple[Categorical, jax.Array]:
        """[..., *obs_shape] -> (Categorical over [..., A], value [..., num_values])"""
        return self.policy(self.actor(self.actor_encoder(obs))), self.value(obs)
