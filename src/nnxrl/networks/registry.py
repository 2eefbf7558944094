"""The network kinds ``network.kind`` may name, and how one is registered.

A kind is its own settings (``network.options``: a frozen dataclass whose fields are
made with ``nnxrl.setting``, checked by name like every config key), one builder per
head it can carry, and whether it is recurrent (``sequences``: trained on whole env
sequences re-run from the hidden state stored at the start of the rollout).

Heads, and what the built module must offer (batch dims ``*L`` lead every array):

- ``actor_critic`` (PPO): ``initial_hidden(B) -> [B, S]``, ``step(hidden [B, S],
  obs [B, ...], start [B]) -> (hidden, dist, value [B, K])``, ``unroll(hidden [B, S],
  obs [T, B, ...], start [T, B]) -> (dist, value [T, B, K])`` from the state before
  the first step; a feed-forward kind (S = 0; its ``unroll`` gets None and single
  steps ``[N, ...]``) also ``value(obs) -> [*L, K]``.
- ``q`` (PQN): the same ``initial_hidden``, ``step -> (hidden, q [B, K, A])`` and
  ``unroll -> q [T, B, K, A]``; a feed-forward kind also ``__call__(obs) -> q``.
- optionally, for a recurrent kind, ``acting_state(hidden) -> acting`` and
  ``carried_state(acting) -> hidden``: what ``step`` acts from while the parameters
  stay fixed (a rollout, an evaluation), with whatever it caches meanwhile (the
  Transformer-XL's keys and values), and the hidden state it gives back to store.
- ``soft_actor_critic`` (SAC; the ``feedforward`` kind only): ``initial_hidden`` and
  ``step`` as ``actor_critic``'s, ``distribution(obs)`` (a ``TanhGaussian``),
  ``q(obs, action) -> [2, *L, K]`` and the parameter ``log_alpha``.

A builder is ``build(network, options, spec, num_values, rngs)``: the shared
``NetworkSettings``, the kind's options, the env's ``EnvSpec``, K (critic outputs or
rows of Qs) and the ``nnx.Rngs`` to initialise from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from nnxrl.lazy import imported
from nnxrl.networks.heads import head as head_entry
from nnxrl.networks.heads import known_heads
from nnxrl.networks.settings import (
    MinGRUOptions,
    NetworkSettings,
    NoOptions,
    RecurrentOptions,
    TransformerXLOptions,
)
from nnxrl.schema import ConfigError, build_section, unknown_name

SHIPPED_HEADS = ("actor_critic", "q")  # the heads the shipped kinds carry (heads.py)


class NetworkKind(NamedTuple):
    options: type  # the kind's own settings (network.options)
    builders: Mapping[str, Callable[..., Any]]  # head -> build(network, options, spec, K, rngs)
    sequences: bool  # recurrent: trained on whole env sequences


_KINDS: dict[str, NetworkKind] = {}


def register_network(
    kind: str,
    options: type,
    builders: Mapping[str, Callable[..., Any]],
    sequences: bool = False,
) -> None:
    """Make a network available as ``network.kind: <kind>``, for the heads in
    ``builders``, keyed by head (``actor_critic`` for PPO, ``q`` for PQN, or a head of
    one's own: ``heads.py``; see the module docstring)."""
    if not dataclasses.is_dataclass(options):
        raise TypeError(f"register_network({kind!r}): options must be a dataclass, got {options}")
    unknown = sorted(set(builders) - set(known_heads()))
    if unknown or not builders:
        raise TypeError(
            f"register_network({kind!r}): builders are keyed by head, one or more of "
            f"{known_heads()} (nnxrl.register_head adds more); got {sorted(builders)}"
        )
    _KINDS[kind] = NetworkKind(options, dict(builders), sequences)


def known_networks() -> list[str]:
    return list(_KINDS)


def network_kind(kind: str) -> NetworkKind:
    """The registration of ``kind``; a ConfigError naming the known ones otherwise."""
    if kind not in _KINDS:
        raise unknown_name(
            "network.kind",
            kind,
            _KINDS,
            "register more with nnxrl.register_network in a file given to --plugin",
        )
    return _KINDS[kind]


def network_options(kind: str, options: dict) -> Any:
    """The kind's options object from the config's ``network.options`` mapping."""
    cls = network_kind(kind).options
    if options and not dataclasses.fields(cls):
        raise ConfigError(
            f"network.options: sets {', '.join(sorted(map(str, options)))}, but network.kind "
            f"{kind!r} has no options of its own; leave network.options out"
        )
    return build_section(cls, options, "network.options.")


def check_network(network: NetworkSettings, head: str) -> None:
    """Raise a ConfigError unless ``network.kind`` is known, carries ``head`` and takes
    ``network.options`` (and the options, if they have a ``check``, agree with the
    rest of the section)."""
    registration = network_kind(network.kind)
    builds = head_entry(head).builds
    if builds not in registration.builders:
        raise ConfigError(
            f"network.kind: {network.kind!r} has no {builds} head (it has: "
            f"{sorted(registration.builders)}), which this algorithm needs"
        )
    options = network_options(network.kind, network.options)
    if hasattr(options, "check"):
        options.check(network)


def _shipped(kind: str) -> dict[str, Callable[..., Any]]:
    """The shipped kind's builders (``factory.py``), imported when first built."""
    return {head: imported("nnxrl.networks.factory", f"{kind}_{head}") for head in SHIPPED_HEADS}


register_network(
    "feedforward",
    NoOptions,
    {
        **_shipped("feedforward"),
        "soft_actor_critic": imported("nnxrl.networks.factory", "feedforward_soft_actor_critic"),
    },
)
register_network("gru", RecurrentOptions, _shipped("gru"), sequences=True)
register_network("lstm", RecurrentOptions, _shipped("lstm"), sequences=True)
register_network("min_gru", MinGRUOptions, _shipped("min_gru"), sequences=True)
register_network("transformer_xl", TransformerXLOptions, _shipped("transformer_xl"), sequences=True)
