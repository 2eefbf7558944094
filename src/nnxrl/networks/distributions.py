"""A categorical distribution over discrete actions, from logits.

p_i = softmax(logits)_i;  log p(a) = logits_a - logsumexp(logits);
H = -sum_i p_i log p_i.  Shapes: logits [..., A], actions [...].
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp


class Categorical(NamedTuple):
    logits: jax.Array  # [..., A] unnormalised log-probabilities

    @property
    def log_probs(self) -> jax.Array:
        """[..., A] normalised log-probabilities."""
        return jax.nn.log_softmax(self.logits, axis=-1)

    def sample(self, key: jax.Array) -> jax.Array:
        """[...] int32 actions drawn with probability softmax(logits)."""
        return jax.random.categorical(key, self.logits, axis=-1).astype(jnp.int32)

    def mode(self) -> jax.Array:
        """[...] the most probable action (greedy)."""
        return jnp.argmax(self.logits, axis=-1).astype(jnp.int32)

    def log_prob(self, action: jax.Array) -> jax.Array:
        """[...] log p(action)."""
        return jnp.take_along_axis(self.log_probs, action[..., None].astype(jnp.int32), -1)[..., 0]

    def entropy(self) -> jax.Array:
        """[...] H = -sum_i p_i log p_i (terms with p_i = 0 contribute 0)."""
        log_p = self.log_probs
        return -jnp.sum(jnp.where(log_p > -jnp.inf, jnp.exp(log_p) * log_p, 0.0), axis=-1)
