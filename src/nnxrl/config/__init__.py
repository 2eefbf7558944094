"""A run's config: YAML -> checked, frozen dataclasses, with dotted overrides.

- ``sections.py``: every key a YAML file may hold, as a field of a section;
- ``checks.py``: the checks that span sections (``validate``, ``check_parts``);
- ``overrides.py``: ``--set KEY=VALUE``; ``loading.py``: files and plain data in, the
  recorded config out;
- what a config implies, worked out in one place each: ``schedule.py`` (the updates
  and chunks), ``hp_schedule.py`` (values that change during a run),
  ``population.py`` (the members a sweep trains);
- ``reference.py`` (the generated reference page), ``shipped.py`` (the shipped
  configs by name).

This package imports the pure layers (their settings) and nothing of the run above
it; the names below are its public face."""

from nnxrl.config.checks import check_parts, env_split_problem, validate, with_values
from nnxrl.config.loading import from_dict, load, saved_dict, saved_yaml, without_legacy_sections
from nnxrl.config.mesh import DistributedConfig, MeshConfig
from nnxrl.config.overrides import apply_overrides, parse_override
from nnxrl.config.sections import (
    BACKENDS,
    MAX_BATCH,
    MAX_SEED,
    CheckpointConfig,
    CompileCacheConfig,
    Config,
    EnvConfig,
    EvaluationConfig,
    IntrinsicConfig,
    LoggingConfig,
    NetworkConfig,
    SweepConfig,
    describe,
    traced_keys,
)
from nnxrl.schema import ConfigError, setting, to_dict

__all__ = [
    "BACKENDS",
    "MAX_BATCH",
    "MAX_SEED",
    "CheckpointConfig",
    "CompileCacheConfig",
    "Config",
    "ConfigError",
    "DistributedConfig",
    "EnvConfig",
    "EvaluationConfig",
    "IntrinsicConfig",
    "LoggingConfig",
    "MeshConfig",
    "NetworkConfig",
    "SweepConfig",
    "apply_overrides",
    "check_parts",
    "describe",
    "env_split_problem",
    "from_dict",
    "load",
    "parse_override",
    "saved_dict",
    "saved_yaml",
    "setting",
    "to_dict",
    "traced_keys",
    "validate",
    "with_values",
    "without_legacy_sections",
]
