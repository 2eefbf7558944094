"""Evaluating the policy during training (the ``evaluation`` section), so that a
learning curve need not carry exploration noise: after every ``every_updates``
updates, each member's network plays ``episodes`` fresh envs of its own (never the
training envs) to the end of their first episode, greedily by default, with the
players of ``agent/evaluate.py``. One compiled program for all members, dispatched
between chunks like one (it reads the parameters the chunk left; the loop hands its
results over with that chunk's metrics): records carry ``eval/return`` and
``eval/length`` (the means over the episodes that ended) at those updates, null at
the others.

The keys are ``fold_in(fold_in(key(seed), member's seed), EVAL_STREAM)`` folded
with the update, apart from training's, so evaluating changes nothing of training
and a resumed run evaluates exactly as an uninterrupted one.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from nnxrl import config as config_lib
from nnxrl.agent.evaluate import play_one_seed
from nnxrl.agent.policy import policy_of
from nnxrl.config import population
from nnxrl.envs import make_env
from nnxrl.envs.compiler_options import compiler_options

EVAL_STREAM = 0x6576616C  # "eval": the evaluation's keys, apart from training's
METRICS = ("eval/return", "eval/length")


def make_evaluator(config: config_lib.Config) -> Any:
    """(state, update) -> {"eval/return", "eval/length"} [M] means (device arrays, not
    waited for) for a config with ``evaluation.every_updates``; None without. It is
    compiled with the run's XLA options, as its other programs are."""
    settings = config.evaluation
    if not settings.every_updates:
        return None
    static = population.program_config(config)
    policy = policy_of(static, None)
    env = make_env(dataclasses.replace(static.env, num_envs=settings.episodes, reset_ratio=1))
    one = partial(
        play_one_seed, policy=policy, env=env, greedy=settings.greedy, max_steps=settings.max_steps
    )
    seeds = np.arange(population.num_members(config), dtype=np.uint32) % config.num_seeds
    normalized = getattr(static.algo_config, "normalize_obs", False)
    options = compiler_options(env.spec, config.fast_compile)

    @partial(jax.jit, compiler_options=options)
    def evaluate(state: Any, update: jax.Array) -> dict[str, jax.Array]:
        base = jax.random.key(config.seed)
        keys = jax.vmap(lambda s: jax.random.fold_in(jax.random.fold_in(base, s), EVAL_STREAM))(
            jnp.asarray(seeds)
        )
        keys = jax.vmap(jax.random.fold_in, in_axes=(0, None))(keys, update)
        moments = state.normalizer.obs if normalized else ()
        played = jax.vmap(one, in_axes=(0, 0 if normalized else None, 0))(
            state.params, moments, keys
        )
        return episode_means(played)

    return evaluate


def episode_means(played: dict[str, jax.Array]) -> dict[str, jax.Array]:
    """[M, N] first episodes -> [M] means over those that ended (NaN: none did)."""
    done = played["finished"].astype(jnp.float32)
    count = done.sum(axis=1)
    mean = lambda x: jnp.where(count > 0, (x * done).sum(axis=1) / jnp.maximum(count, 1), jnp.nan)  # noqa: E731
    return {"eval/return": mean(played["return"]), "eval/length": mean(played["length"])}


def due(config: config_lib.Config, update: int) -> bool:
    """Whether the chunk that ended at ``update`` is followed by an evaluation."""
    every = config.evaluation.every_updates
    return bool(every) and update % every == 0


def with_evaluation(config: config_lib.Config, metrics: dict, evaluated: dict | None) -> dict:
    """A chunk's metrics [M, L] with the evaluation after its last update, if there was
    one: NaN (null in the records) at every other update of a run that evaluates."""
    if not config.evaluation.every_updates:
        return metrics
    shape = np.shape(metrics["episode_count"])
    out = dict(metrics)
    for name in METRICS:
        column = np.full(shape, np.nan)
        if evaluated is not None:
            column[:, -1] = np.asarray(evaluated[name])
        out[name] = column
    return out
