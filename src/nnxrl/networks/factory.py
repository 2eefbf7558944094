"""The network a config describes, for an env's spec and an algorithm."""

from __future__ import annotations

import jax
from flax import nnx

from nnxrl.envs.base import EnvSpec
from nnxrl.networks.actor_critic import ActorCritic
from nnxrl.networks.policy_head import PolicyHead
from nnxrl.networks.q_network import QNetwork, RecurrentQNetwork
from nnxrl.networks.recurrent import RecurrentActorCritic
from nnxrl.networks.settings import NetworkSettings

KINDS = {
    ("ppo", "feedforward"): ActorCritic,
    ("ppo", "gru"): RecurrentActorCritic,
    ("pqn", "feedforward"): QNetwork,
    ("pqn", "gru"): RecurrentQNetwork,
}


def build_network(
    network: NetworkSettings, spec: EnvSpec, num_values: int, key: jax.Array, algo: str = "ppo"
) -> ActorCritic | RecurrentActorCritic | QNetwork | RecurrentQNetwork:
    """PPO: an actor-critic (``network.kind`` feedforward or gru) with ``num_values``
    critic outputs; PQN: a Q-network of the same kind with ``num_values`` rows of
    action values. ``network.layer_norm`` None means on for PQN, off for PPO."""
    layer_norm = network.layer_norm if network.layer_norm is not None else algo == "pqn"
    rngs = nnx.Rngs(params=key)
    extra = {}
    if algo == "ppo":  # the actor's distribution, for the env's action space
        options = dict(
            log_std=network.log_std, squash=network.squash, init_log_std=network.init_log_std
        )
        extra["head"] = PolicyHead.for_env(spec, rngs, **options)
    return KINDS[algo, network.kind](
        spec.obs_shape,
        spec.num_actions,
        network.num_layers,
        network.width,
        network.activation,
        network.conv_features,
        rngs=rngs,
        num_values=num_values,
        layer_norm=layer_norm,
        **extra,
    )
