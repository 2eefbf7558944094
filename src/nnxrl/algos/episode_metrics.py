"""Fixed-shape episode metrics of a rollout, for every algorithm."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp


def episode_metrics(
    trajectory: Any, bonus: jax.Array, achievement_names: tuple[str, ...]
) -> dict[str, jax.Array]:
    """Means over the episodes that ended in the rollout (with their count, so the host
    can report null for none): return, length, any result the env reports per episode
    (``episode_<name>``, e.g. a game's highest tile) and, for Craftax, each
    achievement's success rate; and the mean extrinsic and intrinsic reward per step.
    ``trajectory`` has terminated, truncated, reward [T, B] and ``episode`` [T, B, ...]."""
    ended = jnp.logical_or(trajectory.terminated, trajectory.truncated).astype(jnp.float32)
    count = ended.sum()

    def episode_mean(x):
        weights = ended.reshape(ended.shape + (1,) * (x.ndim - 2))
        return (x * weights).sum(axis=(0, 1)) / jnp.maximum(count, 1.0)

    metrics = {
        "episode_count": count,
        "episode_return": episode_mean(trajectory.episode["return"]),
        "episode_length": episode_mean(trajectory.episode["length"]),
    }
    for name, value in trajectory.episode.items():  # a suite's own results (a score)
        if name not in ("return", "length", "achievements"):
            metrics[f"episode_{name}"] = episode_mean(value)
    if achievement_names:
        rates = episode_mean(trajectory.episode["achievements"])
        metrics.update({f"achievements/{n}": rates[i] for i, n in enumerate(achievement_names)})
    metrics["reward/extrinsic"] = trajectory.reward.mean()
    metrics["reward/intrinsic"] = bonus.mean()
    return metrics
