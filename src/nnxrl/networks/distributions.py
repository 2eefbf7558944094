"""Action distributions: what a policy samples from.

Categorical (an actor's, discrete actions): p_i = softmax(logits)_i;  log p(a) =
logits_a - logsumexp(logits);  H = -sum_i p_i log p_i.  Shapes: logits [..., A],
actions [...].

EpsilonGreedy (a Q-network's): with probability epsilon a uniformly random action,
otherwise argmax_a Q(s, a).  Shapes: values [..., A], actions [...].

Action masks (an env's legal actions, ``legal`` [..., A] bool): ``Categorical.masked``
gives an illegal action the lowest finite logit, so p = 0 there and log p, H and their
gradients stay finite (an infinite logit would give 0 * inf in H's gradient);
``EpsilonGreedy`` with ``legal`` draws its random action uniformly among the legal
ones and its greedy one as argmax over them. Without a mask both are unchanged.

DiagGaussian (an actor's, continuous actions): a ~ N(mu, diag(sigma^2)), sigma =
exp(log_std);  log p(a) = -sum_d [ (a_d - mu_d)^2 / (2 sigma_d^2) + log sigma_d +
log(2 pi) / 2 ];  H = sum_d [ log sigma_d + (1 + log(2 pi)) / 2 ].  Shapes: mean and
log_std [..., D], actions [..., D].

TanhGaussian (continuous actions squashed into [low, high]): u ~ N(mu, sigma^2),
a = c + h tanh(u) with c = (high + low) / 2, h = (high - low) / 2;  log p(a) =
log N(u) - sum_d log(h_d (1 - tanh(u_d)^2)) (change of variables), with u recovered
as atanh((a - c) / h);  no closed-form entropy: ``entropy`` is the Gaussian's, the
usual stand-in for PPO's entropy bonus.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


class Categorical(NamedTuple):
    logits: jax.Array  # [..., A] unnormalised log-probabilities

    @property
    def log_probs(self) -> jax.Array:
        """[..., A] normalised log-probabilities."""
        return jax.nn.log_softmax(self.logits, axis=-1)

    def masked(self, legal: jax.Array | None) -> Categorical:
        """The distribution restricted to the ``legal`` actions [..., A] (None: all)."""
        if legal is None:
            return self
        return Categorical(jnp.where(legal, self.logits, jnp.finfo(self.logits.dtype).min))

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
    legal: jax.Array | None = None  # [..., A] bool: the actions allowed (None: all)

    def sample(self, key: jax.Array) -> jax.Array:
        """[...] int32: a uniform (legal) action with probability epsilon, else the
        greedy one."""
        explore_key, action_key = jax.random.split(key)
        shape = self.values.shape[:-1]
        explore = jax.random.uniform(explore_key, shape) < self.epsilon
        if self.legal is None:
            uniform = jax.random.randint(action_key, shape, 0, self.values.shape[-1], jnp.int32)
        else:
            flat = jnp.where(self.legal, 0.0, -jnp.inf)
            uniform = jax.random.categorical(action_key, flat, axis=-1).astype(jnp.int32)
        return jnp.where(explore, uniform, self.mode())

    def mode(self) -> jax.Array:
        """[...] argmax_a Q(s, a) over the legal actions (greedy)."""
        return masked_argmax(self.values, self.legal)


def restrict(dist, legal: jax.Array | None):
    """``dist`` over the ``legal`` actions only (None: ``dist`` itself, of any kind)."""
    return dist if legal is None else dist.masked(legal)


def masked_argmax(values: jax.Array, legal: jax.Array | None) -> jax.Array:
    """[..., A] -> [...] int32: argmax over the ``legal`` actions (None: all)."""
    if legal is not None:
        values = jnp.where(legal, values, -jnp.inf)
    return jnp.argmax(values, axis=-1).astype(jnp.int32)


LOG_2PI = float(np.log(2.0 * np.pi))


class DiagGaussian(NamedTuple):
    mean: jax.Array  # [..., D]
    log_std: jax.Array  # [..., D] (broadcast to mean's shape)

    def sample(self, key: jax.Array) -> jax.Array:
        """[..., D] mean + std * noise."""
        noise = jax.random.normal(key, self.mean.shape, self.mean.dtype)
        return self.mean + jnp.exp(self.log_std) * noise

    def mode(self) -> jax.Array:
        """[..., D] the mean (greedy)."""
        return self.mean

    def log_prob(self, action: jax.Array) -> jax.Array:
        """[...] log N(action; mean, diag(std^2))."""
        z = (action - self.mean) * jnp.exp(-self.log_std)
        return -jnp.sum(0.5 * z * z + self.log_std + 0.5 * LOG_2PI, axis=-1)

    def entropy(self) -> jax.Array:
        """[...] sum_d log std_d + (1 + log 2 pi) / 2."""
        log_std = jnp.broadcast_to(self.log_std, self.mean.shape)
        return jnp.sum(log_std + 0.5 * (1.0 + LOG_2PI), axis=-1)


class TanhGaussian(NamedTuple):
    mean: jax.Array  # [..., D] of the Gaussian before squashing
    log_std: jax.Array  # [..., D]
    low: jax.Array  # [D] the action bounds
    high: jax.Array  # [D]

    # atanh is clipped this far inside (-1, 1): a squashed float32 sample can round to
    # exactly +-1, whose pre-image is infinite
    EDGE = 1e-6

    @property
    def base(self) -> DiagGaussian:
        return DiagGaussian(self.mean, self.log_std)

    def squash(self, u: jax.Array) -> jax.Array:
        centre, half = (self.high + self.low) / 2, (self.high - self.low) / 2
        return centre + half * jnp.tanh(u)

    def sample(self, key: jax.Array) -> jax.Array:
        """[..., D] squashed Gaussian sample, inside [low, high]."""
        return self.squash(self.base.sample(key))

    def mode(self) -> jax.Array:
        """[..., D] the squashed mean (greedy)."""
        return self.squash(self.mean)

    def sample_and_log_prob(self, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        """A reparameterised sample [..., D] (differentiable in mean and log_std) and
        its log-probability [...], from u itself: no atanh of a rounded action."""
        u = self.base.sample(key)
        return self.squash(u), self.base.log_prob(u) - self.log_det(u)

    def log_prob(self, action: jax.Array) -> jax.Array:
        """[...] log N(u) - sum_d log(h_d (1 - tanh(u_d)^2)), u = atanh((a - c) / h)."""
        centre, half = (self.high + self.low) / 2, (self.high - self.low) / 2
        y = jnp.clip((action - centre) / half, -1.0 + self.EDGE, 1.0 - self.EDGE)
        u = jnp.arctanh(y)
        return self.base.log_prob(u) - self.log_det(u)

    def log_det(self, u: jax.Array) -> jax.Array:
        """[...] sum_d log(h_d (1 - tanh(u_d)^2)), the squashing's log-Jacobian, with
        log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u)), stable for large |u|."""
        half = (self.high - self.low) / 2
        per_dim = jnp.log(half) + 2.0 * (jnp.log(2.0) - u - jax.nn.softplus(-2.0 * u))
        return jnp.sum(per_dim, axis=-1)

    def entropy(self) -> jax.Array:
        """[...] the Gaussian's entropy before squashing (see the module docstring)."""
        return self.base.entropy()
