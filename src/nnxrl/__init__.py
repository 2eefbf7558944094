"""nnxrl: legible, fast reinforcement learning in JAX + Flax NNX.

The public Python API (docs/python-api.md); each name is imported when first read:

- configs: ``load_config(path, overrides)``, ``config_from_dict(data, overrides)``,
  ``Config``, ``ConfigError``;
- training: ``train(config, out_dir=None)`` -> ``RunResult`` (final params per seed,
  the metric history as arrays, the run directory if any); a sweep of several
  programs (``sweep.allow_recompile``): ``train_groups`` -> a RunResult per group;
  before it, ``prepare(config)`` (JAX started as the mesh says, the env, action space
  and add-on checked), ``fresh_run_dir(path)`` (a new run's directory, checked),
  ``dry_run(config)`` -> a ``DryRun`` per program (compiled, nothing trained);
  ``is_main_process()`` (print from one process of many), ``env_suites()``,
  ``mlflow_ui_instructions(run_dir)``;
- environments: ``make_env(config.env)``, ``register_env(id, factory)``,
  ``from_single(...)`` (your own single-env JAX functions as a batched env);
- add-ons: ``register_addon(name, Options, factory)`` (options declared with
  ``setting``), ``Addon``, ``AddonContext``, ``Experience``;
- networks: ``register_network(kind, Options, {head: build}, sequences)``
  (``nnxrl.networks.registry``); heads (what a network outputs, how a policy acts
  from it): ``register_head(name, acting, builds=, describe=)`` (``nnxrl.networks.heads``);
- algorithms: ``register_algorithm(name, Settings, algorithm, discrete_only=)``
  (``nnxrl.algos.registry``), where ``algorithm`` is the on-policy skeleton's pieces
  (``OnPolicy``, with settings subclassing ``OnPolicySettings``, the skeleton's
  rollout, epochs, minibatches and optimiser; ``actor_critic(loss)`` gives an
  actor-critic's, whose loss reads
  ``policy_and_value(params, minibatch, s)``: ``examples/custom_algorithm.py``) or
  a ``make`` of its own; ``make_on_policy(pieces, settings, env, run)`` builds one;
  the off-policy skeleton's: ``OffPolicy``, ``OffPolicySettings``,
  ``make_off_policy`` (DQN's and SAC's: ``make_dqn``, ``make_sac``, with
  ``DQNSettings``, ``SACSettings``);
- your own loop: ``make_algorithm(config, env, addon)`` gives ``init(key)`` and
  ``update`` (both jittable; ``init`` vmaps over keys) and ``hyperparams_from(config)``
  the traced coefficients of ``config.algo``; ``train_chunk(state, hp, update_fn=,
  num_updates=)`` scans updates with the non-finite guard; without a config, ``make_ppo(
  PPOSettings(...), env, RunFacts(num_updates))`` (or ``make_pqn``, with
  ``PQNSettings``; ``network=``, ``addon=``, ``streams=RewardStreams(...)`` optional)
  and ``ppo.hyperparams(settings)``;
- policies: ``load_policy(dir)``, ``policy_from_checkpoint(run_dir)``, ``policy_at(path,
  step=, setting=, epsilon=)`` (either), ``export_policy(run_dir, out)``, ``Policy.act``;
  ``evaluate(policy, episodes)`` -> ``Evaluation``, ``render(policy, seed, out, key)``
  (a GIF), ``plot(run_dirs, metrics, out)`` (learning curves with bootstrap bands);
- results: ``sweep_report(run_dir)`` (a sweep's settings ranked); ``compare(paths, by=,
  out=)`` -> ``Comparison`` (methods across seeds and envs: IQM, optimality gap,
  probability of improvement, with intervals).
"""

from typing import TYPE_CHECKING

import nnxrl.parallel.jax_variables  # noqa: F401  (first, before JAX: see the module)
from nnxrl.lazy import exports
from nnxrl.version import version as _installed_version

# Each public name and the module it comes from, imported when first read: so that
# ``import nnxrl`` and reading a config import neither JAX nor an env suite.
_EXPORTS = {
    "hyperparams_from": "nnxrl.run.algorithms",
    "make_algorithm": "nnxrl.run.algorithms",
    "make_ppo": "nnxrl.algos.ppo",
    "make_pqn": "nnxrl.algos.pqn",
    "make_dqn": "nnxrl.algos.dqn",
    "make_sac": "nnxrl.algos.sac",
    "OffPolicy": "nnxrl.algos.off_policy",
    "make_off_policy": "nnxrl.algos.off_policy",
    "OffPolicySettings": "nnxrl.algos.settings",
    "DQNSettings": "nnxrl.algos.settings",
    "SACSettings": "nnxrl.algos.settings",
    "register_algorithm": "nnxrl.algos.registry",
    "OnPolicy": "nnxrl.algos.on_policy",
    "make_on_policy": "nnxrl.algos.on_policy",
    "actor_critic": "nnxrl.algos.actor_critic",
    "policy_and_value": "nnxrl.algos.actor_critic",
    "OnPolicySettings": "nnxrl.algos.settings",
    "PPOSettings": "nnxrl.algos.settings",
    "PQNSettings": "nnxrl.algos.settings",
    "RewardStreams": "nnxrl.algos.settings",
    "RunFacts": "nnxrl.algos.settings",
    "Config": "nnxrl.config",
    "ConfigError": "nnxrl.errors",
    "config_from_dict": "nnxrl.config:from_dict",
    "load_config": "nnxrl.config:load",
    "use_cpu_devices": "nnxrl.parallel.devices",
    "is_main_process": "nnxrl.parallel.devices",
    "prepare": "nnxrl.run.training",
    "fresh_run_dir": "nnxrl.run.run_dir",
    "dry_run": "nnxrl.run.dry_run",
    "DryRun": "nnxrl.run.dry_run",
    "mlflow_ui_instructions": "nnxrl.logging.mlflow_tracker:ui_instructions",
    "env_suites": "nnxrl.envs.suites",
    "env_families": "nnxrl.envs.registry",
    "EnvSpec": "nnxrl.envs",
    "EnvStep": "nnxrl.envs",
    "VecEnv": "nnxrl.envs",
    "from_single": "nnxrl.envs",
    "make_env": "nnxrl.envs",
    "register_env": "nnxrl.envs",
    "Addon": "nnxrl.intrinsic",
    "AddonContext": "nnxrl.intrinsic",
    "Experience": "nnxrl.intrinsic",
    "addon_for": "nnxrl.intrinsic",
    "register_addon": "nnxrl.intrinsic:register",
    "register_network": "nnxrl.networks.registry",
    "register_head": "nnxrl.networks.heads",
    "Evaluation": "nnxrl.agent.evaluate",
    "evaluate": "nnxrl.agent.evaluate",
    "render": "nnxrl.agent.render:render_episode",
    "plot": "nnxrl.analysis.plots:plot_runs",
    "compare": "nnxrl.analysis.comparison",
    "Comparison": "nnxrl.analysis.comparison",
    "Policy": "nnxrl.agent.policy",
    "load_policy": "nnxrl.agent.policy",
    "policy_from_checkpoint": "nnxrl.agent.policy",
    "policy_at": "nnxrl.agent.policy",
    "export_policy": "nnxrl.agent.export",
    "sweep_report": "nnxrl.analysis.sweep_report:report",
    "setting": "nnxrl.schema",
    "RunResult": "nnxrl.run.training",
    "train": "nnxrl.run.training",
    "train_groups": "nnxrl.run.groups",
    "train_chunk": "nnxrl.run.chunk",
}
__getattr__ = exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names, for type checkers and editors
    from nnxrl.agent.evaluate import Evaluation, evaluate
    from nnxrl.agent.export import export_policy
    from nnxrl.agent.policy import Policy, load_policy, policy_at, policy_from_checkpoint
    from nnxrl.agent.render import render_episode as render
    from nnxrl.algos.actor_critic import actor_critic, policy_and_value
    from nnxrl.algos.dqn import make_dqn
    from nnxrl.algos.off_policy import OffPolicy, make_off_policy
    from nnxrl.algos.on_policy import OnPolicy, make_on_policy
    from nnxrl.algos.ppo import make_ppo
    from nnxrl.algos.pqn import make_pqn
    from nnxrl.algos.registry import register_algorithm
    from nnxrl.algos.sac import make_sac
    from nnxrl.algos.settings import (
        DQNSettings,
        OffPolicySettings,
        OnPolicySettings,
        PPOSettings,
        PQNSettings,
        RewardStreams,
        RunFacts,
        SACSettings,
    )
    from nnxrl.analysis.comparison import Comparison, compare
    from nnxrl.analysis.plots import plot_runs as plot
    from nnxrl.analysis.sweep_report import report as sweep_report
    from nnxrl.config import Config
    from nnxrl.config import from_dict as config_from_dict
    from nnxrl.config import load as load_config
    from nnxrl.envs import EnvSpec, EnvStep, VecEnv, from_single, make_env, register_env
    from nnxrl.envs.registry import env_families
    from nnxrl.envs.suites import env_suites
    from nnxrl.errors import ConfigError
    from nnxrl.intrinsic import Addon, AddonContext, Experience, addon_for
    from nnxrl.intrinsic import register as register_addon
    from nnxrl.logging.mlflow_tracker import ui_instructions as mlflow_ui_instructions
    from nnxrl.networks.heads import register_head
    from nnxrl.networks.registry import register_network
    from nnxrl.parallel.devices import is_main_process, use_cpu_devices
    from nnxrl.run.algorithms import hyperparams_from, make_algorithm
    from nnxrl.run.chunk import train_chunk
    from nnxrl.run.dry_run import DryRun, dry_run
    from nnxrl.run.groups import train_groups
    from nnxrl.run.run_dir import fresh_run_dir
    from nnxrl.run.training import RunResult, prepare, train
    from nnxrl.schema import setting


def __dir__() -> list[str]:
    return sorted(__all__)


__version__ = _installed_version()

__all__ = [
    "use_cpu_devices",
    "is_main_process",
    "prepare",
    "fresh_run_dir",
    "dry_run",
    "DryRun",
    "mlflow_ui_instructions",
    "env_families",
    "env_suites",
    "Addon",
    "AddonContext",
    "Config",
    "ConfigError",
    "EnvSpec",
    "EnvStep",
    "Experience",
    "OnPolicySettings",
    "OffPolicySettings",
    "DQNSettings",
    "SACSettings",
    "OffPolicy",
    "make_off_policy",
    "make_dqn",
    "make_sac",
    "PPOSettings",
    "PQNSettings",
    "RewardStreams",
    "RunFacts",
    "Evaluation",
    "Policy",
    "RunResult",
    "VecEnv",
    "__version__",
    "addon_for",
    "config_from_dict",
    "from_single",
    "hyperparams_from",
    "load_config",
    "load_policy",
    "make_algorithm",
    "make_env",
    "make_ppo",
    "make_on_policy",
    "OnPolicy",
    "actor_critic",
    "policy_and_value",
    "make_pqn",
    "evaluate",
    "plot",
    "compare",
    "Comparison",
    "policy_from_checkpoint",
    "policy_at",
    "export_policy",
    "sweep_report",
    "render",
    "register_addon",
    "register_algorithm",
    "register_env",
    "register_network",
    "register_head",
    "setting",
    "train",
    "train_chunk",
    "train_groups",
]
