"""Networks: actor-critic modules and the categorical distribution."""

from nnxrl.networks.actor_critic import ActorCritic
from nnxrl.networks.distributions import Categorical

__all__ = ["ActorCritic", "Categorical"]
