"""Action distributions over discrete actions: what a policy samples from.

Categorical (an actor's): p_i = softmax(logits)_i;  log p(a) = logits_a -
logsumexp(logits);  H = -sum_i p_i log p_i.  Shapes: logits [..., A], actions [...].

EpsilonGreedy (a Q-network's): with probability epsilon a uniformly random action,
otherwise argmax_a Q(s, a).  Shapes: values [..., A], actions [...].
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


class EpsilonGreedy(NamedTuple):
    values: jax.Array  # [..., A] action values
    epsilon: jax.Array | float  # probability of a uniformly random action

    def sample(self, key: jax.Array) -> jax.Array:
        """[...] int32: a uniform action with probability epsilon, else the greedy one."""
        explore_key, action_key = jax.random.split(key)
        shape = self.values.shape[:-1]
        explore = jax.random.uniform(explore_key, shape) < self.epsilon
        uniform = jax.random.randint(action_key, shape, 0, self.values.shape[-1], jnp.int32)
        return jnp.where(explore, uniform, self.mode())

    def mode(self) -> jax.Array:
        """[...] argmax_a Q(s, a) (greedy)."""
        return jnp.argmax(self.values, axis=-1).astype(jnp.int32)
