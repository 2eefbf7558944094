"""A network kind of your own, used by PPO and by PQN from YAML: a residual MLP
("resmlp") over nnxrl's observation encoder. Registering it is all it takes:

    uv run nnxrl --plugin examples/custom_network.py train configs/ppo-cartpole.yaml \
        --set network.kind=resmlp --set "network.options={num_blocks: 2}"
    uv run nnxrl --plugin examples/custom_network.py train configs/pqn-cartpole.yaml \
        --set network.kind=resmlp

A kind carries one builder per head: ``actor_critic`` (PPO) and ``q`` (PQN). Both
nets here are feed-forward, so their hidden state is empty ([B, 0]) and ``step`` and
``unroll`` just apply them (see ``nnxrl.networks.registry`` for the interface).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
from flax import nnx

import nnxrl
from nnxrl.networks.policy_head import PolicyHead
from nnxrl.networks.torso import Encoder


@dataclass(frozen=True)
class ResMLPOptions:
    num_blocks: int = nnxrl.setting(2, "Residual blocks, each x + W relu(LayerNorm(x)).", low=1)


class ResidualTorso(nnx.Module):
    """[..., D] -> [..., width]: a linear map to width, then residual blocks."""

    def __init__(self, in_features: int, width: int, num_blocks: int, rngs: nnx.Rngs):
        self.embed = nnx.Linear(in_features, width, rngs=rngs)
        self.norms = nnx.List(nnx.LayerNorm(width, rngs=rngs) for _ in range(num_blocks))
        self.blocks = nnx.List(nnx.Linear(width, width, rngs=rngs) for _ in range(num_blocks))

    def __call__(self, x: jax.Array) -> jax.Array:
        h = self.embed(x)
        for norm, block in zip(self.norms, self.blocks, strict=True):
            h = h + block(jax.nn.relu(norm(h)))
        return jax.nn.relu(h)


class ResMLPActorCritic(nnx.Module):
    """PPO's head: pi(a|s) and V(s) [..., K] on one shared residual torso."""

    def __init__(self, network, options: ResMLPOptions, spec, num_values: int, rngs):
        self.encoder = Encoder(spec.obs_shape, network.conv_features, network.activation, rngs)
        self.torso = ResidualTorso(
            self.encoder.out_features, network.width, options.num_blocks, rngs
        )
        self.policy = PolicyHead.for_env(spec, rngs)
        self.actor = nnx.Linear(network.width, self.policy.outputs, rngs=rngs)
        self.critic = nnx.Linear(network.width, num_values, rngs=rngs)

    def initial_hidden(self, batch_size: int) -> jax.Array:
        return jnp.zeros((batch_size, 0), jnp.float32)

    def step(self, hidden, obs, start):
        dist, value = self(obs)
        return hidden, dist, value

    def unroll(self, hidden, obs, start):
        return self(obs)

    def value(self, obs: jax.Array) -> jax.Array:
        return self.critic(self.torso(self.encoder(obs)))

    def __call__(self, obs: jax.Array):
        h = self.torso(self.encoder(obs))
        return self.policy(self.actor(h)), self.critic(h)


class ResMLPQNetwork(nnx.Module):
    """PQN's head: Q(s, a) [..., K, A] on the residual torso."""

    def __init__(self, network, options: ResMLPOptions, spec, num_values: int, rngs):
        self.encoder = Encoder(spec.obs_shape, network.conv_features, network.activation, rngs)
        self.torso = ResidualTorso(
            self.encoder.out_features, network.width, options.num_blocks, rngs
        )
        self.q = nnx.Linear(network.width, num_values * spec.num_actions, rngs=rngs)
        self.shape = (num_values, spec.num_actions)

    def initial_hidden(self, batch_size: int) -> jax.Array:
        return jnp.zeros((batch_size, 0), jnp.float32)

    def step(self, hidden, obs, start):
        return hidden, self(obs)

    def unroll(self, hidden, obs, start):
        return self(obs)

    def __call__(self, obs: jax.Array) -> jax.Array:
        q = self.q(self.torso(self.encoder(obs)))
        return q.reshape((*q.shape[:-1], *self.shape))


# a builder is called as build(network, options, spec, num_values, rngs): the classes are
nnxrl.register_network(
    "resmlp", ResMLPOptions, {"actor_critic": ResMLPActorCritic, "q": ResMLPQNetwork}
)
