"""SAC (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications"): twin
critics, target critics by Polyak averaging, a tanh-squashed Gaussian actor and
automatic entropy tuning, over batched envs with continuous actions.

SAC runs on the off-policy skeleton (``algos/off_policy.py``: the rollout, the
add-on, the replay buffer, the gradient steps, the target network) and supplies:
``plan`` (the streams' weights) -> ``act`` (a sample of the actor) -> ``sac_loss``
-> ``summary``. Its network is ``networks/soft_actor_critic.py``. The update-to-data
ratio is ``gradient_steps / (num_steps x num_envs)``.

The loss of one sampled batch (s, a, r, s') is the sum of three, each reaching only
its own parameters (the others enter through ``stop_gradient``), so one optimiser
step on the sum is the three updates at once:

    critics:  sum_i mean (Q_i(s, a) - y)^2 / 2,
              y = r + g (min_i Q'_i(s', a') - alpha log pi(a'|s')),  a' ~ pi(.|s')
    actor:    mean (alpha log pi(a~|s) - min_i Q_i(s, a~)),  a~ ~ pi(.|s) reparameterised
    alpha:    mean -alpha (log pi(a~|s) + H),  H = target_entropy_per_dim x dim(A)

with Q' the target critics, y an n-step target where ``n_step`` > 1
(``replay.n_step_targets``: no bootstrap after a termination, a time limit
bootstraps from its final observation), alpha = exp(log_alpha), and a~'s
log-probability the one the alpha loss reads (as in rejax). All three see the
parameters before the step; updating them in turn instead would let the critics'
target use the just-updated actor. With two reward streams (an add-on's
``value_head``) the critics have a row per stream, the entropy term enters the
extrinsic stream's target, and the actor maximises the streams' weighted sum.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from flax import nnx

from nnxrl.algos.hyperparams import hyperparams_type
from nnxrl.algos.intrinsic_streams import stream_gammas, stream_weights
from nnxrl.algos.off_policy import Memory, OffPolicy, make_off_policy
from nnxrl.algos.on_policy import Algorithm
from nnxrl.algos.replay import Stored, at_steps, bootstrap_steps, n_step_targets
from nnxrl.algos.settings import RunFacts, SACSettings
from nnxrl.envs import VecEnv
from nnxrl.types import RunState

# The traced coefficients: SACSettings' fields declared traced, then the reward
# streams' (algos/hyperparams.py).
Hyperparams = hyperparams_type(SACSettings)


class Plan(NamedTuple):
    weights: jax.Array  # [K] the reward streams' weights in the actor's objective


def plan(run_state: RunState, hp: Hyperparams, s: Any) -> Plan:
    """The streams' weights (fixed over the update)."""
    return Plan(stream_weights(hp, s.num_streams))


def act(
    model: Any,
    hidden: Any,
    obs: jax.Array,
    start: jax.Array,
    legal: Any,
    key: jax.Array,
    plan: Plan,
) -> tuple[Any, jax.Array, jax.Array, dict]:
    """A sample of pi(.|obs) within the env's bounds: (hidden, a [B, D], no values
    [B, 0]: nothing reads them, nothing more to keep)."""
    action = model.distribution(obs).sample(key)
    return hidden, action, jnp.zeros((obs.shape[0], 0)), {}


def sac_loss(
    params: Any, target: Any, sample: Stored, key: jax.Array, hp: Hyperparams, s: Any
) -> tuple[jax.Array, dict]:
    """The critics', the actor's and the temperature's losses on one batch, summed
    (module docstring)."""
    model, target_model = nnx.merge(s.graphdef, params), nnx.merge(s.graphdef, target)
    frozen = nnx.merge(s.graphdef, jax.lax.stop_gradient(params))
    actor_key, next_key = jax.random.split(key)
    alpha = jnp.exp(frozen.log_alpha[...])
    obs, action = sample.obs[:, 0], sample.action[:, 0]
    targets = soft_targets(frozen, target_model, sample, alpha, next_key, hp, s)
    q = model.q(obs, action)  # [2, N, K]
    critic = (0.5 * (q - jax.lax.stop_gradient(targets)) ** 2).mean(axis=1).sum(axis=(0, 1))
    new_action, log_prob = model.distribution(obs).sample_and_log_prob(actor_key)
    weights = stream_weights(hp, s.num_streams)
    q_new = (frozen.q(obs, new_action).min(axis=0) * weights).sum(axis=-1)  # [N]
    actor = (alpha * log_prob - q_new).mean()
    target_entropy = hp.target_entropy_per_dim * s.env.spec.action_dim
    entropy_gap = jax.lax.stop_gradient(log_prob + target_entropy)
    temperature = (-jnp.exp(model.log_alpha[...]) * entropy_gap).mean()
    metrics = {
        "loss/total": critic + actor + temperature,
        "loss/critic": critic,
        "loss/actor": actor,
        "loss/alpha": temperature,
        "stats/alpha": alpha,
        "stats/entropy": -log_prob.mean(),
        "stats/q_taken": q[0, :, 0].mean(),
    }
    return critic + actor + temperature, metrics


def soft_targets(
    model: Any,
    target_model: Any,
    sample: Stored,
    alpha: jax.Array,
    key: jax.Array,
    hp: Hyperparams,
    s: Any,
) -> jax.Array:
    """n-step soft targets [N, K]: each stream's bootstrap step's next observation
    (``replay.bootstrap_steps``) valued by the lesser target critic at a fresh action
    of the actor, less alpha times its log-probability in the extrinsic stream."""
    steps = bootstrap_steps(sample, s.episodic)  # [N, K]
    next_obs = at_steps(sample.next_obs, steps)  # [N, K, ...]
    next_action, next_log_prob = model.distribution(next_obs).sample_and_log_prob(key)
    next_q = target_model.q(next_obs, next_action).min(axis=0)  # [N, K, K]
    entropy = jnp.zeros(s.num_streams).at[0].set(1.0)  # the extrinsic stream's
    next_values = next_q - alpha * next_log_prob[..., None] * entropy
    next_values = jnp.diagonal(next_values, axis1=1, axis2=2)  # stream k's own
    gammas = stream_gammas(hp, s.num_streams)
    return n_step_targets(sample, steps, next_values, gammas, s.episodic)


def summary(trajectory: Any, memory: Memory, plan: Plan, s: Any) -> dict:
    """The gradient steps taken so far."""
    return {"stats/gradient_steps": memory.learned.astype(jnp.float32)}


SAC = OffPolicy(head="soft_actor_critic", plan=plan, act=act, loss=sac_loss, metrics=summary)


def make_sac(settings: SACSettings, env: VecEnv, run: RunFacts, **optional: Any) -> Algorithm:
    """SAC's init and update: its settings bound onto the off-policy skeleton with the
    env and the run's facts (``network=``, ``addon=``, ``streams=`` optional)."""
    return make_off_policy(SAC, settings, env, run, **optional)
