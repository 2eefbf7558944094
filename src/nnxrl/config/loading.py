"""Reading a config: a YAML file or plain data, plus overrides, built into the
sections and checked; and the config as a run records it. Reading a config starts
no JAX and imports no env suite or add-on."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from nnxrl import schema
from nnxrl.algos.settings import PPOSettings as PPOConfig
from nnxrl.algos.settings import PQNSettings as PQNConfig
from nnxrl.config.checks import validate
from nnxrl.config.overrides import apply_overrides
from nnxrl.config.sections import Config
from nnxrl.hints import command, did_you_mean
from nnxrl.schema import ConfigError, parse_yaml, to_dict


def from_dict(data: Mapping[str, Any], overrides: Iterable[str] = ()) -> Config:
    """Build and validate a Config from plain data plus dotted ``KEY=VALUE`` overrides.
    Reading a config starts no JAX and imports no env suite or add-on: what needs
    them is ``check_parts``, which ``nnxrl.train`` runs."""
    data = without_legacy_sections(dict(data or {}))
    return validate(schema.build(Config, apply_overrides(data, overrides)))


def without_legacy_sections(data: dict) -> dict:
    """Runs saved before a config held only its algorithm's section recorded every
    built-in algorithm's, the others at their defaults, key for key: those are dropped
    (a section a person wrote for another algorithm stays, and is refused)."""
    chosen = data.get("algo", "ppo")
    for name, cls in (("ppo", PPOConfig), ("pqn", PQNConfig)):
        if name != chosen and data.get(name) == to_dict(cls()):
            data.pop(name)
    return data


def load(path: str | Path, overrides: Iterable[str] = ()) -> Config:
    """Load a YAML config file, apply overrides, validate."""
    from nnxrl.config.shipped import find_config, shipped_configs

    path = find_config(path)
    where = f"config file {str(path)!r}"
    if not path.exists():
        close = did_you_mean(path.name.removesuffix(".yaml"), shipped_configs(), n=3)
        raise ConfigError(
            f"{where} does not exist; give a YAML file or the name of a shipped config"
            f"{'; ' + close if close else ''} (`{command('configs')}` lists them)"
        )
    if not path.is_file():
        raise ConfigError(f"{where} is not a file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(
            f"{where} is not a text file; expected a YAML mapping of config keys"
        ) from None
    except OSError as e:
        raise ConfigError(f"{where} cannot be read ({e.strerror})") from None
    data = parse_yaml(text, where)
    if data is None:
        raise ConfigError(
            f"{where} is empty; expected a YAML mapping of config keys (copy one from configs/)"
        )
    if not isinstance(data, Mapping):
        kind = {list: "a list", str: "a string", bool: "true/false"}.get(type(data), "a number")
        raise ConfigError(
            f"{where} holds {kind} ({str(data)[:60]}); expected a YAML mapping of config "
            "keys such as 'env: {id: CartPole-v1}'"
        )
    return from_dict(data, overrides)


def saved_dict(config: Config) -> dict:
    """The config as a run records it (config.yaml, checkpoints): without the
    ``distributed`` section, which describes one launch, so that reading a run back
    (eval, export, a resume elsewhere) never joins that launch's process group."""
    return {k: v for k, v in to_dict(config).items() if k != "distributed"}


def saved_yaml(config: Config) -> str:
    """``saved_dict`` as YAML text, in the config's own key order (a run's
    config.yaml; the store writes it whole or not at all)."""
    return yaml.safe_dump(saved_dict(config), sort_keys=False)
