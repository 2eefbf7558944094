"""The population a run trains: its settings (one, or a sweep's), each config, and
the members (settings x seeds: member m is seed m % num_seeds of setting
m // num_seeds)."""

from __future__ import annotations

import dataclasses
from typing import Any

from nnxrl import config as config_lib
from nnxrl.sweeps import space


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
