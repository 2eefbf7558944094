"""An algorithm's hyperparameters: the coefficients that enter its compiled program
as values (float32 scalars, or [S] when a sweep varies them), so that the settings
of a sweep over them train in one program. They are the fields its settings declare
``traced`` (``nnxrl.setting(..., traced=True)``), in order, followed by the reward
streams' coefficients every algorithm receives (``STREAM_FIELDS``). That one
declaration also gives the keys a sweep may vary in one program (``nnxrl.config``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from nnxrl.algos.settings import RewardStreams
from nnxrl.schema import traced_fields

# The reward streams' traced coefficients (``RewardStreams``), after the algorithm's own
STREAM_FIELDS = ("intrinsic_reward_coef", "intrinsic_gamma", "extrinsic_coef", "intrinsic_coef")

_TYPES: dict[type, type] = {}  # settings class -> its type, made once (registration)
_NAMED: dict[str, type] = {}  # type name -> the newest made (a plugin loaded again)


def hyperparams_type(settings: type) -> type:
    """The NamedTuple of the traced coefficients of ``settings`` (a settings class):
    ``PPOSettings`` -> ``PPOHyperparams``, one type per class, made when the registry
    registers the algorithm (``algos/registry.py``)."""
    if settings not in _TYPES:
        name = settings.__name__.removesuffix("Settings") + "Hyperparams"
        fields = [(f, Any) for f in traced_fields(settings) + STREAM_FIELDS]
        _TYPES[settings] = _NAMED[name] = NamedTuple(name, fields)
    return _TYPES[settings]


def __getattr__(name: str) -> type:
    """``<Algo>Hyperparams`` by name: a saved program's pickled structure names the
    type of a registered algorithm (its module is this one); the newest of that name,
    as the registry holds the newest registration."""
    if name in _NAMED:
        return _NAMED[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def hyperparams(settings: Any, streams: RewardStreams | None = None) -> Any:
    """The traced coefficients of ``settings`` and the reward ``streams`` (default:
    one stream), as float32 scalars."""
    s = streams if streams is not None else RewardStreams()
    values = {f: getattr(settings, f) for f in traced_fields(type(settings))}
    values.update(
        intrinsic_reward_coef=s.reward_coef,
        intrinsic_gamma=s.gamma,
        extrinsic_coef=s.extrinsic_coef,
        intrinsic_coef=s.intrinsic_coef,
    )
    return hyperparams_type(type(settings))(**{k: np.float32(v) for k, v in values.items()})
