"""A recurrent actor-critic: embedding -> memory core -> actor and critic heads.

As in the Craftax baselines' PPO-RNN, actor and critic share the embedding and the
core (the GRU here; ``lstm.py``, ``min_gru.py``); each has its own MLP head. The
hidden state is reset to zeros wherever an episode starts, inside the scan over
time, so one sequence may hold several episodes and the outputs after a reset equal
those of a fresh sequence.

A core is ``make_core(in_features, hidden_size, rngs)``, a module called as
``core(state [B, S], x [T, B, D], start [T, B]) -> (last state [B, S], outputs
[T, B, hidden_size])`` with ``state_size`` S.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from nnxrl.networks.distributions import Categorical
from nnxrl.networks.initializers import orthogonal
from nnxrl.networks.policy_head import PolicyHead
from nnxrl.networks.torso import ACTIVATIONS, MLP, Encoder, orthogonal_linear


class GRU(nnx.Module):
    """Gated recurrent unit (Cho et al. 2014) with resets, scanned over time:

        r = sigmoid(W_r x + U_r h + b_r),   z = sigmoid(W_z x + U_z h + b_z)
        n = tanh(W_n x + b_n + r * (U_n h))
        h' = (1 - z) * n + z * h,            h := 0 first where the step starts an episode

    W x for all steps is one matmul before the scan; only U h runs step by step.
    """

    def __init__(self, in_features: int, hidden_size: int, rngs: nnx.Rngs):
        self.input = orthogonal_linear(in_features, 3 * hidden_size, 1.0, rngs)
        self.recurrent_kernel = nnx.Param(
            orthogonal(1.0)(rngs.params(), (hidden_size, 3 * hidden_size))
        )
        self.hidden_size = hidden_size
        self.state_size = hidden_size

    def __call__(
        self, hidden: jax.Array, x: jax.Array, start: jax.Array
    ) -> tuple[jax.Array, jax.Array]:
        """hidden [B, H], x [T, B, D], start [T, B] -> (last hidden [B, H], outputs [T, B, H])."""
        projected = self.input(x)
        u = self.recurrent_kernel[...]

        def step(h, inputs):
            x_t, start_t = inputs
            h = jnp.where(start_t[:, None], 0.0, h)
            xr, xz, xn = jnp.split(x_t, 3, axis=-1)
            hr, hz, hn = jnp.split(h @ u, 3, axis=-1)
            r = jax.nn.sigmoid(xr + hr)
            z = jax.nn.sigmoid(xz + hz)
            n = jnp.tanh(xn + r * hn)
            h = (1.0 - z) * n + z * h
            return h, h

        return jax.lax.scan(step, hidden, (projected, start))


class ActsFromCore:
    """What a model with a memory ``core`` acts from while its parameters are fixed
    (a rollout, an evaluation): the core's ``acting_state`` when it has one (what it
    caches meanwhile: the Transformer-XL's keys and values), else the hidden state;
    ``carried_state`` gives back the state kept between rollouts."""

    def acting_state(self, hidden: jax.Array) -> jax.Array:
        prepare = getattr(self.core, "acting_state", None)
        return hidden if prepare is None else prepare(hidden)

    def carried_state(self, hidden: jax.Array) -> jax.Array:
        drop = getattr(self.core, "carried_state", None)
        return hidden if drop is None else drop(hidden)


class RecurrentActorCritic(ActsFromCore, nnx.Module):
    """pi(a | history) and V(history) [..., num_values] through a shared memory core
    (``make_core``: the GRU unless given)."""

    def __init__(
        self,
        obs_shape: Sequence[int],
        num_actions: int,
        num_layers: int,
        width: int,
        activation: str,
        conv_features: Sequence[int],
        rngs: nnx.Rngs,
        num_values: int = 1,
        layer_norm: bool = False,
        head: PolicyHead | None = None,
        make_core: Callable[[int, int, nnx.Rngs], nnx.Module] = GRU,
    ):
        self.encoder = Encoder(obs_shape, conv_features, activation, rngs)
        self.embed = orthogonal_linear(self.encoder.out_features, width, np.sqrt(2), rngs)
        self.core = make_core(width, width, rngs)
        self.policy = head or PolicyHead(num_actions, rngs)  # Categorical unless given
        outputs = self.policy.outputs
        self.actor = MLP(width, outputs, num_layers, width, activation, 0.01, rngs, layer_norm)
        self.critic = MLP(width, num_values, num_layers, width, activation, 1.0, rngs, layer_norm)
        self.activation = ACTIVATIONS[activation]
        self.hidden_size = self.core.state_size

    def initial_hidden(self, batch_size: int) -> jax.Array:
        return jnp.zeros((batch_size, self.hidden_size), jnp.float32)

    def unroll(
        self, hidden: jax.Array, obs: jax.Array, start: jax.Array
    ) -> tuple[Categorical, jax.Array]:
        """Whole sequences: hidden [B, S] the state before the first step, obs
        [T, B, ...], start [T, B] -> (Categorical over [T, B, A], value [T, B, K])."""
        x = self.activation(self.embed(self.encoder(obs)))
        _, h = self.core(hidden, x, start)
        return self.policy(self.actor(h)), self.critic(h)

    def step(
        self, hidden: jax.Array, obs: jax.Array, start: jax.Array
    ) -> tuple[jax.Array, Categorical, jax.Array]:
        """One step of B envs: hidden [B, S], obs [B, ...], start [B] ->
        (next hidden [B, S], Categorical over [B, A], value [B, K])."""
        x = self.activation(self.embed(self.encoder(obs[None])))
        hidden, h = self.core(hidden, x, start[None])
        return hidden, self.policy(self.actor(h[0])), self.critic(h[0])
