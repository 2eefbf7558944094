"""Networks: feed-forward and recurrent actor-critics and Q-networks, the action
distributions."""

from nnxrl.networks.actor_critic import ActorCritic
from nnxrl.networks.distributions import Categorical, DiagGaussian, EpsilonGreedy, TanhGaussian
from nnxrl.networks.factory import build_network
from nnxrl.networks.q_network import (
    QNetwork,
    RecurrentQNetwork,
    acting_values,
    greedy_values,
)
from nnxrl.networks.recurrent import RecurrentActorCritic
from nnxrl.networks.registry import register_network

__all__ = [
    "ActorCritic",
    "Categorical",
    "DiagGaussian",
    "TanhGaussian",
    "EpsilonGreedy",
    "QNetwork",
    "RecurrentActorCritic",
    "RecurrentQNetwork",
    "acting_values",
    "greedy_values",
    "build_network",
    "register_network",
]
