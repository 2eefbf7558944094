"""Networks: feed-forward and recurrent actor-critics, the categorical distribution."""

from nnxrl.networks.actor_critic import ActorCritic
from nnxrl.networks.distributions import Categorical
from nnxrl.networks.factory import build_network
from nnxrl.networks.recurrent import RecurrentActorCritic

__all__ = ["ActorCritic", "Categorical", "RecurrentActorCritic", "build_network"]
