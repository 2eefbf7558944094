"""The algorithms a config may name (``algo:``), each as the function that binds it
and the function that reads its traced hyperparameters from the config."""

from __future__ import annotations

from typing import Any, NamedTuple

from nnxrl.algos.ppo import hyperparams_from as ppo_hyperparams
from nnxrl.algos.ppo import make_ppo
from nnxrl.algos.pqn import make_pqn, pqn_hyperparams
from nnxrl.config import Config
from nnxrl.envs import VecEnv
from nnxrl.intrinsic.base import Addon


class Algorithm(NamedTuple):
    make: Any  # (config, env, addon) -> (init, update, graphdef)
    hyperparams: Any  # config -> the traced coefficients


ALGORITHMS = {
    "ppo": Algorithm(make_ppo, ppo_hyperparams),
    "pqn": Algorithm(make_pqn, pqn_hyperparams),
}


def make_algorithm(config: Config, env: VecEnv, addon: Addon | None = None) -> Any:
    """``config.algo``'s init, update and graphdef, bound to ``env`` and ``addon``."""
    return ALGORITHMS[config.algo].make(config, env, addon)


def hyperparams_for(config: Config) -> Any:
    """``config.algo``'s traced coefficients, from the config."""
    return ALGORITHMS[config.algo].hyperparams(config)
