"""A dry run: a config read, its parts checked and every program of its run compiled
(one per group of a sweep over untraced keys), nothing trained or written. For a
config one is about to launch for hours: what would fail, fails now."""

from __future__ import annotations

import time
from dataclasses import dataclass

from nnxrl import config as config_lib
from nnxrl.config import population
from nnxrl.run.programs import compile_programs
from nnxrl.run.training import prepare


@dataclass(frozen=True)
class DryRun:
    """One program compiled: its config (a group's, in a sweep of several), the
    seconds compiling took and how the members and envs lie on the devices."""

    config: config_lib.Config
    compile_seconds: float
    layout: str


def dry_run(config: config_lib.Config) -> list[DryRun]:
    """Check ``config``'s parts (``prepare``) and compile every program its run
    needs; one ``DryRun`` per program."""
    config = prepare(config)
    found = []
    for group in programs_of(config):
        started = time.perf_counter()
        programs = compile_programs(group)
        seconds = time.perf_counter() - started
        found.append(DryRun(group, seconds, programs.layout.describe()))
    return found


def programs_of(config: config_lib.Config) -> list[config_lib.Config]:
    """The configs of the run's programs: the groups of a sweep of several, else itself."""
    if population.needs_groups(config):
        return [group for _, group in population.group_configs(config)]
    return [config]
