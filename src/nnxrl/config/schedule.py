"""How a run's env steps divide: the batch of one update, the number of updates, and
the updates per compiled chunk. Arithmetic on a config's own values, in one place: the
config's checks use it (that the splits divide), as do the run loop, the loggers and
the reports.

It imports no config class, so that ``config.validate`` can call it."""

from __future__ import annotations

import math
from typing import Any, Protocol

from nnxrl.config import hp_schedule

CHUNKS = 50  # updates_per_chunk unset: the largest divisor that gives at least this many
# ...and a chunk of at most this many env steps per seed: progress, checkpoints and a
# stop come between chunks, so an endless budget must not make a chunk last hours
CHUNK_ENV_STEPS = 2**20


class Scheduled(Protocol):
    """What the schedule reads of a config (``nnxrl.Config`` is one)."""

    @property
    def total_env_steps(self) -> int: ...
    @property
    def env(self) -> Any: ...
    @property
    def algo_config(self) -> Any: ...
    @property
    def logging(self) -> Any: ...


def batch_size(config: Scheduled) -> int:
    """Transitions per update per seed: env.num_envs * <algo>.num_steps."""
    return config.env.num_envs * config.algo_config.num_steps


def minibatches(config: Scheduled) -> int:
    """The algorithm's minibatches per epoch (one where its settings have none): the
    split an add-on's own epochs default to (``intrinsic.num_minibatches``)."""
    return getattr(config.algo_config, "num_minibatches", 1)


def num_updates(config: Scheduled) -> int:
    """total_env_steps // batch_size (the steps of a last partial batch are not taken)."""
    return config.total_env_steps // batch_size(config)


def updates_per_chunk(config: Scheduled) -> int:
    """Updates per compiled chunk: logging.updates_per_chunk, or the largest divisor of
    num_updates that gives at least ~50 chunks of at most CHUNK_ENV_STEPS env steps per
    seed each, and that divides where chunks must end: population-based training's
    interval, the updates before an ``hp_schedule``'s changes (so that a run needs one
    chunk program)."""
    if config.logging.updates_per_chunk is not None:
        return config.logging.updates_per_chunk
    updates = num_updates(config)
    target = max(1, min(updates // CHUNKS, CHUNK_ENV_STEPS // batch_size(config)))
    pbt = getattr(getattr(config, "sweep", None), "pbt", None)
    divided = pbt.interval if pbt is not None and pbt.interval else updates
    divided = math.gcd(divided, *hp_schedule.cuts(getattr(config, "hp_schedule", ())))
    return largest_divisor(divided, target)


def largest_divisor(n: int, at_most: int) -> int:
    """The largest divisor of ``n`` (>= 1) that is at most ``at_most`` (>= 1), from the
    pairs (d, n // d) with d <= sqrt(n): a trillion updates take a million steps."""
    pairs = (x for d in range(1, math.isqrt(n) + 1) if n % d == 0 for x in (d, n // d))
    return max(x for x in pairs if x <= at_most)
