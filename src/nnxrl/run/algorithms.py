"""Where a whole config becomes an algorithm's own inputs: its settings section, the
run's facts (``RunFacts``) and the reward streams of its add-on (``RewardStreams``).
Which algorithms a config may name is the registry's (``nnxrl.algos.registry``);
the algorithms themselves (``nnxrl.algos``) know nothing of the config."""

from __future__ import annotations

from typing import Any

from nnxrl.algos.hyperparams import hyperparams
from nnxrl.algos.on_policy import Algorithm
from nnxrl.algos.registry import algorithm
from nnxrl.algos.settings import RewardStreams, RunFacts
from nnxrl.config import Config, IntrinsicConfig, schedule
from nnxrl.envs import VecEnv
from nnxrl.intrinsic.base import Addon


def make_algorithm(
    config: Config, env: VecEnv, addon: Addon | None = None, shuffle_groups: int = 1
) -> Algorithm:
    """``config.algo``'s init, update and graphdef, bound to ``env`` and ``addon``;
    ``shuffle_groups`` blocks of envs are shuffled apart (a mesh's env shards)."""
    return algorithm(config.algo).make(
        config.algo_config,
        env,
        run_facts(config, shuffle_groups),
        network=config.network,
        addon=addon,
        streams=reward_streams(config.intrinsic),
    )


def hyperparams_from(config: Config) -> Any:
    """``config.algo``'s traced coefficients (its ``Hyperparams``), from the config."""
    return hyperparams(config.algo_config, reward_streams(config.intrinsic))


def run_facts(config: Config, shuffle_groups: int = 1) -> RunFacts:
    """What the algorithm needs to know of the run ``config`` describes."""
    return RunFacts(
        num_updates=schedule.num_updates(config),
        return_window=config.logging.return_window,
        shuffle_groups=shuffle_groups,
    )


def reward_streams(intrinsic: IntrinsicConfig) -> RewardStreams:
    """How the add-on's bonus enters, from the ``intrinsic`` section."""
    return RewardStreams(
        count=intrinsic.num_reward_streams,
        intrinsic_episodic=intrinsic.episodic,
        reward_coef=intrinsic.reward_coef,
        gamma=intrinsic.gamma,
        extrinsic_coef=intrinsic.extrinsic_adv_coef,
        intrinsic_coef=intrinsic.intrinsic_adv_coef,
    )
