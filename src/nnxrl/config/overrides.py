"""Dotted ``KEY=VALUE`` overrides (``--set``), each value read as YAML."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from nnxrl.schema import ConfigError, parse_yaml


def parse_override(text: str) -> tuple[str, Any]:
    """``"ppo.learning_rate=3e-4"`` -> ``("ppo.learning_rate", 3e-4)`` (value parsed as YAML)."""
    if "=" not in text:
        raise ConfigError(f"override {text!r}: expected KEY=VALUE, e.g. ppo.learning_rate=3e-4")
    key, raw = text.split("=", 1)
    key = key.strip()
    if not key:
        raise ConfigError(f"override {text!r}: the key before '=' is empty")
    return key, parse_yaml(raw, f"override {text!r}") if raw.strip() else None


def apply_overrides(data: dict, overrides: Iterable[str]) -> dict:
    """Set dotted keys in a nested dict (a copy); unknown keys are caught by validation."""
    data = _deep_copy(data)
    for text in overrides:
        key, value = parse_override(text)
        node = data
        parts = key.split(".")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"override {text!r}: {part} is not a section")
            node = child
        if isinstance(node.get(parts[-1]), dict) and not isinstance(value, Mapping):
            raise ConfigError(
                f"override {text!r}: {key} is a section (a mapping of keys); set a key inside it "
                f"(e.g. --set {key}.<key>=VALUE) rather than replacing it with {value!r}"
            )
        node[parts[-1]] = value
    return data


def _deep_copy(data: Any) -> Any:
    if isinstance(data, Mapping):
        return {k: _deep_copy(v) for k, v in data.items()}
    return data
