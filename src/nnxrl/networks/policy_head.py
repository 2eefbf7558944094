"""The last step of an actor: its MLP's outputs -> the distribution actions come from.

The env's action space decides the head: discrete actions get a Categorical over the
MLP's A outputs; continuous ones a diagonal Gaussian whose mean is the MLP's D outputs
and whose log-std is a learned vector of its own (``network.log_std:
state_independent``, the PPO default) or D more MLP outputs (``state_dependent``).
``network.squash`` picks how samples meet the env's bounds: ``clip`` (the env clips
the action when it steps; the log-probability is the unclipped sample's, the usual
PPO choice) or ``tanh`` (squashed into the bounds, with the change-of-variables
correction in the log-probability).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from nnxrl.envs.base import EnvSpec
from nnxrl.networks.distributions import Categorical, DiagGaussian, TanhGaussian

# a state-dependent log-std is clipped here: exp(-20) and exp(2) bound sigma
LOG_STD_RANGE = (-20.0, 2.0)


class PolicyHead(nnx.Module):
    """``outputs`` is what the actor MLP must produce; calling it on them gives the
    action distribution."""

    def __init__(
        self,
        num_actions: int,
        rngs: nnx.Rngs,
        *,
        low: tuple[float, ...] = (),
        high: tuple[float, ...] = (),
        log_std: str = "state_independent",
        squash: str = "clip",
        init_log_std: float = 0.0,
    ):
        """Discrete: ``num_actions``; continuous: ``low`` and ``high``, one bound per
        action dimension (``num_actions`` unused)."""
        continuous = bool(low)
        self.dim = len(low)
        self.squash = squash if continuous else None
        self.state_dependent = continuous and log_std == "state_dependent"
        if continuous and not self.state_dependent:
            self.log_std = nnx.Param(jnp.full((self.dim,), init_log_std, jnp.float32))
        self.init_log_std = init_log_std
        self.low, self.high = tuple(low), tuple(high)
        self.outputs = (2 * self.dim if self.state_dependent else self.dim) or num_actions

    @classmethod
    def for_env(cls, spec: EnvSpec, rngs: nnx.Rngs, **options) -> PolicyHead:
        """The head for ``spec``'s action space (``options``: the continuous ones)."""
        return cls(spec.num_actions, rngs, low=spec.action_low, high=spec.action_high, **options)

    def unit_action(self, action: jax.Array) -> jax.Array:
        """Continuous actions [..., D] in [low, high] -> [-1, 1] (a critic's input)."""
        low, high = jnp.asarray(self.low, jnp.float32), jnp.asarray(self.high, jnp.float32)
        return (action - (high + low) / 2) / ((high - low) / 2)

    def __call__(self, out: jax.Array) -> Categorical | DiagGaussian | TanhGaussian:
        """[..., outputs] -> the distribution over [...] actions."""
        if self.squash is None:
            return Categorical(out)
        mean = out[..., : self.dim]
        if self.state_dependent:
            log_std = jnp.clip(out[..., self.dim :] + self.init_log_std, *LOG_STD_RANGE)
        else:
            log_std = jnp.broadcast_to(self.log_std[...], mean.shape)
        if self.squash == "tanh":
            low = jnp.asarray(self.low, jnp.float32)
            return TanhGaussian(mean, log_std, low, jnp.asarray(self.high, jnp.float32))
        return DiagGaussian(mean, log_std)
