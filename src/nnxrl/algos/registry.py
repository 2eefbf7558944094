"""The algorithms a config may name (``algo:``), registered like envs, networks and
add-ons: each with its settings class (the config's section under the algorithm's
name), the function that builds it, the head its network carries and whether it
needs discrete actions. PPO and PQN are registered below as a user's algorithm
would be (``examples/custom_algorithm.py``); their code is imported only when one is
built, so that a config is read and checked without JAX.

An algorithm's settings are a frozen dataclass of ``nnxrl.setting`` fields; those
declared ``traced`` are its hyperparameters (``algos/hyperparams.py``). An on-policy
algorithm's subclass the skeleton's (``OnPolicySettings``: the rollout, epochs,
minibatches, optimiser, normalisation) and add their own; an algorithm of its own
shape declares what it reads, and ``num_steps``, the env steps per env of one update,
by which the run divides its budget (``config/schedule.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

from nnxrl.algos.hyperparams import hyperparams_type
from nnxrl.algos.settings import (
    DQNSettings,
    OnPolicySettings,
    PPOSettings,
    PQNSettings,
    SACSettings,
)
from nnxrl.lazy import imported
from nnxrl.schema import unknown_name

REGISTER = "register more with nnxrl.register_algorithm in a file given to --plugin"

# (settings, env, run facts, network=, addon=, streams=) -> an object with init,
# update and graphdef (e.g. ``on_policy.make_on_policy``'s)
Make = Callable[..., Any]


class AlgorithmEntry(NamedTuple):
    """A registered algorithm."""

    name: str
    settings: type  # the frozen dataclass of its config section
    make: Make
    hyperparams: type  # the NamedTuple of its traced coefficients (algos/hyperparams.py)
    head: str  # the head its network carries: 'actor_critic' or 'q' (networks/registry.py)
    discrete_only: bool  # acts by argmax over actions, so needs discrete ones
    recurrent: bool = True  # trains recurrent networks (sequences) too
    continuous_only: bool = False  # its network shapes its own Gaussian (SAC's)


_ALGORITHMS: dict[str, AlgorithmEntry] = {}


def register_algorithm(
    name: str,
    settings: type,
    algorithm: Any,
    *,
    head: str = "actor_critic",
    discrete_only: bool = False,
    recurrent: bool = True,
    continuous_only: bool = False,
) -> None:
    """Make ``algo: name`` build ``algorithm``, its config section (under ``name``)
    read as ``settings``. ``algorithm`` is either the on-policy skeleton's pieces (an
    ``OnPolicy``, ``algos/on_policy.py``, whose head it carries) or a function
    ``make(settings, env, run, network=, addon=, streams=)`` returning an object with
    ``init``, ``update`` and ``graphdef`` (an algorithm of its own shape, carrying
    ``head``); ``recurrent``: whether it trains recurrent networks;
    ``continuous_only``: its network shapes a Gaussian of its own for continuous
    actions (PPO's ``network.log_std`` and ``network.squash`` then do not apply).
    Registering a name again replaces it (a plugin may be loaded twice)."""
    if not (dataclasses.is_dataclass(settings) and isinstance(settings, type)):
        raise TypeError(f"register_algorithm({name!r}): settings must be a dataclass class")
    if not callable(algorithm) and not issubclass(settings, OnPolicySettings):
        raise TypeError(
            f"register_algorithm({name!r}): {settings.__name__} must subclass "
            "nnxrl.OnPolicySettings, the on-policy skeleton's settings (its rollout, epochs, "
            "minibatches, optimiser), to be built from on-policy pieces"
        )
    if "num_steps" not in {f.name for f in dataclasses.fields(settings)}:
        raise TypeError(
            f"register_algorithm({name!r}): {settings.__name__} lacks num_steps, the env "
            "steps per env of one update, by which the run divides total_env_steps"
        )
    if not callable(algorithm):  # the skeleton's pieces
        head, algorithm = algorithm.head, partial(on_policy_make, algorithm)
    hp_type = hyperparams_type(settings)
    entry = AlgorithmEntry(
        name, settings, algorithm, hp_type, head, discrete_only, recurrent, continuous_only
    )
    _ALGORITHMS[name] = entry


def on_policy_make(pieces: Any, *args: Any, **kwargs: Any) -> Any:
    """``make_on_policy(pieces, ...)``, imported when an algorithm is built."""
    from nnxrl.algos.on_policy import make_on_policy

    return make_on_policy(pieces, *args, **kwargs)


def algorithm(name: str) -> AlgorithmEntry:
    """The registered algorithm ``name``; a ConfigError naming the known ones if none."""
    if name not in _ALGORITHMS:
        raise unknown_name("algo", name, _ALGORITHMS, REGISTER)
    return _ALGORITHMS[name]


def algorithm_settings() -> dict[str, type]:
    """Every registered algorithm's name -> settings class (the config's choices)."""
    return {name: entry.settings for name, entry in _ALGORITHMS.items()}


register_algorithm("ppo", PPOSettings, imported("nnxrl.algos.ppo", "make_ppo"))
register_algorithm(
    "pqn", PQNSettings, imported("nnxrl.algos.pqn", "make_pqn"), head="q", discrete_only=True
)
register_algorithm(
    "dqn",
    DQNSettings,
    imported("nnxrl.algos.dqn", "make_dqn"),
    head="q",
    discrete_only=True,
    recurrent=False,
)
register_algorithm(
    "sac",
    SACSettings,
    imported("nnxrl.algos.sac", "make_sac"),
    head="soft_actor_critic",
    continuous_only=True,
    recurrent=False,
)
