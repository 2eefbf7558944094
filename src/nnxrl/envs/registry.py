"""The env registry: the envs a config may name (gymnax ids, Craftax ids, Brax's
``brax:<name>`` with the brax extra, the other JAX suites' prefixed ids with theirs
(``envs/suites.py``), nnxrl's memory tasks, and those users register), checked
against the config's env section and built as a batched, self-resetting env with
episode statistics (and, if so configured, the previous action and reward in each
observation)."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable

from nnxrl.envs.base import EnvSpec, VecEnv
from nnxrl.envs.brax_env import PREFIX as BRAX_PREFIX
from nnxrl.envs.brax_env import brax_available, brax_ids, make_brax_env
from nnxrl.envs.craftax_env import CRAFTAX_IDS, make_craftax_env
from nnxrl.envs.episode_stats import with_episode_statistics
from nnxrl.envs.gymnax_env import gymnax_ids, make_gymnax_env, split_kwargs
from nnxrl.envs.memory_tasks import make_repeat_previous, make_stateless_cartpole
from nnxrl.envs.previous_step import check_flat_observations, with_previous_step
from nnxrl.envs.settings import EnvConfig
from nnxrl.envs.suites import (
    SUITES,
    check_listed,
    check_suite_config,
    make_suite_env,
    suite_ids,
    suite_of,
)
from nnxrl.hints import command, did_you_mean
from nnxrl.schema import ConfigError

# id -> factory(num_envs, **kwargs) -> VecEnv: nnxrl's memory tasks, and the envs
# users register
MEMORY_TASKS: dict[str, Callable[..., VecEnv]] = {
    "RepeatPrevious-v0": make_repeat_previous,
    "StatelessCartPole-v1": make_stateless_cartpole,
}
_REGISTERED: dict[str, Callable[..., VecEnv]] = {}


def register_env(env_id: str, factory: Callable[..., VecEnv]) -> None:
    """Make ``env_id`` usable in configs (``env.id``) and on the command line (import
    the registering module with ``nnxrl --plugin MODULE``). ``factory(num_envs,
    **env.kwargs)`` returns the batched env, e.g. with ``from_single``."""
    if env_id in CRAFTAX_IDS or env_id in gymnax_ids() or env_id in MEMORY_TASKS:
        raise ValueError(f"register_env: {env_id!r} is already a gymnax, Craftax or nnxrl id")
    if env_id.startswith(BRAX_PREFIX) or suite_of(env_id):
        raise ValueError(f"register_env: {env_id!r} has the prefix of an env suite's ids")
    _REGISTERED[env_id] = factory


def registered_env(env_id: str) -> Callable[..., VecEnv] | None:
    """The factory registered as ``env_id``, None when the id is not a registered one."""
    return _REGISTERED.get(env_id)


def known_env_ids(with_brax: bool = True) -> dict[str, list[str]]:
    """Known env ids by family (Brax's and the other suites' only ``with_brax``: listing
    them imports their packages, which takes seconds, so checking a gymnax id does not)."""
    families = {"gymnax": gymnax_ids(), "craftax": list(CRAFTAX_IDS)}
    if with_brax:
        families["brax"] = brax_ids()
        families.update({suite.extra: suite_ids(suite) for suite in SUITES})
    return {**families, "memory": list(MEMORY_TASKS), "registered": list(_REGISTERED)}


@dataclasses.dataclass(frozen=True)
class EnvFamily:
    """A family of env ids as ``nnxrl envs`` lists it."""

    name: str  # gymnax, craftax, brax, jumanji, xland, navix, pgx, memory, registered
    extra: str | None  # `uv sync --extra <extra>` installs it; None: always installed
    installed: bool
    ids: list[str]  # its ids as env.id takes them ([] when not installed)


def env_families() -> list[EnvFamily]:
    """Every family of env ids, with the extra it needs and whether it is installed
    (listing brax's and the suites' ids imports them: seconds)."""
    brax = brax_available()
    return [
        EnvFamily("gymnax", None, True, gymnax_ids()),
        EnvFamily("craftax", None, True, list(CRAFTAX_IDS)),
        EnvFamily("brax", "brax", brax, brax_ids()),
        *(EnvFamily(s.extra, s.extra, s.available(), suite_ids(s)) for s in SUITES),
        EnvFamily("memory", None, True, list(MEMORY_TASKS)),
        EnvFamily("registered", None, True, list(_REGISTERED)),
    ]


def check_env_config(env: EnvConfig) -> None:
    """Raise ConfigError for an unknown id or an option the env's family lacks."""
    check_id_and_kwargs(env)
    if env.previous_action_reward:  # the observations' shape, from a one-env batch
        check_flat_observations(env_spec(dataclasses.replace(env, previous_action_reward=False)))


def check_id_and_kwargs(env: EnvConfig) -> None:
    families = known_env_ids(with_brax=False)
    if env.id in _REGISTERED or env.id in MEMORY_TASKS:
        if env.reset_ratio != 1:
            raise ConfigError(f"env.reset_ratio: {env.reset_ratio} is for Craftax envs only")
        check_factory_kwargs(env, _REGISTERED.get(env.id) or MEMORY_TASKS[env.id])
        if env.id in MEMORY_TASKS:  # building one checks the values (no compile)
            built_from_kwargs(env, MEMORY_TASKS[env.id], num_envs=1)
        return
    if env.id in families["craftax"]:
        if env.kwargs:
            raise ConfigError(f"env.kwargs: Craftax envs take no kwargs, got {env.kwargs}")
        return
    if env.id.startswith(BRAX_PREFIX):
        check_brax_config(env, brax_ids())
        return
    if suite_of(env.id):
        check_suite_config(suite_of(env.id), env)
        return
    if env.id in families["gymnax"]:
        if env.reset_ratio != 1:
            raise ConfigError(
                f"env.reset_ratio: {env.reset_ratio} is for Craftax envs only; "
                f"{env.id} resets itself, so it must be 1"
            )
        try:
            split_kwargs(env.id, env.kwargs)
        except ValueError as e:
            raise ConfigError(str(e)) from None
        return
    every = [i for ids in known_env_ids().values() for i in ids]  # Brax's and the suites' too
    close = did_you_mean(env.id, every, n=3)
    raise ConfigError(
        f"env.id: unknown environment {env.id!r}{'; ' + close if close else ''} "
        f"(`{command('envs')}` lists the ids of every suite)"
    )


def check_factory_kwargs(env: EnvConfig, factory: Callable[..., VecEnv]) -> None:
    """env.kwargs must be keyword arguments the env's factory takes (after num_envs)."""
    parameters = list(inspect.signature(factory).parameters.values())[1:]
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return
    allowed = [p.name for p in parameters]
    unknown = sorted(set(env.kwargs) - set(allowed))
    if unknown:
        raise ConfigError(
            f"env.kwargs: {env.id} takes no {', '.join(unknown)}; it takes "
            f"{', '.join(allowed) or 'no kwargs'}"
        )


def check_brax_config(env: EnvConfig, ids: list[str]) -> None:
    if not brax_available():
        raise ConfigError(
            f"env.id: {env.id!r} needs the brax package, an optional extra: install it with "
            "`uv sync --extra brax`"
        )
    check_listed(env, "Brax", ids, "brax")
    backend = env.kwargs.get("backend", "spring")
    if backend not in ("spring", "positional", "generalized", "mjx"):
        raise ConfigError(
            f"env.kwargs.backend: {backend!r} is not a Brax pipeline; choose spring, "
            "positional, generalized or mjx"
        )
    length = env.kwargs.get("episode_length", 1000)
    if not isinstance(length, int) or isinstance(length, bool) or length < 1:
        raise ConfigError(f"env.kwargs.episode_length: expected a positive integer, got {length!r}")


def is_continuous(env: EnvConfig) -> bool:
    """Whether the env ``env`` names takes continuous actions (without building its
    batch: gymnax's action space; Craftax never; a registered env by its spec)."""
    if env.id in _REGISTERED or env.id in MEMORY_TASKS:
        return env_spec(env).continuous
    if env.id in CRAFTAX_IDS:
        return False
    if env.id.startswith(BRAX_PREFIX):
        return True
    if suite_of(env.id):
        return False
    from nnxrl.envs.gymnax_env import action_bounds, import_gymnax

    gymnax = import_gymnax()
    ctor_kwargs, _ = split_kwargs(env.id, env.kwargs)
    made, params = gymnax.make(env.id, **ctor_kwargs)
    return bool(action_bounds(made.action_space(params))[0])


def env_spec(env: EnvConfig) -> EnvSpec:
    """The spec (observation shape, actions, achievements) of the env ``env`` names."""
    return make_env(dataclasses.replace(env, num_envs=1, reset_ratio=1)).spec


def make_env(env: EnvConfig) -> VecEnv:
    """The batched env (with episode statistics) that ``env`` describes."""
    check_env_config(env)
    if env.id in _REGISTERED or env.id in MEMORY_TASKS:
        factory = _REGISTERED.get(env.id) or MEMORY_TASKS[env.id]
        vec = built_from_kwargs(env, factory, env.num_envs)
    elif env.id in CRAFTAX_IDS:
        vec = make_craftax_env(env.id, env.num_envs, env.reset_ratio)
    elif env.id.startswith(BRAX_PREFIX):
        vec = make_brax_env(env.id, env.num_envs, **env.kwargs)
    elif suite_of(env.id):
        vec = make_suite_env(suite_of(env.id), env, env.num_envs)
    else:
        vec = make_gymnax_env(env.id, env.num_envs, **env.kwargs)
    if env.previous_action_reward:
        vec = with_previous_step(vec)
    return with_episode_statistics(vec)


def built_from_kwargs(env: EnvConfig, factory: Callable[..., VecEnv], num_envs: int) -> VecEnv:
    """``factory(num_envs, **env.kwargs)``; the ValueError of a factory that checks its
    kwargs' values becomes a ConfigError naming env.kwargs."""
    try:
        return factory(num_envs, **env.kwargs)
    except ValueError as e:
        raise ConfigError(f"env.kwargs: {e}") from None
