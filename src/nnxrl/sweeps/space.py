"""Hyperparameter sweeps: the settings a config's ``sweep:`` section describes.

A sweep trains many settings of one config. ``grid`` gives a list of values per key
(every combination is a setting); ``random`` gives a distribution per key and
``num_samples`` draws from its own ``seed``::

    sweep:
      grid: {ppo.learning_rate: [1e-4, 3e-4, 1e-3]}
      random:
        ppo.ent_coef: {log_uniform: [1e-4, 1e-1]}
        ppo.clip_eps: {uniform: [0.1, 0.3]}
        ppo.gamma: {choice: [0.99, 0.995]}
      num_samples: 8

With both, every grid point is combined with every draw. Settings are numbered from
0: grid points in the order of the keys as written (the last key varies fastest),
each followed through the draws in order.

The traced keys (the fields declared ``traced`` in the algorithm's settings and the
intrinsic section, ``config.traced_keys``) travel into the compiled program as
values, so all settings x seeds train in one program (a population axis). Any other
key changes shapes or the program; it is refused unless ``allow_recompile``, when
every combination of those keys is a group of settings trained as its own program.

This module works on plain data (it imports no config class), so that ``config/``
can check a sweep while it validates.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from nnxrl.hints import did_you_mean
from nnxrl.schema import ConfigError

# What describes a run rather than its training: never swept
NOT_SWEPT = (
    "algo",
    "seed",
    "num_seeds",
    "logging",
    "checkpoint",
    "compile_cache",
    "mesh",
    "distributed",
    "sweep",
)
DISTRIBUTIONS = ("uniform", "log_uniform", "choice")
MAX_SETTINGS = 4096  # settings one sweep may hold (each is validated as a config)


def is_active(sweep: Any) -> bool:
    """Whether a ``sweep`` section asks for a sweep (a grid or a random key)."""
    return bool(sweep.grid or sweep.random)


def swept_keys(sweep: Any) -> list[str]:
    """Every key the sweep varies, grid keys first."""
    return [*sweep.grid, *sweep.random]


def untraced_keys(sweep: Any, traced: Sequence[str]) -> list[str]:
    """The swept keys not among the ``traced`` ones (each value needs its own program)."""
    return [k for k in swept_keys(sweep) if k not in traced]


def all_settings(sweep: Any) -> list[dict[str, Any]]:
    """Every setting of the sweep, in index order (see the module docstring): each a
    mapping from dotted config key to value."""
    check_shape(sweep)
    grid_keys = list(sweep.grid)
    points = [
        dict(zip(grid_keys, values, strict=True))
        for values in itertools.product(*([plain(v) for v in sweep.grid[k]] for k in grid_keys))
    ]
    draws = draw_random(sweep.random, sweep.num_samples, sweep.seed) if sweep.random else [{}]
    return [{**point, **draw} for point in points for draw in draws]


def selected(sweep: Any) -> list[tuple[int, dict[str, Any]]]:
    """(index, values) of the settings this run trains: all of them, or those matching
    ``sweep.only``."""
    return [
        (i, values)
        for i, values in enumerate(all_settings(sweep))
        if all(same_value(values.get(k), v) for k, v in sweep.only.items())
    ]


def same_value(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and float(a) == float(b)
    return a == b


def draw_random(spec: Mapping[str, Any], num_samples: int, seed: int) -> list[dict[str, Any]]:
    """``num_samples`` draws of every key's distribution from ``np.random.default_rng(seed)``
    (keys drawn in the order written, one sample of every key at a time)."""
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(num_samples):
        draw = {}
        for key, dist in spec.items():
            ((kind, args),) = dist.items()
            args = [plain(a) for a in args]
            if kind == "uniform":
                draw[key] = float(rng.uniform(args[0], args[1]))
            elif kind == "log_uniform":
                draw[key] = float(math.exp(rng.uniform(math.log(args[0]), math.log(args[1]))))
            else:
                draw[key] = args[int(rng.integers(len(args)))]
        draws.append(draw)
    return draws


def plain(value: Any) -> Any:
    """A value as YAML meant it: YAML 1.1 reads ``1e-4`` (no dot) as a string."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def check_shape(sweep: Any) -> None:
    """The grid holds non-empty lists, every random key one known distribution with
    finite, valid arguments, and the sweep at most ``MAX_SETTINGS`` settings (counted,
    not expanded); a ConfigError naming the key otherwise."""
    for key, values in sweep.grid.items():
        if not isinstance(values, Sequence) or isinstance(values, str) or not values:
            raise ConfigError(
                f"sweep.grid.{key}: expected a non-empty list of values, got {values!r}"
            )
    check_count(sweep)
    for key, dist in sweep.random.items():
        if key in sweep.grid:
            raise ConfigError(
                f"sweep.random.{key}: {key} is also in sweep.grid; sweep each key one way"
            )
        check_distribution(f"sweep.random.{key}", dist)


def check_count(sweep: Any) -> None:
    """At most ``MAX_SETTINGS`` settings, counted from the grid's sizes and the draws."""
    count = math.prod(len(v) for v in sweep.grid.values()) * (
        sweep.num_samples if sweep.random else 1
    )
    if count > MAX_SETTINGS:
        sizes = " x ".join(
            [f"{len(v)} ({k})" for k, v in sweep.grid.items()]
            + ([f"{sweep.num_samples} (num_samples)"] if sweep.random else [])
        )
        raise ConfigError(
            f"sweep: {sizes} make {count:,} settings, more than the {MAX_SETTINGS:,} one run "
            "trains as one population; sweep fewer values, or split the sweep with "
            "sweep.only"
        )


def check_distribution(where: str, dist: Any) -> None:
    """One of ``DISTRIBUTIONS`` with valid arguments: a non-empty choice, or finite
    bounds low <= high (> 0 for log_uniform)."""
    if not isinstance(dist, Mapping) or len(dist) != 1 or next(iter(dist)) not in DISTRIBUTIONS:
        raise ConfigError(
            f"{where}: expected one distribution, {{uniform: [low, high]}}, "
            f"{{log_uniform: [low, high]}} or {{choice: [values]}}; got {dist!r}"
        )
    ((kind, args),) = dist.items()
    if isinstance(args, Sequence) and not isinstance(args, str):
        args = [plain(a) for a in args]
    if kind == "choice":
        if not isinstance(args, Sequence) or isinstance(args, str) or not args:
            raise ConfigError(f"{where}.choice: expected a non-empty list, got {args!r}")
        return
    bounds_ok = (
        isinstance(args, Sequence)
        and len(args) == 2
        and all(isinstance(a, (int, float)) and not isinstance(a, bool) for a in args)
    )
    if bounds_ok and not all(math.isfinite(a) for a in args):
        raise ConfigError(f"{where}.{kind}: bounds must be finite numbers, got {args!r}")
    if not bounds_ok or not args[0] <= args[1]:
        raise ConfigError(f"{where}.{kind}: expected [low, high] with low <= high, got {args!r}")
    if kind == "log_uniform" and args[0] <= 0:
        raise ConfigError(f"{where}.log_uniform: bounds must be > 0, got {args!r}")


def check_keys(sweep: Any, traced: Sequence[str], known: Sequence[str], algo: str) -> None:
    """Every swept key is a config key outside ``NOT_SWEPT``; keys not among the
    ``traced`` ones of algorithm ``algo`` only with ``allow_recompile``. ``known``
    lists every config key."""

    for key in swept_keys(sweep):
        where = f"sweep.{'grid' if key in sweep.grid else 'random'}.{key}"
        if key.split(".")[0] in NOT_SWEPT:
            raise ConfigError(
                f"{where}: {key} describes the run, not its training, and cannot be swept "
                "(num_seeds already trains every setting on several seeds)"
            )
        if key not in known:
            close = did_you_mean(key, traced) or did_you_mean(key, known)
            hint = f"; {close}" if close else ""
            raise ConfigError(f"{where}: {key} is not a config key{hint}")
    untraced = untraced_keys(sweep, traced)
    if untraced and not sweep.allow_recompile:
        raise ConfigError(
            f"sweep: {', '.join(untraced)} cannot be traced (it changes shapes or the "
            f"compiled program), so it cannot be swept inside one program. Keys {algo} "
            f"sweeps in one program: {', '.join(traced)}. Or set "
            "sweep.allow_recompile: true to train each value as its own program, one after "
            "another"
        )
    for key in sweep.only:
        if key not in swept_keys(sweep):
            raise ConfigError(f"sweep.only.{key}: {key} is not a swept key")


def groups(sweep: Any, traced: Sequence[str]) -> list[dict[str, Any]]:
    """The combinations of untraced values among the selected settings, in order of
    their first setting: each is one program (``sweep.only`` for it)."""
    untraced = untraced_keys(sweep, traced)
    seen: list[dict[str, Any]] = []
    for _, values in selected(sweep):
        combo = {k: values[k] for k in untraced}
        if combo not in seen:
            seen.append(combo)
    return seen
