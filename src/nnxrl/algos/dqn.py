"""DQN (Mnih et al. 2015, "Human-level control through deep reinforcement
learning"), with double Q-learning (van Hasselt et al. 2016) and n-step returns
(Sutton 1988; as in Rainbow, Hessel et al. 2018), over batched envs.

DQN runs on the off-policy skeleton (``algos/off_policy.py``: the rollout, the
add-on, the replay buffer, the gradient steps, the target network) and supplies:
``plan`` and ``act`` (PQN's: epsilon-greedy among the legal actions, epsilon decaying
linearly over a fraction of the updates) -> ``dqn_loss`` -> ``summary``.

The loss, for a sampled run of n steps from s_0 with action a_0:

    G = sum_{i<=j} g^i r_i + g^(j+1) Q'(s'_j, a*),   a* = argmax_a Q(s'_j, a)  (double)
                                                     a* = argmax_a Q'(s'_j, a) (not)
    L = huber(Q(s_0, a_0) - G)  (or 0.5 (Q - G)^2)

where j is the first step whose episode ended, else n - 1, s'_j its next
observation (the final one where a time limit cut the episode), Q' the target
network, and no bootstrap follows a true termination (``replay.n_step_targets``).
The argmax runs over the legal actions of s'_j only. With two reward streams (an
add-on's ``value_head``) each stream has its row of Qs and its target, acting and
the argmax use their weighted sum (``networks/q_network.py``), as in PQN.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from nnxrl.algos.hyperparams import hyperparams_type
from nnxrl.algos.intrinsic_streams import stream_gammas, stream_weights
from nnxrl.algos.off_policy import Memory, OffPolicy, make_off_policy
from nnxrl.algos.on_policy import Algorithm
from nnxrl.algos.pqn import Plan, act, plan
from nnxrl.algos.replay import Stored, at_steps, bootstrap_steps, n_step_targets
from nnxrl.algos.settings import DQNSettings, RunFacts
from nnxrl.envs import VecEnv
from nnxrl.networks import acting_values
from nnxrl.networks.distributions import masked_argmax

# The traced coefficients: DQNSettings' fields declared traced, then the reward
# streams' (algos/hyperparams.py).
Hyperparams = hyperparams_type(DQNSettings)


def dqn_loss(
    params: Any, target: Any, sample: Stored, key: jax.Array, hp: Hyperparams, s: Any
) -> tuple[jax.Array, dict]:
    """The regression of Q(s_0, a_0) [N, K] onto the n-step double-Q targets [N, K],
    summed over the reward streams (``key`` unused: nothing is sampled)."""
    model, target_model = nnx.merge(s.graphdef, params), nnx.merge(s.graphdef, target)
    q = model(sample.obs[:, 0])  # [N, K, A]
    taken = take(q, sample.action[:, 0])  # [N, K]
    targets = jax.lax.stop_gradient(bootstrapped_targets(model, target_model, sample, hp, s))
    if s.settings.loss == "huber":
        per_item = optax.huber_loss(taken, targets, delta=hp.huber_delta)
    else:
        per_item = optax.l2_loss(taken, targets)
    per_stream = per_item.mean(axis=0)
    total = per_stream.sum()
    metrics = {"loss/total": total, "loss/td": per_stream[0], "stats/q_taken": taken[:, 0].mean()}
    if s.num_streams == 2:
        metrics["loss/td_intrinsic"] = per_stream[1]
    return total, metrics


def bootstrapped_targets(
    model: Any, target_model: Any, sample: Stored, hp: Hyperparams, s: Any
) -> jax.Array:
    """n-step targets [N, K]: each stream's bootstrap step's next observation
    (``replay.bootstrap_steps``) valued by the target network at the action the
    online (double) or the target network picks among the legal ones."""
    weights = stream_weights(hp, s.num_streams)
    steps = bootstrap_steps(sample, s.episodic)  # [N, K]
    next_obs = at_steps(sample.next_obs, steps)  # [N, K, ...]
    next_target = target_model(next_obs)  # [N, K, K, A]
    chooser = model(next_obs) if s.settings.double else next_target
    legal = None if isinstance(sample.next_legal, tuple) else at_steps(sample.next_legal, steps)
    best = masked_argmax(acting_values(chooser, weights), legal)  # [N, K]
    next_values = jnp.diagonal(take(next_target, best), axis1=1, axis2=2)  # stream k's own
    gammas = stream_gammas(hp, s.num_streams)
    return n_step_targets(sample, steps, next_values, gammas, s.episodic)


def take(q: jax.Array, action: jax.Array) -> jax.Array:
    """Q [..., K, A] at the actions [...] -> [..., K]."""
    index = jnp.broadcast_to(action[..., None, None], (*q.shape[:-1], 1))
    return jnp.take_along_axis(q, index, axis=-1)[..., 0]


def summary(trajectory: Any, memory: Memory, plan: Plan, s: Any) -> dict:
    """The exploration epsilon, the mean greedy value the rollout acted on and the
    gradient steps taken so far."""
    return {
        "stats/epsilon": plan.epsilon,
        "stats/q_greedy": trajectory.value[..., 0].mean(),
        "stats/gradient_steps": memory.learned.astype(jnp.float32),
    }


DQN = OffPolicy(head="q", plan=plan, act=act, loss=dqn_loss, metrics=summary)


def make_dqn(settings: DQNSettings, env: VecEnv, run: RunFacts, **optional: Any) -> Algorithm:
    """DQN's init and update: its settings bound onto the off-policy skeleton with the
    env and the run's facts (``network=``, ``addon=``, ``streams=`` optional)."""
    return make_off_policy(DQN, settings, env, run, **optional)
