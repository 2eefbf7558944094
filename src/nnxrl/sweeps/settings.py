"""The ``sweep.pbt`` section: population-based training's exploit and explore rules
(data only, read and checked with the config; ``pbt.py`` runs them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from nnxrl.schema import setting


@dataclass(frozen=True)
class PBTConfig:
    """``sweep.pbt``: the population's exploit and explore rules."""

    interval: int = setting(
        0,
        "Updates between exploit-and-explore steps (0: no PBT, a plain sweep). The "
        "sweep's settings are the initial population.",
        low=0,
    )
    exploit: Literal["truncation", "tournament"] = setting(
        "truncation",
        "truncation: the worst fraction of each seed's population copies a random member "
        "of its best fraction; tournament: each member meets a random other and copies it "
        "if that one is fitter.",
    )
    fraction: float = setting(
        0.25, "truncation: the share of the population copied and copied from.", low=0, high=0.5
    )
    explore: Literal["perturb", "resample"] = setting(
        "perturb",
        "perturb: each explored value is the donor's times one of factors; resample: with "
        "probability resample_probability a fresh draw from the key's sweep values "
        "(grid) or distribution (random), else perturbed.",
    )
    factors: tuple[float, ...] = setting(
        (0.8, 1.25), "perturb: the multipliers drawn from (each > 0).", low=0, low_open=True
    )
    resample_probability: float = setting(
        0.25, "resample: the chance of a fresh draw.", low=0, high=1
    )
    bounds: dict = setting(
        {},
        "Per swept key, [low, high]: explored values are clipped into them (default: "
        "the key's own limits, else unbounded).",
    )
