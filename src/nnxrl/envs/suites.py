"""The other JAX env suites, each behind an id prefix and an optional extra:
``jumanji:Snake-v1``, ``xland:MiniGrid-Empty-5x5``, ``navix:Navix-Empty-5x5-v0``,
``pgx:2048``, ``popgym:CountRecallEasy``.

Each suite has one adapter module (``envs/<suite>_env.py``) that maps its API onto
``from_single`` (``envs/single.py``): its reset and step for one env, its legal-action
mask where it has one, and the per-episode results it reports. An adapter exposes

    ids() -> [name]                   the suite's ids nnxrl can train on
    refusal(name) -> str | None       why an id the suite lists cannot be used here
    options(name) -> {key: default}   the env.kwargs it takes
    make(name, num_envs, **kwargs)    the VecEnv
    check(name, kwargs) -> str | None what is wrong with option values (optional)
    frames(name, kwargs) -> draw      draw(state of one env, obs) -> [H, W, 3] uint8,
                                      with the suite's own renderer (optional)

and this file checks a config against it before anything is built or written. It
imports no suite (nor JAX) until an id of one is checked or built.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

from nnxrl.envs.settings import EnvConfig
from nnxrl.hints import command, did_you_mean
from nnxrl.schema import ConfigError

if TYPE_CHECKING:
    from nnxrl.envs.base import VecEnv


@dataclass(frozen=True)
class Suite:
    name: str  # as its authors write it
    prefix: str  # of its ids in env.id
    extra: str  # `uv sync --extra <extra>` installs it
    package: str  # its import name
    adapter: str  # nnxrl's module for it
    example: str  # an id of it

    def available(self) -> bool:
        return importlib.util.find_spec(self.package) is not None

    def module(self) -> ModuleType:
        return importlib.import_module(self.adapter)


SUITES = (
    Suite("Jumanji", "jumanji:", "jumanji", "jumanji", "nnxrl.envs.jumanji_env", "Snake-v1"),
    Suite(
        "XLand-MiniGrid",
        "xland:",
        "xland",
        "xminigrid",
        "nnxrl.envs.xland_env",
        "MiniGrid-Empty-8x8",
    ),
    Suite("Navix", "navix:", "navix", "navix", "nnxrl.envs.navix_env", "Navix-Empty-8x8-v0"),
    Suite("Pgx", "pgx:", "pgx", "pgx", "nnxrl.envs.pgx_env", "2048"),
    Suite(
        "POPGym Arcade",
        "popgym:",
        "popgym",
        "popgym_arcade",
        "nnxrl.envs.popgym_env",
        "CountRecallEasy",
    ),
)


def env_suites() -> tuple[Suite, ...]:
    """The env suites reached by an id's prefix (``PREFIX:NAME``), each an optional
    extra: its name, prefix, an example id and whether it is installed."""
    return SUITES


def suite_of(env_id: str) -> Suite | None:
    """The suite whose prefix ``env_id`` has (None: none of them)."""
    return next((s for s in SUITES if env_id.startswith(s.prefix)), None)


def suite_ids(suite: Suite) -> list[str]:
    """The suite's usable ids, prefixed (none without its extra)."""
    if not suite.available():
        return []
    return [suite.prefix + name for name in suite.module().ids()]


def check_suite_config(suite: Suite, env: EnvConfig) -> None:
    """Raise ConfigError, naming the key, for a missing extra, an unknown or refused
    id, a reset_ratio other than 1, or an option the env does not take."""
    if not suite.available():
        raise ConfigError(
            f"env.id: {env.id!r} needs the {suite.name} package, an optional extra: install "
            f"it with `uv sync --extra {suite.extra}`"
        )
    adapter, name = suite.module(), env.id.removeprefix(suite.prefix)
    refused = adapter.refusal(name)
    if refused:
        raise ConfigError(f"env.id: {env.id!r} {refused}")
    check_listed(env, suite.name, suite_ids(suite), suite.extra)
    from nnxrl.envs.gymnax_env import check_kind

    options = adapter.options(name)
    for key, value in env.kwargs.items():
        if key not in options:
            close = did_you_mean(key, options)
            hint = f"; {close}" if close else ""
            raise ConfigError(
                f"env.kwargs.{key}: {env.id} has no option {key!r}{hint}. Its options: "
                f"{sorted(options) or 'none'}"
            )
        try:
            check_kind(f"env.kwargs.{key}", value, options[key])
        except ValueError as e:
            raise ConfigError(str(e)) from None
    wrong = adapter.check(name, env.kwargs) if hasattr(adapter, "check") else None
    if wrong:
        raise ConfigError(wrong)


def check_listed(env: EnvConfig, family: str, ids: list[str], listed_as: str) -> None:
    """Raise ConfigError for an ``env.id`` not among the ``family``'s ``ids`` (naming
    the closest, and ``nnxrl envs --suite LISTED_AS``, which lists them) or a
    reset_ratio other than 1 (Craftax's alone)."""
    if env.id not in ids:
        close = did_you_mean(env.id, ids, n=3)
        listing = command(f"envs --suite {listed_as}")
        raise ConfigError(
            f"env.id: unknown {family} environment {env.id!r}{'; ' + close if close else ''} "
            f"(`{listing}` lists its {len(ids)} ids)"
        )
    if env.reset_ratio != 1:
        raise ConfigError(f"env.reset_ratio: {env.reset_ratio} is for Craftax envs only")


def make_suite_env(suite: Suite, env: EnvConfig, num_envs: int) -> VecEnv:
    """The suite's VecEnv for ``env`` (checked); a value the suite itself rejects
    becomes a ConfigError naming env.kwargs."""
    try:
        return suite.module().make(env.id.removeprefix(suite.prefix), num_envs, **env.kwargs)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"env.kwargs: {env.id} rejected {env.kwargs}: {e}") from None
