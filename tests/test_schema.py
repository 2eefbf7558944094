"""The schema machinery (nnxrl.schema) on small config classes of its own: fields
with docs and bounds, checked building with errors that name the key, a section
chosen by a tag (the algorithm's), the traced declaration, and the reference rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import pytest

from nnxrl import schema
from nnxrl.errors import ConfigError


@dataclass(frozen=True)
class Fast:
    steps: int = schema.setting(8, "Steps.", low=1)
    rate: float = schema.setting(0.1, "A rate.", low=0, low_open=True, traced=True)


@dataclass(frozen=True)
class Slow:
    depth: int = schema.setting(2, "Depth.", low=1, high=10)
    style: Literal["a", "b"] = schema.setting("a", "Style.")


CHOICES = {"fast": Fast, "slow": Slow}


@dataclass(frozen=True)
class Root:
    kind: str = schema.setting("fast", "Which section.")
    part: Any = schema.chosen_section("kind", lambda: CHOICES, "The chosen part.", "add more")
    tags: list = schema.setting(["x"], "Tags.", choices=("x", "y"))

    def __post_init__(self) -> None:
        schema.fill_chosen(self)


def test_the_tag_chooses_the_section_by_its_name():
    root = schema.build(Root, {"kind": "slow", "slow": {"depth": 3}})
    assert root.part == Slow(depth=3)
    assert schema.to_dict(root) == {
        "kind": "slow",
        "slow": {"depth": 3, "style": "a"},
        "tags": ["x"],
    }
    assert schema.build(Root, {}).part == Fast()  # the tag's default, the class's defaults
    assert Root(kind="slow").part == Slow()


@pytest.mark.parametrize(
    "data, message",
    [
        (
            {"kind": "slow", "fast": {"steps": 2}},
            "fast.steps: a section for kind 'fast', but kind is 'slow'",
        ),
        (
            {"kind": "slwo"},
            "kind: 'slwo' is not registered; did you mean slow? Known: ['fast', 'slow']; add more",
        ),
        ({"fast": {"stpes": 2}}, "unknown key fast.stpes; did you mean fast.steps?"),
        ({"steps": 2}, "unknown key steps; it is a key of a section: did you mean fast.steps?"),
        ({"fast": {"steps": 0}}, "fast.steps: 0 is out of range; it must be >= 1"),
        ({"fast": {"rate": 0}}, "fast.rate: 0.0 is out of range; it must be > 0"),
        (
            {"kind": "slow", "slow": {"style": "c"}},
            "slow.style: 'c' is not allowed; choose one of ['a', 'b']",
        ),
        ({"tags": ["z"]}, "tags: ['z'] is not allowed; give a list of any of ['x', 'y']"),
        ({"fast": 3}, "fast is a section (a mapping of keys), got 3"),
        ({"part": {}}, "unknown key part"),
    ],
)
def test_bad_data_names_the_key(data, message):
    with pytest.raises(ConfigError) as raised:
        schema.build(Root, data)
    assert message in str(raised.value)


def test_a_section_of_the_wrong_class_is_refused():
    with pytest.raises(ConfigError, match="part: a Fast, but kind is 'slow'"):
        Root(kind="slow", part=Fast())


def test_traced_fields_and_the_rows_of_every_choice():
    assert schema.traced_fields(Fast) == ("rate",)
    assert schema.traced_fields(Slow) == ()
    keys = [key for key, _, _ in schema.describe(Root)]
    assert keys == ["kind", "fast.steps", "fast.rate", "slow.depth", "slow.style", "tags"]
