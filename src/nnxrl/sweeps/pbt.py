"""Population-based training (Jaderberg et al. 2017) inside the compiled program.

A sweep with ``sweep.pbt.interval`` > 0 trains its settings as a population: every
``interval`` updates, ``pbt_step`` ranks the members by fitness (their rolling return,
``episode_return_window``), lets the worst copy the weights of better ones (exploit)
and moves the copies' hyperparameters away from their donors' (explore). It is a
pure function of the stacked population, run by ``lax.cond`` at the end of the
compiled chunk (``run/chunk.py: pbt_chunk``; chunks end at every multiple of the interval), so it
needs no host round trip and no recompilation, and the updates between steps are
the plain sweep's program (measured: ``benchmarks/sweep.py --pbt-only``).

Seeds stay seeds: member m trains seed m % S of setting m // S, and each seed's P
members form a population of their own (donors are drawn within the seed), so a
result comes with the spread of S independent populations.

What a copy takes from its donor: parameters, optimiser state, the add-on's state,
observation statistics, the rolling window of returns (the donor's weights earned
them; keeping its own would mark the copy for exploiting again at once) and an
off-policy algorithm's memory (its replay buffer and target network, which belong
with the weights they trained). What stays its own: env state, observations, hidden
state, PRNG key, update count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

COPIED = ("params", "opt_state", "addon", "normalizer", "recent_returns", "memory")


@dataclass(frozen=True)
class ExploredKey:
    """One hyperparameter PBT explores: where it is in the Hyperparams and its range."""

    name: str  # the dotted config key
    field: str  # its Hyperparams field
    low: float
    high: float
    grid: tuple[float, ...] = ()  # resample: a choice among these (a grid key) ...
    distribution: tuple = ()  # ... or (kind, args) of a random key


@dataclass(frozen=True)
class PBTStatic:
    """What ``pbt_step`` and ``pbt_chunk`` need, fixed for a run."""

    population: int  # P settings per seed
    num_seeds: int  # S independent populations
    interval: int  # updates between steps
    num_updates: int  # of the whole run: no step after the last update
    seed: int  # the run's base seed: step keys are fold_in(key(seed), update)
    exploit: str
    fraction: float
    explore: str
    factors: tuple[float, ...]
    resample_probability: float
    keys: tuple[ExploredKey, ...]


def next_step_cut(update: int, interval: int) -> int:
    """Updates from ``update`` to the next multiple of ``interval``: the most a PBT
    run's chunk may hold, so that every step falls between chunks."""
    return interval - update % interval


def pbt_step(state: Any, fitness: jax.Array, key: jax.Array, s: PBTStatic) -> tuple[Any, jax.Array]:
    """One exploit-and-explore step of the whole population.

    state: the stacked RunState [P * S, ...] (member m: setting m // S, seed m % S),
    its ``hyperparams`` the members' current values; fitness [P * S] (NaN: the least
    fit). Returns (the new state, donor [P * S]: the member each copied, or -1)."""
    exploit_key, explore_key = jax.random.split(key)
    fitness = jnp.where(jnp.isnan(fitness), -jnp.inf, fitness).reshape(s.population, s.num_seeds)
    keys = jax.random.split(exploit_key, s.num_seeds)
    choose = choose_by_truncation if s.exploit == "truncation" else choose_by_tournament
    local = jax.vmap(lambda f, k: choose(f, k, s), in_axes=(1, 0), out_axes=1)(fitness, keys)
    members = jnp.arange(s.population * s.num_seeds).reshape(s.population, s.num_seeds)
    seed = members % s.num_seeds
    donor = (local * s.num_seeds + seed).reshape(-1)  # [P * S], a member of the same seed
    copied = donor != jnp.arange(donor.shape[0])
    taken = {name: jax.tree.map(lambda x: x[donor], getattr(state, name)) for name in COPIED}
    hp = explore(jax.tree.map(lambda x: x[donor], state.hyperparams), copied, explore_key, s)
    return state.replace(**taken, hyperparams=hp), jnp.where(copied, donor, -1)


def choose_by_truncation(fitness: jax.Array, key: jax.Array, s: PBTStatic) -> jax.Array:
    """fitness [P] -> donor [P]: each of the ceil(fraction * P) least fit draws one of
    the as many fittest; the rest keep themselves. Ties rank by member index."""
    n = max(1, math.ceil(s.fraction * s.population)) if s.fraction > 0 else 0
    order = jnp.argsort(fitness, stable=True)  # least fit first
    top = order[s.population - n :]
    picks = top[jax.random.randint(key, (s.population,), 0, max(n, 1))]
    rank = jnp.argsort(order, stable=True)  # each member's place, 0 = least fit
    return jnp.where(rank < n, picks, jnp.arange(s.population))


def choose_by_tournament(fitness: jax.Array, key: jax.Array, s: PBTStatic) -> jax.Array:
    """fitness [P] -> donor [P]: each member meets a random other and copies it when
    that one is strictly fitter."""
    me = jnp.arange(s.population)
    other = (me + jax.random.randint(key, (s.population,), 1, max(s.population, 2))) % s.population
    return jnp.where(fitness[other] > fitness, other, me)


def explore(hp: Any, copied: jax.Array, key: jax.Array, s: PBTStatic) -> Any:
    """The copies' explored values moved from their donors' (``hp``, already the
    donors'): times a factor, or a fresh draw; clipped into the key's bounds. Members
    that copied nobody keep theirs."""
    values = hp._asdict()
    factors = jnp.asarray(s.factors, jnp.float32)
    for i, k in enumerate(s.keys):
        factor_key, coin_key, draw_key = jax.random.split(jax.random.fold_in(key, i), 3)
        shape = copied.shape
        old = values[k.field]
        new = old * factors[jax.random.randint(factor_key, shape, 0, len(s.factors))]
        if s.explore == "resample":
            fresh = jax.random.uniform(coin_key, shape) < s.resample_probability
            new = jnp.where(fresh, draw(k, draw_key, shape), new)
        new = jnp.clip(new, k.low, k.high).astype(old.dtype)
        values[k.field] = jnp.where(copied, new, old)
    return type(hp)(**values)


def draw(k: ExploredKey, key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """Fresh values of key ``k`` from its sweep spec: one of its grid values, or its
    random distribution."""
    if k.grid:
        return jnp.asarray(k.grid, jnp.float32)[jax.random.randint(key, shape, 0, len(k.grid))]
    kind, args = k.distribution
    if kind == "uniform":
        return jax.random.uniform(key, shape, minval=args[0], maxval=args[1])
    if kind == "log_uniform":
        logs = jax.random.uniform(key, shape, minval=math.log(args[0]), maxval=math.log(args[1]))
        return jnp.exp(logs)
    return jnp.asarray(args, jnp.float32)[jax.random.randint(key, shape, 0, len(args))]
