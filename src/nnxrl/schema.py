"""The config schema machinery: typed fields with docs and bounds, checked building
of frozen dataclasses from plain data, safe YAML parsing, and errors that name the key.

A section checks what lies between its own keys where it is defined: a
``check_section(where)`` method, which ``build`` runs on the section it built (the
checks that span sections are the config's, ``config/checks.py``).

A leaf module (it imports nothing from nnxrl but its errors), so that the config classes, the env
registry and the add-on registry can all declare and check their options with it
without importing each other.
"""

from __future__ import annotations

import dataclasses
import decimal
import math
import reprlib
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Any, Literal

import yaml

from nnxrl.errors import ConfigError
from nnxrl.hints import closest, did_you_mean, first_few


def setting(
    default: Any,
    doc: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    choices: tuple | None = None,
    traced: bool = False,
) -> Any:
    """A config field with its documentation, (optional) numeric bounds, and for list
    fields the allowed items. ``traced``: the value enters the compiled program as an
    argument (a float32 hyperparameter), so a sweep can vary it in one program
    (``traced_fields``)."""
    meta = {
        "doc": doc,
        "low": low,
        "high": high,
        "low_open": low_open,
        "choices": choices,
        "traced": traced,
    }
    if isinstance(default, (dict, list)):
        factory = lambda d=default: type(d)(d)  # noqa: E731  (a fresh copy per config)
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


def section(cls: type, doc: str) -> Any:
    """A nested config section: a frozen dataclass with its defaults."""
    return field(default_factory=cls, metadata={"doc": doc})


def chosen_section(
    tag: str, classes: Callable[[], Mapping[str, type]], doc: str, register: str
) -> Any:
    """A section whose class the value of the field ``tag`` chooses among ``classes()``
    (name -> dataclass, read when a config is built): in plain data it sits under that
    name (``algo: pqn`` reads the section ``pqn:``), and a section under another of
    the names is an error naming it. The field's own default is None: the chosen
    class's defaults fill it (``fill_chosen``). ``register``: how more are added, for
    the error on an unknown name."""
    meta = {"doc": doc, "tag": tag, "classes": classes, "register": register}
    return field(default=None, metadata=meta)


def traced_fields(cls: type) -> tuple[str, ...]:
    """The fields of a config dataclass declared ``traced``, in order."""
    return tuple(f.name for f in dataclasses.fields(cls) if f.metadata.get("traced"))


def fill_chosen(config: Any) -> None:
    """In a frozen dataclass's ``__post_init__``: each ``chosen_section`` field left
    None becomes its chosen class's defaults; one of another class is a ConfigError."""
    for f in dataclasses.fields(config):
        if "tag" not in f.metadata:
            continue
        name = getattr(config, f.metadata["tag"])
        cls = _chosen_class(f, name, f.metadata["tag"])
        value = getattr(config, f.name)
        if value is None:
            object.__setattr__(config, f.name, cls())
        elif type(value) is not cls:
            raise ConfigError(
                f"{f.name}: a {type(value).__name__}, but {f.metadata['tag']} is {name!r}, "
                f"whose section is a {cls.__name__}"
            )


def _chosen_class(f: dataclasses.Field, name: Any, tag: str) -> type:
    classes = f.metadata["classes"]()
    if name not in classes:
        raise unknown_name(tag, name, classes, f.metadata["register"])
    return classes[name]


def unknown_name(key: str, name: Any, known: Any, register: str) -> ConfigError:
    """The error for a name no registry holds: the closest known one, all of them, and
    how to register more (``register``)."""
    close = did_you_mean(name, known)
    hint = f"; {close}" if close else ""
    return ConfigError(
        f"{key}: {name!r} is not registered{hint} Known: {sorted(known)}; {register}"
    )


def _type_name(tp: Any) -> str:
    if typing.get_origin(tp) is Literal:
        return " | ".join(repr(a) for a in typing.get_args(tp))
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        return " | ".join(_type_name(a) for a in typing.get_args(tp))
    return getattr(tp, "__name__", str(tp))


def _coerce(key: str, value: Any, tp: Any, meta: Mapping[str, Any]) -> Any:
    """Check ``value`` against the annotation ``tp`` and the bounds in ``meta``."""
    origin = typing.get_origin(tp)
    if isinstance(tp, types.UnionType) or origin is typing.Union:
        return _coerce_union(key, value, typing.get_args(tp), meta)
    if origin is Literal:
        allowed = typing.get_args(tp)
        if value not in allowed:
            raise ConfigError(f"{key}: {value!r} is not allowed; choose one of {list(allowed)}")
        return value
    if origin is tuple and typing.get_args(tp)[1:] == (Ellipsis,):  # tuple[float, ...]
        item = typing.get_args(tp)[0]
        if item is dict and isinstance(value, (list, tuple)):  # a list of mappings, or none
            return tuple(_mapping(f"{key}[{i}]", v, meta) for i, v in enumerate(value))
        if not isinstance(value, (list, tuple)) or not value:
            kind = "mappings" if item is dict else "numbers"
            raise ConfigError(f"{key}: expected a list of {kind}, got {value!r}")
        return tuple(_coerce(f"{key}[{i}]", v, item, meta) for i, v in enumerate(value))
    if tp in (dict, list, tuple, str, bool):
        return _NON_NUMERIC[tp](key, value, meta)
    value = _number(key, value, tp)
    low, high = meta.get("low"), meta.get("high")
    if low is not None and (value < low or (meta.get("low_open") and value == low)):
        op = ">" if meta.get("low_open") else ">="
        raise ConfigError(f"{key}: {value!r} is out of range; it must be {op} {low}")
    if high is not None and value > high:
        raise ConfigError(f"{key}: {value!r} is out of range; it must be <= {high}")
    return value


def _coerce_union(key: str, value: Any, args: tuple, meta: Mapping[str, Any]) -> Any:
    """The first member of the union that takes ``value`` (None for an optional)."""
    if value is None and type(None) in args:
        return None
    errors = []
    for arg in args:
        if arg is type(None):
            continue
        try:
            return _coerce(key, value, arg, meta)
        except ConfigError as e:
            errors.append(e)
    raise errors[0]


def _number(key: str, value: Any, tp: Any) -> Any:
    """An int or a finite float, as researchers write them: YAML 1.1 reads ``1e-3``
    and ``5e6``, without a dot, as strings, and they are taken; an int is taken from
    any exact integer (``1e5``, ``2.5e5``, ``1_000_000``, ``100000.0``)."""
    if tp is int:
        return _integer(key, value)
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{key}: expected a number, got {value!r}")
    if not math.isfinite(value):
        raise ConfigError(f"{key}: {float(value)!r} is not a finite number; give a finite value")
    return float(value)


def _integer(key: str, value: Any) -> int:
    """``value`` as an int when it is an exact integer (read exactly, not through a
    float: ``1e20`` is 10^20); a clear refusal otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    exact = None
    if isinstance(value, float) and math.isfinite(value):
        exact = decimal.Decimal(repr(value))  # as written: 0.0015, not its binary value
    elif isinstance(value, str):
        try:
            exact = decimal.Decimal(value.strip())
        except decimal.InvalidOperation:
            pass
    if exact is None or not exact.is_finite():
        raise ConfigError(f"{key}: expected an integer, got {value!r}")
    if exact != exact.to_integral_value():
        raise ConfigError(
            f"{key}: expected a whole number, got {value!r}; write it as 1000, 1e5 or 1_000_000"
        )
    return int(exact)


def _boolean(key: str, value: Any, meta: Mapping[str, Any]) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{key}: expected true or false, got {value!r}")
    return value


def _string(key: str, value: Any, meta: Mapping[str, Any]) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{key}: expected a string, got {value!r}")
    return value


def _mapping(key: str, value: Any, meta: Mapping[str, Any]) -> dict:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{key}: expected a mapping, got {value!r}")
    return dict(value)


def _choices(key: str, value: Any, meta: Mapping[str, Any]) -> list:
    """A list of the field's allowed items, each once, in the order given."""
    allowed = meta.get("choices") or ()
    if not isinstance(value, (list, tuple)) or not all(v in allowed for v in value):
        raise ConfigError(f"{key}: {value!r} is not allowed; give a list of any of {list(allowed)}")
    return list(dict.fromkeys(value))


def _counts(key: str, value: Any, meta: Mapping[str, Any]) -> tuple:
    """A tuple of positive integers (e.g. conv features)."""
    if not isinstance(value, (list, tuple)) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value
    ):
        raise ConfigError(f"{key}: expected a list of positive integers, got {value!r}")
    return tuple(value)


_NON_NUMERIC = {
    bool: _boolean,
    str: _string,
    dict: _mapping,
    list: _choices,
    tuple: _counts,
}


def build(cls: type, data: Mapping[str, Any], prefix: str = "") -> Any:
    if not isinstance(data, Mapping):
        raise ConfigError(f"{prefix.rstrip('.') or 'config'}: expected a mapping, got {data!r}")
    hints = typing.get_type_hints(cls)
    fields, chosen = _keys(cls, data, prefix)
    _reject_unknown(data, fields, chosen, prefix)
    kwargs = {}
    for name, f in fields.items():
        if name not in data:
            continue
        value, tp = data[name], hints[f.name]
        if f.name in chosen:
            tp = _chosen_class(f, name, f.metadata["tag"])
        if dataclasses.is_dataclass(tp):
            kwargs[f.name] = _build_section(tp, value, prefix, name)
        else:
            kwargs[f.name] = _coerce(f"{prefix}{name}", value, tp, f.metadata)
    built = cls(**kwargs)
    if hasattr(built, "check_section"):  # a section's checks between its own keys
        built.check_section(prefix.rstrip(".") or "config")
    return built


def _keys(cls: type, data: Mapping[str, Any], prefix: str) -> tuple[dict, dict]:
    """(key in plain data -> field, chosen section's field -> its field's metadata and
    the tag's value): a ``chosen_section`` field's key is its tag's value (or the
    tag's default)."""
    fields, chosen = {}, {}
    for f in dataclasses.fields(cls):
        if "tag" in f.metadata:
            tag = next(t for t in dataclasses.fields(cls) if t.name == f.metadata["tag"])
            name = _coerce(f"{prefix}{tag.name}", data.get(tag.name, tag.default), str, {})
            _chosen_class(f, name, f"{prefix}{tag.name}")
            fields[name] = f
            chosen[f.name] = (f.metadata, name)
        else:
            fields[f.name] = f
    return fields, chosen


def _reject_unknown(data: Mapping[str, Any], fields: dict, chosen: dict, prefix: str) -> None:
    """A ConfigError for the first key of ``data`` that is no field: one that names
    another class a chosen section could have is told which section is read."""
    unknown = [k for k in data if k not in fields]
    if not unknown:
        return
    key = unknown[0]
    for meta, name in chosen.values():
        if key in meta["classes"]():
            raise ConfigError(_other_section(data[key], key, meta, name, prefix))
    close = did_you_mean(key, fields, prefix=prefix)
    hint = f"; {close}" if close else ""
    inside = [f"{prefix}{n}.{key}" for n, f in fields.items() if key in section_keys(f, n)]
    if inside:  # a section's key given at the level above
        hint = f"; it is a key of a section: did you mean {' or '.join(inside)}?"
    raise ConfigError(f"unknown key {prefix}{key}{hint} (the keys here: {sorted(fields)})")


def _other_section(section: Any, key: str, meta: Mapping, name: str, prefix: str) -> str:
    """The refusal of the section ``key`` that another choice of ``meta["tag"]`` reads:
    its keys by name, where they would go in the section read (``name``), and how to
    choose the other."""
    tag, inner = meta["tag"], list(section) if isinstance(section, Mapping) else []
    given = first_few([f"{prefix}{key}.{k}" for k in inner], 5) or f"{prefix}{key}"
    read = {f.name for f in dataclasses.fields(meta["classes"]()[name])}
    moved = [c for k in inner[:5] for c in closest(k, read, 1)]
    where = f" ({', '.join(f'{prefix}{name}.{c}' for c in moved)})" if moved else ""
    return (
        f"{given}: a section for {tag} {key!r}, but {tag} is {name!r}, which reads only "
        f"the {prefix}{name} section; move these settings to {prefix}{name}.*{where} or set "
        f"{tag}: {key}"
    )


def section_keys(f: dataclasses.Field, name: str) -> set[str]:
    """The keys of the section field ``f`` holds (for a chosen section, those of the
    class chosen, ``name``); none for a plain field."""
    if "tag" in f.metadata:
        chosen = f.metadata["classes"]().get(name)
        return set(field_names(chosen)) if chosen is not None else set()
    factory = f.default_factory
    if factory is dataclasses.MISSING or not isinstance(factory, type):
        return set()
    return set(field_names(factory)) if dataclasses.is_dataclass(factory) else set()


def field_names(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def _build_section(tp: type, value: Any, prefix: str, name: str) -> Any:
    if not isinstance(value, Mapping):
        example = next(f.name for f in dataclasses.fields(tp))
        raise ConfigError(
            f"{prefix}{name} is a section (a mapping of keys), got {value!r}; set "
            f"keys inside it, e.g. {prefix}{name}.{example}=..."
        )
    return build(tp, value, f"{prefix}{name}.")


def build_section(cls: type, data: Mapping[str, Any], prefix: str) -> Any:
    """Build and check one config dataclass from plain data; errors name ``prefix``+key."""
    return build(cls, data, prefix)


# Bounds on what a config's YAML may hold: a config is a few kilobytes, and an alias
# bomb ("billion laughs") or a deep nesting must be refused before anything copies,
# prints or recurses over it.
MAX_YAML_CHARS = 1_000_000
MAX_YAML_NODES = 100_000  # values after expanding aliases
MAX_YAML_DEPTH = 50
MAX_STRING_CHARS = 10_000


def _refused_value(node: Any, message: str) -> ConfigError:
    """A ConfigError for a value the loader refuses, with ``mark``: where the value
    stands in the text (line, column), for ``parse_yaml`` to name its key."""
    error = ConfigError(message)
    error.mark = (node.start_mark.line, node.start_mark.column)
    return error


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, stricter where YAML 1.1 surprises: a key given twice in one
    mapping is an error (PyYAML would keep the last), a key must be a plain value, and
    booleans and numbers must be written as YAML 1.2 and JSON read them: ``yes``, ``on``
    or ``1:30`` (90, base 60) are refused instead of read as true or a number. Merge
    keys (``<<: *defaults``) work as in YAML."""

    def construct_mapping(self, node, deep=False):
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                raise ConfigError(
                    f"line {line}: a mapping key must be a plain name or number, got "
                    f"{type(key).__name__} {_brief(key)}"
                )
            if key in seen:
                raise ConfigError(
                    f"key {key!r} appears twice in one mapping (lines {seen[key]} and {line}); "
                    "keep one"
                )
            seen[key] = line
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_bool(self, node):
        if node.value not in ("true", "false", "True", "False", "TRUE", "FALSE"):
            raise _refused_value(
                node,
                f"line {node.start_mark.line + 1}: {node.value!r} is read as a boolean by "
                "YAML 1.1 but not by YAML 1.2 or JSON; write true or false (or quote it for "
                "a string)",
            )
        return super().construct_yaml_bool(node)

    def construct_yaml_int(self, node):
        self._refuse_base_60(node)
        return super().construct_yaml_int(node)

    def construct_yaml_float(self, node):
        self._refuse_base_60(node)
        return super().construct_yaml_float(node)

    def _refuse_base_60(self, node) -> None:
        if ":" in node.value:
            raise _refused_value(
                node,
                f"line {node.start_mark.line + 1}: {node.value!r} is a base-60 number in YAML "
                "1.1; write the number itself, or quote it for a string",
            )


_StrictLoader.add_constructor("tag:yaml.org,2002:bool", _StrictLoader.construct_yaml_bool)
_StrictLoader.add_constructor("tag:yaml.org,2002:int", _StrictLoader.construct_yaml_int)
_StrictLoader.add_constructor("tag:yaml.org,2002:float", _StrictLoader.construct_yaml_float)


def parse_yaml(text: str, where: str) -> Any:
    """YAML text -> plain data (safe: no tags that construct objects; bounded in size,
    aliases and depth, ``MAX_YAML_*``); errors name ``where``."""
    if len(text) > MAX_YAML_CHARS:
        raise ConfigError(
            f"{where}: {len(text):,} characters; a config holds at most {MAX_YAML_CHARS:,}"
        )
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506  (a SafeLoader)
    except ConfigError as e:
        key = _key_at(text, e.mark) if hasattr(e, "mark") else ""
        raise ConfigError(f"{where}: {key + ': ' if key else ''}{e}") from None
    except yaml.constructor.ConstructorError as e:
        raise ConfigError(
            f"{where}: YAML tags that construct objects are not allowed ({e.problem}); "
            "give plain values (numbers, strings, lists, mappings)"
        ) from None
    except yaml.YAMLError as e:
        detail = " ".join(str(e).split())[:300]
        raise ConfigError(f"{where}: not valid YAML ({detail})") from None
    except RecursionError:
        raise ConfigError(
            f"{where}: nested too deeply; a config nests at most {MAX_YAML_DEPTH} levels"
        ) from None
    _check_bounds(data, where)
    return data


def _check_bounds(data: Any, where: str) -> None:
    """Count the values ``data`` holds with aliases expanded (without expanding them),
    its depth and its strings' lengths; a ConfigError past the ``MAX_YAML_*`` bounds,
    naming the key where a depth or a string is past them."""
    stack, nodes = [(data, 1, "")], 0
    while stack:
        value, depth, path = stack.pop()
        nodes += 1
        at = f"{where}: {path}" if path else where
        if nodes > MAX_YAML_NODES:
            raise ConfigError(
                f"{where}: holds more than {MAX_YAML_NODES:,} values once its aliases (*name) "
                "are expanded; a config is far smaller (is it an alias bomb?)"
            )
        if depth > MAX_YAML_DEPTH:
            raise ConfigError(
                f"{at}: nested too deeply; a config nests at most {MAX_YAML_DEPTH} levels"
            )
        if isinstance(value, str) and len(value) > MAX_STRING_CHARS:
            raise ConfigError(
                f"{at}: a string of {len(value):,} characters ({_brief(value)}); config "
                f"values hold at most {MAX_STRING_CHARS:,}"
            )
        if isinstance(value, Mapping):
            stack.extend((v, depth + 1, _key_path(path, k)) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, depth + 1, f"{path}[{i}]") for i, v in enumerate(value))


def _key_at(text: str, mark: tuple[int, int]) -> str:
    """The dotted key of the value that starts at ``mark`` (line, column) in the YAML
    ``text`` ("" if it is no mapping's value); each node is visited once (aliases)."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return ""
    stack, seen = [(root, "")], set()
    while stack:
        node, path = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            if (node.start_mark.line, node.start_mark.column) == mark:
                return path
        elif isinstance(node, yaml.MappingNode):
            stack.extend((v, _key_path(path, k.value)) for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(node.value))
    return ""


def _key_path(path: str, key: Any) -> str:
    """The dotted path of ``key`` under ``path`` (a key that is no short string cut)."""
    name = str(key) if isinstance(key, str | int | float | bool) else _brief(key, 20)
    return f"{path}.{name[:40]}" if path else name[:40]


def _brief(value: Any, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters (a value may be huge)."""
    text = reprlib.repr(value) if not isinstance(value, str) else repr(value[: limit + 1])
    return text if len(text) <= limit else text[: limit - 3] + "..."


def to_dict(config: Any) -> dict:
    """The resolved config as plain data (tuples become lists), e.g. for config.yaml; a
    ``chosen_section`` sits under its tag's value."""
    out = {}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if dataclasses.is_dataclass(value):
            value = to_dict(value)
        elif isinstance(value, tuple):
            value = list(value)
        out[getattr(config, f.metadata["tag"]) if "tag" in f.metadata else f.name] = value
    return out


def describe(cls: type, prefix: str = "") -> list[tuple[str, str, str]]:
    """(key, default, doc) for every key, for documentation and ``--help``; a
    ``chosen_section`` gives every class it may choose, each under its name."""
    rows = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        if "tag" in f.metadata:
            for name, chosen in f.metadata["classes"]().items():
                rows += describe(chosen, f"{prefix}{name}.")
        elif dataclasses.is_dataclass(tp):
            rows += describe(tp, f"{prefix}{f.name}.")
        else:
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
            rows.append((f"{prefix}{f.name}", repr(default), f.metadata["doc"]))
    return rows


def describe_values(values: Mapping[str, Any]) -> str:
    """``ppo.learning_rate=0.001, ppo.gamma=0.99``"""
    return ", ".join(
        f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in values.items()
    )
