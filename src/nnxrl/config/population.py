"""The population a run trains: its settings (one, or a sweep's), each config, the
members (settings x seeds: member m is seed m % num_seeds of setting
m // num_seeds), and, for population-based training, what its steps need
(``pbt_static``); a sweep over untraced keys as groups of settings, one program each
(``group_configs``)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from nnxrl import config as config_lib
from nnxrl.algos.hyperparams import STREAM_FIELDS
from nnxrl.config import schedule
from nnxrl.schema import traced_fields
from nnxrl.sweeps import space
from nnxrl.sweeps.pbt import ExploredKey, PBTStatic


def settings(config: config_lib.Config) -> tuple[tuple[int, dict[str, Any]], ...]:
    """(index, values) of every setting the run trains (``sweeps/space.py``); a run
    that is not a sweep has one, ``(0, {})``."""
    if not config.is_sweep:
        return ((0, {}),)
    return tuple(space.selected(config.sweep))


def num_members(config: config_lib.Config) -> int:
    """The population the program trains: settings x seeds."""
    return len(settings(config)) * config.num_seeds


def setting_config(config: config_lib.Config, index: int) -> config_lib.Config:
    """The plain config of setting ``index`` of a sweep: ``config`` with the setting's
    values and no sweep section (what best.yaml holds; ``nnxrl train`` trains it alone)."""
    values = dict(settings(config))[index] if config.is_sweep else {}
    return config_lib.with_values(config, values)


def program_config(config: config_lib.Config) -> config_lib.Config:
    """The config the compiled program is built from: that of the run's first setting
    (every setting of one program shares the untraced values; the traced ones enter
    as values, ``hyperparams_of``)."""
    if not config.is_sweep:
        return config
    first = setting_config(config, settings(config)[0][0])
    return dataclasses.replace(first, sweep=config.sweep)


def pbt_static(config: config_lib.Config) -> PBTStatic | None:
    """What a PBT run's steps need (``sweeps/pbt.py``); None unless the config is a
    sweep with ``sweep.pbt.interval`` > 0."""
    if not (config.is_sweep and config.sweep.pbt.interval):
        return None
    pbt = config.sweep.pbt
    return PBTStatic(
        population=len(settings(config)),
        num_seeds=config.num_seeds,
        interval=pbt.interval,
        num_updates=schedule.num_updates(config),
        seed=config.seed,
        exploit=pbt.exploit,
        fraction=pbt.fraction,
        explore=pbt.explore,
        factors=tuple(pbt.factors),
        resample_probability=pbt.resample_probability,
        keys=tuple(explored_key(config, key) for key in space.swept_keys(config.sweep)),
    )


def explored_key(config: config_lib.Config, key: str) -> ExploredKey:
    """A swept key as PBT explores it: its Hyperparams field, bounds (``sweep.pbt.bounds``,
    else the key's own limits) and the sweep's values or distribution for resampling."""
    section, name = key.split(".", 1)
    if section == "intrinsic":
        owner = config_lib.IntrinsicConfig
        field = dict(zip(traced_fields(owner), STREAM_FIELDS, strict=True))[name]
    else:
        owner, field = type(config.algo_config), name
    meta = {f.name: f.metadata for f in dataclasses.fields(owner)}[name]
    low = meta["low"] if meta["low"] is not None else -math.inf
    high = meta["high"] if meta["high"] is not None else math.inf
    if key in config.sweep.pbt.bounds:
        low, high = (float(space.plain(b)) for b in config.sweep.pbt.bounds[key])
    sweep = config.sweep
    if key in sweep.grid:
        grid = tuple(float(space.plain(v)) for v in sweep.grid[key])
        return ExploredKey(key, field, low, high, grid=grid)
    ((kind, args),) = sweep.random[key].items()
    return ExploredKey(key, field, low, high, distribution=(kind, tuple(map(space.plain, args))))


def needs_groups(config: config_lib.Config) -> bool:
    """Whether the sweep's settings differ in untraced keys (several programs)."""
    return config.is_sweep and len(space.groups(config.sweep, config_lib.traced_keys(config))) > 1


def group_configs(config: config_lib.Config) -> list[tuple[dict, config_lib.Config]]:
    """(untraced values, config) of every group, in order of its first setting."""
    out = []
    for values in space.groups(config.sweep, config_lib.traced_keys(config)):
        only = {**config.sweep.only, **values}
        out.append(
            (
                values,
                dataclasses.replace(config, sweep=dataclasses.replace(config.sweep, only=only)),
            )
        )
    return out
