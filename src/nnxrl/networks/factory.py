"""The network a config describes, for an env's spec and the head an algorithm needs,
and the kinds nnxrl ships (registered in ``registry.py`` as a user's would be):
``feedforward`` (separate actor and critic MLPs; PQN: one Q-network MLP) and the
memory kinds, an embedding and a memory core shared by the heads: ``gru``, ``lstm``,
``min_gru`` (a linear recurrence trained by a parallel scan) and ``transformer_xl``
(attention over a window of the last M steps)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import jax
from flax import nnx

from nnxrl.envs.base import EnvSpec
from nnxrl.networks import heads
from nnxrl.networks.actor_critic import ActorCritic
from nnxrl.networks.gru import GRU
from nnxrl.networks.lstm import LSTM
from nnxrl.networks.min_gru import MinGRU
from nnxrl.networks.policy_head import PolicyHead
from nnxrl.networks.q_network import QNetwork, RecurrentQNetwork
from nnxrl.networks.recurrent import RecurrentActorCritic
from nnxrl.networks.registry import network_kind, network_options
from nnxrl.networks.settings import NetworkSettings
from nnxrl.networks.soft_actor_critic import SoftActorCritic
from nnxrl.networks.transformer_xl import TransformerXL


def build_network(
    network: NetworkSettings,
    spec: EnvSpec,
    num_values: int,
    key: jax.Array,
    head: str = "actor_critic",
) -> Any:
    """The ``network.kind`` network carrying ``head`` (``actor_critic`` with
    ``num_values`` critic outputs, ``q`` with ``num_values`` rows of action values, or
    whatever a registered head builds: ``heads.py``), initialised from ``key``."""
    build = network_kind(network.kind).builders[heads.head(head).builds]
    options = network_options(network.kind, network.options)
    return build(network, options, spec, num_values, nnx.Rngs(params=key))


def builtin(
    cls: type, actor: bool, core: Callable[[Any], Any] | None = None, squashed: bool = False
) -> Any:
    """A builder for one of nnxrl's own network classes: an actor-critic (``actor``:
    with the actor's distribution for the env's action space; ``squashed``: always a
    tanh-squashed Gaussian with a state-dependent log-std, SAC's) or a Q-network, a
    recurrent one with the memory core ``core(options)`` makes. ``network.layer_norm``
    None means on for a Q-network (as in PQN's paper), off for an actor-critic."""

    def build(
        network: NetworkSettings, options: Any, spec: EnvSpec, num_values: int, rngs: nnx.Rngs
    ) -> Any:
        layer_norm = network.layer_norm if network.layer_norm is not None else not actor
        extra = {} if core is None else {"make_core": core(options)}
        if not actor:
            extra["dueling"] = network.dueling
        if actor:
            extra["head"] = PolicyHead.for_env(
                spec,
                rngs,
                log_std="state_dependent" if squashed else network.log_std,
                squash="tanh" if squashed else network.squash,
                init_log_std=network.init_log_std,
            )
        return cls(
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

    return build


# The shipped kinds' builders (registered in ``registry.py``, imported when first built)
feedforward_actor_critic = builtin(ActorCritic, actor=True)
feedforward_q = builtin(QNetwork, actor=False)
feedforward_soft_actor_critic = builtin(SoftActorCritic, actor=True, squashed=True)


def gru_core(options: Any) -> Any:
    return partial(GRU, chrono=options.chrono)


def lstm_core(options: Any) -> Any:
    return partial(LSTM, chrono=options.chrono)


def min_gru_core(options: Any) -> Any:
    return partial(MinGRU, layers=options.layers, chrono=options.chrono, conv=options.conv)


def transformer_xl_core(options: Any) -> Any:
    return partial(
        TransformerXL,
        layers=options.layers,
        heads=options.heads,
        memory=options.memory,
        gate_bias=options.gate_bias,
    )


gru_actor_critic = builtin(RecurrentActorCritic, True, gru_core)
gru_q = builtin(RecurrentQNetwork, False, gru_core)
lstm_actor_critic = builtin(RecurrentActorCritic, True, lstm_core)
lstm_q = builtin(RecurrentQNetwork, False, lstm_core)
min_gru_actor_critic = builtin(RecurrentActorCritic, True, min_gru_core)
min_gru_q = builtin(RecurrentQNetwork, False, min_gru_core)
transformer_xl_actor_critic = builtin(RecurrentActorCritic, True, transformer_xl_core)
transformer_xl_q = builtin(RecurrentQNetwork, False, transformer_xl_core)
