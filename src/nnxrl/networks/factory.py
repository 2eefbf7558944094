"""The actor-critic a network config describes, for an env's spec."""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax
from flax import nnx

from nnxrl.envs.base import EnvSpec
from nnxrl.networks.actor_critic import ActorCritic
from nnxrl.networks.recurrent import RecurrentActorCritic

if TYPE_CHECKING:
    from nnxrl.config import NetworkConfig


def build_network(
    network: NetworkConfig, spec: EnvSpec, num_values: int, key: jax.Array
) -> ActorCritic | RecurrentActorCritic:
    """``network.kind`` feedforward -> ActorCritic, gru -> RecurrentActorCritic, with
    ``num_values`` critic outputs (one per reward stream)."""
    kind = RecurrentActorCritic if network.kind == "gru" else ActorCritic
    return kind(
        spec.obs_shape,
        spec.num_actions,
        network.num_layers,
        network.width,
        network.activation,
        network.conv_features,
        rngs=nnx.Rngs(params=key),
        num_values=num_values,
    )
