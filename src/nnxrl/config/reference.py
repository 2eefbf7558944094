"""The config reference (``docs/config.md``), generated from the schema: every key
with its default and its documentation, section by section, the section of every
registered algorithm and the options of every registered add-on and network kind.
``uv run python -m nnxrl.config.reference > docs/config.md`` writes it; a test fails
when the committed file differs from what the schema generates."""

from __future__ import annotations

import dataclasses
import typing

from nnxrl import config as config_lib

HEADER = """# Configuration reference

Generated from the schema (`src/nnxrl/config/sections.py` and the settings classes
it holds) by `uv run python -m nnxrl.config.reference > docs/config.md`; do not edit by
hand. A YAML config maps onto these keys; `--set KEY=VALUE` overrides any of them
(dotted). Unknown keys, wrong types, out-of-range values and impossible combinations
are refused before anything compiles, naming the key, the value and what is allowed.
Keys marked *traced* enter the compiled program as values: a sweep varies them in
one program.
"""


def reference() -> str:
    """The whole reference as Markdown."""
    parts = [HEADER, _section("Run (top level)", config_lib.Config, "")]
    hints = typing.get_type_hints(config_lib.Config)
    for f in dataclasses.fields(config_lib.Config):
        if "tag" in f.metadata:
            for name, cls in f.metadata["classes"]().items():
                title = f"`{name}` (with `algo: {name}`)"
                parts.append(_section(title, cls, f"{name}.", doc=cls.__doc__))
        elif dataclasses.is_dataclass(hints[f.name]):
            cls = hints[f.name]
            parts.append(_section(f"`{f.name}`", cls, f"{f.name}.", f.metadata["doc"]))
            inner = typing.get_type_hints(cls)
            for g in dataclasses.fields(cls):  # a section within it: its own table
                if dataclasses.is_dataclass(inner[g.name]):
                    name = f"{f.name}.{g.name}"
                    parts.append(
                        _section(f"`{name}`", inner[g.name], f"{name}.", g.metadata["doc"])
                    )
    parts += _options_sections()
    return "\n".join(parts)


def _section(title: str, cls: type, prefix: str, doc: str | None = None) -> str:
    """A heading, the section's doc and a table of its keys."""
    rows = ["| key | default | meaning |", "|---|---|---|"]
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if "tag" in f.metadata or dataclasses.is_dataclass(hints[f.name]):
            continue  # the sections, each under its own heading
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        meaning = f.metadata["doc"] + (" *traced*" if f.metadata.get("traced") else "")
        rows.append(f"| `{prefix}{f.name}` | `{default!r}` | {_cell(meaning)} |")
    lines = [f"## {title}", ""]
    if doc:
        lines += [" ".join(doc.split()), ""]
    return "\n".join(lines + rows + [""])


def _options_sections() -> list[str]:
    """``intrinsic.options`` per add-on and ``network.options`` per network kind."""
    from nnxrl.intrinsic.base import _REGISTRY as addons
    from nnxrl.networks.registry import _KINDS as kinds

    parts = []
    for name, registration in addons.items():
        if dataclasses.fields(registration.options):
            title = f"`intrinsic.options` (with `intrinsic.addon: {name}`)"
            parts.append(_section(title, registration.options, "intrinsic.options."))
    for kind, entry in kinds.items():
        if dataclasses.fields(entry.options):
            title = f"`network.options` (with `network.kind: {kind}`)"
            parts.append(_section(title, entry.options, "network.options."))
    return parts


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


if __name__ == "__main__":
    print(reference(), end="")
