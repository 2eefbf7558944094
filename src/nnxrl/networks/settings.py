"""The settings a network is built from (``build_network``): plain frozen data,
read and checked by the config layer, which holds them as the ``network`` section."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from nnxrl.schema import ConfigError, setting


@dataclass(frozen=True)
class NetworkSettings:
    """A network's settings (the ``network`` section of a config)."""

    kind: str = setting(
        "feedforward",
        "feedforward: separate actor and critic MLPs (PQN: one Q-network MLP). The memory "
        "kinds, an embedding and a memory core of size width shared by actor and critic "
        "MLP heads (PQN: under a linear Q head), trained on whole env sequences: gru and "
        "lstm (options: chrono); min_gru (a minimal GRU, a linear recurrence trained by a "
        "parallel scan; options: layers, chrono, conv); transformer_xl (a gated Transformer-XL "
        "attending to the last M steps; options: layers, heads, memory, gate_bias). Or any "
        "kind registered with nnxrl.register_network.",
    )
    num_layers: int = setting(
        2,
        "Hidden layers in each of the actor and critic MLPs (PQN: of the Q-network).",
        low=1,
        high=64,
    )
    width: int = setting(64, "Units per hidden layer.", low=1, high=65_536)
    activation: Literal["tanh", "relu", "gelu", "silu"] = setting("tanh", "Hidden activation.")
    conv_features: tuple = setting(
        (32, 64, 64),
        "Channels of the 3x3 stride-2 conv torso used for image observations (rank 3).",
    )
    layer_norm: bool | None = setting(
        None,
        "LayerNorm after each hidden layer, before its activation (None: on for PQN, as "
        "in its paper; off for PPO).",
    )
    dueling: bool = setting(
        False,
        "Q-networks (PQN, DQN): the last layer gives a state value V and action "
        "advantages A, Q = V + A - mean_a A (Wang et al. 2016).",
    )
    log_std: Literal["state_independent", "state_dependent"] = setting(
        "state_independent",
        "Continuous actions: the Gaussian's log-std is a learned vector "
        "(state_independent) or more actor outputs (state_dependent).",
    )
    squash: Literal["clip", "tanh"] = setting(
        "clip",
        "Continuous actions: the env clips a Gaussian sample to its bounds when it steps "
        "(the log-probability is the unclipped sample's), or tanh squashes it into them "
        "(with the change-of-variables correction).",
    )
    init_log_std: float = setting(
        0.0, "Continuous actions: the log-std at initialisation (0: std 1)."
    )
    options: dict = setting(
        {}, "The network kind's own settings (see its options class); unknown keys are rejected."
    )


@dataclass(frozen=True)
class NoOptions:
    """The settings of a network kind that has none of its own."""


CHRONO_HELP = (
    "0: the gates' biases start at the kind's default; T >= 3: chrono initialisation "
    "(Tallec and Ollivier 2018), the keep gate's bias log(U(1, T - 1)) per unit, so that "
    "the units start out keeping their state for 2 to T steps (memory further back "
    "than a few steps gets a gradient from the start)."
)


def _check_chrono(chrono: int) -> None:
    if chrono in (1, 2):
        raise ConfigError(
            f"network.options.chrono: {chrono} is too short a horizon; use 0 (off) or a "
            "number of steps >= 3, e.g. the delay the task asks to remember"
        )


@dataclass(frozen=True)
class RecurrentOptions:
    """``network.options`` of ``network.kind: gru`` and ``lstm``."""

    chrono: int = setting(0, CHRONO_HELP, low=0)

    def check(self, network: NetworkSettings) -> None:
        _check_chrono(self.chrono)


@dataclass(frozen=True)
class MinGRUOptions:
    """``network.options`` of ``network.kind: min_gru``."""

    layers: int = setting(
        2,
        "Stacked minGRU layers, each reading the states of the one below (a single "
        "layer's gates see only the current input).",
        low=1,
        high=16,
    )
    chrono: int = setting(0, CHRONO_HELP, low=0)
    conv: int = setting(
        0,
        "0: each layer's gates read the current input alone; K >= 2: the input plus a "
        "causal depthwise convolution over the last K inputs of the episode, as the minGRU "
        "and Mamba blocks put before the recurrence.",
        low=0,
        high=64,
    )

    def check(self, network: NetworkSettings) -> None:
        _check_chrono(self.chrono)
        if self.conv == 1:
            raise ConfigError(
                "network.options.conv: 1 is a window of the current input alone; use 0 "
                "(off) or a window of K >= 2 steps, e.g. conv: 4"
            )


@dataclass(frozen=True)
class TransformerXLOptions:
    """``network.options`` of ``network.kind: transformer_xl``."""

    layers: int = setting(2, "Gated Transformer-XL layers.", low=1, high=16)
    heads: int = setting(4, "Attention heads per layer; they must divide network.width.", low=1)
    memory: int = setting(
        32,
        "M: the steps before the current one that each step attends to (the window "
        "carried from step to step; recall further back than M is impossible).",
        low=1,
        high=4096,
    )
    gate_bias: float = setting(
        2.0,
        "b_g of GTrXL's gates: how strongly each layer starts out passing its input "
        "through unchanged.",
    )

    def check(self, network: NetworkSettings) -> None:
        if network.width % self.heads:
            raise ConfigError(
                f"network.options.heads: {self.heads} heads do not divide network.width "
                f"{network.width}; choose heads among the divisors of the width"
            )
