"""Turning a chunk of device metrics into per-seed, per-update records (host side)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

# Episode means are undefined when no episode ended in an update: reported as None.
EPISODE_KEYS_PREFIXES = ("episode_return", "episode_length", "achievements/")


def chunk_to_records(
    metrics: Mapping[str, np.ndarray], first_update: int, batch_size: int, seed_offset: int = 0
) -> list[dict]:
    """metrics: name -> [S, L] arrays for S seeds and L updates starting at update
    ``first_update`` (1-based). Returns S * L records in update order, seeds inner."""
    arrays = {k: np.asarray(v) for k, v in metrics.items()}
    num_seeds, num_updates = arrays["episode_count"].shape
    records = []
    for j in range(num_updates):
        update = first_update + j
        for s in range(num_seeds):
            count = int(arrays["episode_count"][s, j])
            record = {"update": update, "env_steps": update * batch_size, "seed": seed_offset + s}
            for name, values in arrays.items():
                value = float(values[s, j])
                if name == "episode_count":
                    value = count
                elif (count == 0 and name.startswith(EPISODE_KEYS_PREFIXES)) or not math.isfinite(
                    value
                ):
                    value = None
                record[name] = value
            records.append(record)
    return records
