"""Evaluating a trained policy: N episodes per seed, from fresh envs.

``evaluate(policy, episodes)`` is the API (``nnxrl eval`` prints it). Each seed's
network plays ``num_episodes`` envs side by side until every env has
finished its first episode (one compiled ``while_loop``, all seeds vmapped); the
first episode of each env is what is reported: return, length and, for Craftax,
each achievement's success rate.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from nnxrl.agent.policy import Policy
from nnxrl.envs import env_spec, make_env
from nnxrl.envs.base import legal_actions
from nnxrl.envs.compiler_options import compiler_options
from nnxrl.networks import heads
from nnxrl.networks.acting import acting_state

MAX_ENVS_AT_ONCE = 1024  # episodes played side by side per seed (bounds the memory)


@dataclass
class Evaluation:
    """What ``evaluate`` reports: per seed, the first episode of each of
    ``episodes`` fresh envs (mean and std of return and length, Craftax achievement
    rates), and how actions were chosen."""

    env: str
    episodes: int  # per seed
    algo: str
    actions: str  # 'greedy', 'sampled' or 'epsilon-greedy (epsilon=E)'
    greedy: bool
    setting: int | None  # the sweep setting the policy comes from
    seeds: list[dict[str, Any]]  # one row per seed (``summarize_episodes``)
    # the seeds' mean returns: their mean and its 95 % bootstrap interval over seeds
    across_seeds: dict[str, Any] = dataclasses.field(default_factory=dict)
    stopped: bool = False  # Ctrl-C between batches: ``episodes`` is what was played

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def evaluate(
    policy: Policy,
    episodes: int = 10,
    *,
    greedy: bool = False,
    key: int = 0,
    progress: Callable[[int], None] | None = None,
    fast_compile: bool = False,
) -> Evaluation:
    """Play the first episode of ``episodes`` fresh envs per seed with ``policy``
    (a ``load_policy`` or ``policy_from_checkpoint``), sampled or ``greedy``, from
    PRNG seed ``key``; ``progress`` gets the episodes done after each batch, when
    they are played in several (more than ``MAX_ENVS_AT_ONCE``);
    ``fast_compile`` as the config key of that name (a shorter compile, a slower play).
    A Ctrl-C after the first batch ends the play there: the report covers the
    episodes played and says ``stopped``."""
    results = play_first_episodes(
        policy, episodes, greedy, jax.random.key(key), progress=progress, fast=fast_compile
    )
    played = results["return"].shape[1]
    seeds = summarize_episodes(results, achievement_names(policy))
    actions = action_kind(policy, greedy)
    return Evaluation(
        stopped=played < episodes,
        env=policy.env.id,
        episodes=played,
        algo=policy.algo,
        actions=actions,
        greedy=actions == "greedy",
        setting=policy.setting,
        seeds=seeds,
        across_seeds=over_seeds(seeds),
    )


def over_seeds(seeds: list[dict[str, Any]], reps: int = 2000) -> dict[str, Any]:
    """The mean over seeds of each seed's mean return, and its 95 % percentile
    bootstrap interval over the seeds (the unit a claim rests on: episodes of one
    seed are not independent runs); no interval for one seed."""
    from nnxrl.analysis import interval_estimates as ie

    means = np.array([r["return_mean"] for r in seeds if r["return_mean"] is not None])
    if means.size == 0:
        return {"seeds": 0, "return_mean": None, "return_low": None, "return_high": None}
    mean, low, high = float(means.mean()), None, None
    if means.size > 1:
        statistic = lambda x: x.mean(axis=(-2, -1))  # noqa: E731  ([..., N, 1] -> [...])
        _, (lo, hi) = ie.interval(statistic, (means[:, None],), reps, np.random.default_rng(0))
        low, high = float(lo), float(hi)
    return {"seeds": int(means.size), "return_mean": mean, "return_low": low, "return_high": high}


def action_kind(policy: Policy, greedy: bool) -> str:
    """How ``policy`` chooses actions, in words."""
    return heads.head(policy.head).describe(policy, greedy)


def play_first_episodes(
    policy: Policy,
    num_episodes: int,
    greedy: bool,
    key: jax.Array,
    max_steps: int = 100_000,
    progress: Callable[[int], None] | None = None,
    fast: bool = False,
) -> dict[str, np.ndarray]:
    """Per seed and env: the first episode's return [S, N], length [S, N] and
    achievements [S, N, A] (Craftax). Played in batches of at most
    ``MAX_ENVS_AT_ONCE`` envs (batch b from ``fold_in(key, b)``; one batch from ``key``
    itself), each batch one compiled program (``fast``: compiled as ``fast_compile``
    runs' are); ``progress`` gets the episodes done so far after each batch, when
    there are several. A KeyboardInterrupt after the first batch ends the play with
    the batches done (fewer episodes than asked)."""
    size = min(num_episodes, MAX_ENVS_AT_ONCE)
    batches = -(-num_episodes // size)
    play = batch_player(policy, size, greedy, max_steps, fast)
    parts = []
    try:
        for b in range(batches):
            parts.append(play(key if batches == 1 else jax.random.fold_in(key, b)))
            if progress is not None and batches > 1:
                progress(min((b + 1) * size, num_episodes))
    except KeyboardInterrupt:
        if not parts:
            raise
    return {k: np.concatenate([p[k] for p in parts], axis=1)[:, :num_episodes] for k in parts[0]}


def batch_player(
    policy: Policy, num_episodes: int, greedy: bool, max_steps: int, fast: bool = False
) -> Callable[[jax.Array], dict[str, np.ndarray]]:
    """A compiled function of a key that plays one batch of ``num_episodes`` envs
    for every seed (``play_one_seed``, vmapped), with the XLA options of the env (and
    of ``fast_compile`` when ``fast``), as training's programs are."""
    env = make_env(dataclasses.replace(policy.env, num_envs=num_episodes, reset_ratio=1))
    moments = policy.obs_moments if policy.obs_moments is not None else ()
    one_seed = partial(play_one_seed, policy=policy, env=env, greedy=greedy, max_steps=max_steps)
    played = jax.jit(jax.vmap(one_seed), compiler_options=compiler_options(env.spec, fast))

    def play(key: jax.Array) -> dict[str, np.ndarray]:
        keys = jax.random.split(key, policy.num_seeds)
        return {k: np.asarray(v) for k, v in played(policy.params, moments, keys).items()}

    return play


def play_one_seed(
    params: Any,
    moments: Any,
    key: jax.Array,
    *,
    policy: Policy,
    env: Any,
    greedy: bool,
    max_steps: int,
) -> dict[str, jax.Array]:
    """One seed's network in every env until each has finished its first episode (or
    ``max_steps``): that episode's results per env, and whether it finished."""
    model = nnx.merge(policy.graphdef, params)
    reset_key, key = jax.random.split(key)
    carry = first_carry(model, env, reset_key, key)
    step = partial(play_step, model=model, env=env, policy=policy, moments=moments, greedy=greedy)

    def running(c: dict) -> jax.Array:
        return jnp.logical_and(~jnp.all(c["finished"]), c["t"] < max_steps)

    final = jax.lax.while_loop(running, step, carry)
    return {**final["results"], "finished": final["finished"]}


def first_carry(model: Any, env: Any, reset_key: jax.Array, key: jax.Array) -> dict:
    """Fresh envs, a fresh hidden state, no episode finished yet."""
    num_envs = env.num_envs
    obs, env_state = env.reset(reset_key)
    results = {
        "return": jnp.zeros(num_envs),
        "length": jnp.zeros(num_envs, jnp.int32),
        "achievements": jnp.zeros((num_envs, len(env.spec.achievement_names))),
    }
    return {
        "obs": obs,
        "env_state": env_state,
        "hidden": acting_state(model, model.initial_hidden(num_envs)),
        "start": jnp.ones(num_envs, bool),
        "finished": jnp.zeros(num_envs, bool),
        "key": key,
        "t": jnp.int32(0),
        "results": results,
    }


def play_step(c: dict, *, model: Any, env: Any, policy: Policy, moments: Any, greedy: bool) -> dict:
    """One step of every env; an env's first finished episode is kept in ``results``."""
    key, action_key, step_key = jax.random.split(c["key"], 3)
    legal = legal_actions(env, c["env_state"])
    hidden, dist = policy.action_distribution(
        model, c["hidden"], c["obs"], c["start"], moments, legal
    )
    action = dist.mode() if greedy else dist.sample(action_key)
    env_state, out = env.step(step_key, c["env_state"], action)
    ended = jnp.logical_or(out.terminated, out.truncated)
    first = jnp.logical_and(ended, ~c["finished"])
    episode = {
        "return": out.episode["return"],
        "length": out.episode["length"],
        "achievements": out.episode.get("achievements", c["results"]["achievements"]),
    }
    results = {
        k: jnp.where(first.reshape((-1,) + (1,) * (v.ndim - 1)), episode[k], v)
        for k, v in c["results"].items()
    }
    return {
        "obs": out.obs,
        "env_state": env_state,
        "hidden": hidden,
        "start": ended,
        "finished": jnp.logical_or(c["finished"], ended),
        "key": key,
        "t": c["t"] + 1,
        "results": results,
    }


def achievement_names(policy: Policy) -> tuple[str, ...]:
    return env_spec(policy.env).achievement_names


def summarize_episodes(
    results: dict[str, np.ndarray], achievement_names: tuple[str, ...]
) -> list[dict[str, Any]]:
    """One row per seed: mean and std of return and length, achievement rates."""
    rows = []
    for s in range(results["return"].shape[0]):
        done = results["finished"][s]
        row = {
            "seed": s,
            "episodes": int(done.sum()),
            "return_mean": float(results["return"][s][done].mean()) if done.any() else None,
            "return_std": float(results["return"][s][done].std()) if done.any() else None,
            "length_mean": float(results["length"][s][done].mean()) if done.any() else None,
            "length_std": float(results["length"][s][done].std()) if done.any() else None,
            "returns": [float(x) for x in results["return"][s][done]],  # each episode's
            "lengths": [int(x) for x in results["length"][s][done]],
        }
        if achievement_names and done.any():
            rates = results["achievements"][s][done].mean(axis=0)
            row["achievements"] = {
                n: float(r) for n, r in zip(achievement_names, rates, strict=True)
            }
        rows.append(row)
    return rows
