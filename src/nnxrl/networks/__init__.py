"""Networks: feed-forward and recurrent actor-critics and Q-networks, the action
distributions, and the registry of network kinds (``registry.py``). Names are
imported when first read, so that the registry (which a config checks against) is
read without importing Flax."""

from nnxrl.lazy import exports

_EXPORTS = {
    "ActorCritic": "nnxrl.networks.actor_critic",
    "Categorical": "nnxrl.networks.distributions",
    "DiagGaussian": "nnxrl.networks.distributions",
    "TanhGaussian": "nnxrl.networks.distributions",
    "EpsilonGreedy": "nnxrl.networks.distributions",
    "QNetwork": "nnxrl.networks.q_network",
    "RecurrentQNetwork": "nnxrl.networks.q_network",
    "acting_values": "nnxrl.networks.q_network",
    "greedy_values": "nnxrl.networks.q_network",
    "RecurrentActorCritic": "nnxrl.networks.recurrent",
    "build_network": "nnxrl.networks.factory",
    "register_network": "nnxrl.networks.registry",
    "register_head": "nnxrl.networks.heads",
}
__getattr__ = exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
