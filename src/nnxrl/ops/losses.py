"""PPO loss terms (Schulman et al. 2017, arXiv:1707.06347). All inputs [N].

rho      = exp(log pi(a|s) - log pi_old(a|s))
L_policy = mean( max(-rho A, -clip(rho, 1-eps, 1+eps) A) )
L_value  = 0.5 * mean( max((V - R)^2, (V_old + clip(V - V_old, -eps_v, eps_v) - R)^2) )
           (or 0.5 * mean((V - R)^2) without value clipping)
L        = L_policy + c_v L_value - c_e mean(H)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def policy_loss(
    log_prob: jax.Array, old_log_prob: jax.Array, advantages: jax.Array, clip_eps: float
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Clipped surrogate. Returns (loss, approximate KL, clip fraction), all scalars.

    approx KL is the low-variance estimator mean((rho - 1) - log rho).
    """
    log_ratio = log_prob - old_log_prob
    ratio = jnp.exp(log_ratio)
    unclipped = ratio * advantages
    clipped = jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * advantages
    loss = -jnp.mean(jnp.minimum(unclipped, clipped))
    approx_kl = jnp.mean((ratio - 1.0) - log_ratio)
    clip_fraction = jnp.mean((jnp.abs(ratio - 1.0) > clip_eps).astype(jnp.float32))
    return loss, approx_kl, clip_fraction


def value_loss(
    values: jax.Array,
    old_values: jax.Array,
    targets: jax.Array,
    clip_eps: float | None,
) -> jax.Array:
    """0.5 * squared error, pessimistically clipped around old_values when clip_eps is set."""
    unclipped = jnp.square(values - targets)
    if clip_eps is None:
        return 0.5 * jnp.mean(unclipped)
    clipped_values = old_values + jnp.clip(values - old_values, -clip_eps, clip_eps)
    clipped = jnp.square(clipped_values - targets)
    return 0.5 * jnp.mean(jnp.maximum(unclipped, clipped))


def normalize(x: jax.Array, eps: float = 1e-8) -> jax.Array:
    """(x - mean) / (std + eps) over all elements."""
    return (x - x.mean()) / (x.std() + eps)
