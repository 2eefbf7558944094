"""SAC's network (Haarnoja et al. 2018): an actor, twin critics and the entropy
temperature, sharing no parameters.

- the actor: pi(a|s), a tanh-squashed Gaussian into the env's bounds whose mean and
  log-std are both outputs of its MLP (``policy_head.py``, ``squash: tanh``,
  ``log_std: state_dependent``);
- the critics: Q_i(s, a) [..., K], i = 1, 2, each its own encoder and MLP over the
  observation's features and the action rescaled to [-1, 1];
- ``log_alpha``: log of the temperature alpha, learned to hold the policy's entropy
  at its target (``algos/sac.py``); 0 at the start (alpha = 1).

``step`` offers the actor-critic interface (hidden, distribution, values) that a
trained policy acts through (``heads.py``: the ``soft_actor_critic`` head samples
from the distribution, or takes its squashed mean when greedy); its values are the
lesser critic's at the squashed mean.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from flax import nnx

from nnxrl.networks.distributions import TanhGaussian
from nnxrl.networks.policy_head import PolicyHead
from nnxrl.networks.torso import MLP, Encoder

NUM_CRITICS = 2


class SoftActorCritic(nnx.Module):
    """pi(a|s) [..., D], Q_1 and Q_2 (s, a) [2, ..., K], log alpha []."""

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
        if head is None or head.squash != "tanh":
            raise ValueError("SoftActorCritic needs a tanh-squashed Gaussian PolicyHead")
        self.policy = head
        self.actor_encoder = Encoder(obs_shape, conv_features, activation, rngs)
        d = self.actor_encoder.out_features
        self.actor = MLP(d, head.outputs, num_layers, width, activation, 0.01, rngs, layer_norm)
        self.critics = nnx.List(
            Critic(obs_shape, head.dim, num_values, num_layers, width, activation,
                   conv_features, rngs, layer_norm)
            for _ in range(NUM_CRITICS)
        )  # fmt: skip
        self.log_alpha = nnx.Param(jnp.zeros((), jnp.float32))

    def initial_hidden(self, batch_size: int) -> jax.Array:
        return jnp.zeros((batch_size, 0), jnp.float32)

    def step(
        self, hidden: jax.Array, obs: jax.Array, start: jax.Array
    ) -> tuple[jax.Array, TanhGaussian, jax.Array]:
        """The actor-critic interface: (hidden, pi(.|obs), min_i Q_i(obs, mode) [B, K])."""
        dist = self.distribution(obs)
        return hidden, dist, self.q(obs, dist.mode()).min(axis=0)

    def distribution(self, obs: jax.Array) -> TanhGaussian:
        """[..., *obs_shape] -> pi(.|obs), a TanhGaussian over [..., D]."""
        return self.policy(self.actor(self.actor_encoder(obs)))

    def q(self, obs: jax.Array, action: jax.Array) -> jax.Array:
        """[..., *obs_shape], [..., D] -> [2, ..., K]: both critics."""
        scaled = self.policy.unit_action(action)
        return jnp.stack([critic(obs, scaled) for critic in self.critics])


class Critic(nnx.Module):
    """Q(s, a) [..., K]: the observation's features and the action, through an MLP."""

    def __init__(
        self,
        obs_shape: Sequence[int],
        action_dim: int,
        num_values: int,
        num_layers: int,
        width: int,
        activation: str,
        conv_features: Sequence[int],
        rngs: nnx.Rngs,
        layer_norm: bool,
    ):
        self.encoder = Encoder(obs_shape, conv_features, activation, rngs)
        d = self.encoder.out_features + action_dim
        self.mlp = MLP(d, num_values, num_layers, width, activation, 1.0, rngs, layer_norm)

    def __call__(self, obs: jax.Array, unit_action: jax.Array) -> jax.Array:
        return self.mlp(jnp.concatenate([self.encoder(obs), unit_action], axis=-1))
