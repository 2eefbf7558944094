"""The heads a network may carry, registered like network kinds: a head names what
the network outputs (``builds``: the builders of ``register_network`` are keyed by
it) and how a trained policy acts from it (``acting``), and says so in words
(``describe``). Evaluation, render and export ask the head; nothing compares head
names. Shipped:

- ``actor_critic`` (PPO, A2C): the network's ``step`` gives (hidden, a distribution,
  values); a policy samples from the distribution among the legal actions (greedy:
  its mode);
- ``q`` (PQN, DQN): ``step`` gives (hidden, Q [B, K, A]); a policy acts
  epsilon-greedily on the streams' weighted Qs (``Policy.epsilon``, 0 by default:
  greedy);
- ``soft_actor_critic`` (SAC): an actor-critic's ``step`` (its distribution a
  tanh-squashed Gaussian), twin critics Q(s, a) and the entropy temperature
  (``soft_actor_critic.py``); feed-forward only.

A head of one's own may build the network of another (``builds="q"``) and act on it
its own way (``examples/custom_head.py``: Boltzmann exploration on a Q-network).
``acting(model, hidden, obs [B, ...], start [B], legal [B, A] | None, policy)`` returns
(hidden, a distribution with ``sample(key)`` and ``mode()``); ``describe(policy,
greedy)`` how it chooses actions. The shipped heads' functions are imported when
first used, so that a config is checked without JAX.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from nnxrl.lazy import imported
from nnxrl.schema import unknown_name

REGISTER = "register more with nnxrl.register_head in a file given to --plugin"


class Head(NamedTuple):
    """A registered head."""

    name: str
    builds: str  # the builders of register_network it uses (its own name, or another's)
    acting: Callable[..., tuple[Any, Any]]  # how a policy acts from it (module docstring)
    describe: Callable[[Any, bool], str]  # (policy, greedy) -> how it chooses, in words
    takes_epsilon: bool  # acts epsilon-greedily (``Policy.epsilon``, ``eval --epsilon``)
    q_values: bool = False  # its network outputs Q [B, K, A] (``network.dueling`` applies)


_HEADS: dict[str, Head] = {}


def register_head(
    name: str,
    acting: Callable[..., tuple[Any, Any]],
    *,
    builds: str | None = None,
    describe: Callable[[Any, bool], str] | None = None,
    takes_epsilon: bool = False,
    q_values: bool = False,
) -> None:
    """Make ``name`` a head an algorithm may carry (``OnPolicy.head``) and a policy
    may act from: its network built by the builders keyed ``builds`` (default: its
    own name), acting with ``acting``, described by ``describe`` (default: sampled, or
    greedy); ``takes_epsilon`` if it acts epsilon-greedily with ``Policy.epsilon``;
    ``q_values`` if its network outputs Q-values. Registering a name again replaces it."""
    _HEADS[name] = Head(name, builds or name, acting, describe or sampled, takes_epsilon, q_values)


def head(name: str) -> Head:
    """The registered head ``name``; a ConfigError naming the known ones if none."""
    if name not in _HEADS:
        raise unknown_name("head", name, _HEADS, REGISTER)
    return _HEADS[name]


def builds_q_network(name: str) -> bool:
    """Whether the network head ``name`` acts from is a Q-network (its own, or the
    one it ``builds``)."""
    entry = head(name)
    return entry.q_values or head(entry.builds).q_values


def known_heads() -> list[str]:
    return list(_HEADS)


def sampled(policy: Any, greedy: bool) -> str:
    """A policy that samples from its distribution, or takes its mode when greedy."""
    return "greedy" if greedy else "sampled"


def epsilon_greedy(policy: Any, greedy: bool) -> str:
    """A policy epsilon-greedy on its values (greedy at epsilon 0)."""
    if greedy or policy.epsilon == 0:
        return "greedy"
    return f"epsilon-greedy (epsilon={policy.epsilon:g})"


register_head("actor_critic", imported("nnxrl.networks.acting", "from_distribution"))
register_head(
    "soft_actor_critic", imported("nnxrl.networks.acting", "from_distribution")
)  # SAC's: acts as an actor-critic does, from its squashed Gaussian
register_head(
    "q",
    imported("nnxrl.networks.acting", "epsilon_greedy_on_q"),
    describe=epsilon_greedy,
    takes_epsilon=True,
    q_values=True,
)
