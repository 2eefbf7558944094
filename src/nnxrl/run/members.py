"""One member's function applied to every member of a run (seeds, a sweep's settings).

A run's programs take and return every member's state stacked along a leading axis.
``over_members`` maps a function of one member over that axis: ``jax.vmap`` when there
are several, and, for a run of one member, the function itself on the member taken
out of the axis. The second case is not vmap's: with a batch axis of size 1, XLA's CPU
backend copies the transposed operand of each weight gradient (x^T g) before the
product instead of reading it in place (``benchmarks/craftax_suspects.py --variant "vmap of
one"``: Craftax-Symbolic PPO 13 % slower; the computation is the same).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import jax


def over_members(
    fn: Callable[..., Any], count: int, in_axes: Sequence[int | None], axis_name: str
) -> Callable[..., Any]:
    """``fn`` of one member's arguments -> a function of ``count`` members' (the axis
    ``in_axes`` names on each argument, None: shared), outputs stacked on axis 0.
    ``axis_name`` names the members' axis for collectives in ``fn`` when ``count`` > 1;
    with one member a collective over it is that member's own value, so ``fn`` must
    not use one then (``train_chunk``'s guard takes ``axis_name=None``)."""
    if count > 1:
        return jax.vmap(fn, in_axes=tuple(in_axes), axis_name=axis_name)

    def one_member(*args: Any) -> Any:
        taken = [
            a if axis is None else take_member(a) for a, axis in zip(args, in_axes, strict=True)
        ]
        return jax.tree.map(lambda x: x[None], fn(*taken))

    one_member.__name__ = one_member.__qualname__ = name_of(fn)  # the program's name in logs
    return one_member


def name_of(fn: Callable[..., Any]) -> str:
    """The name of ``fn``, or of the function a ``functools.partial`` binds."""
    while isinstance(fn, partial):
        fn = fn.func
    return getattr(fn, "__name__", "member")


def take_member(tree: Any) -> Any:
    """The only member of a stacked ``tree``: axis 0 (of size 1) removed from each leaf."""
    return jax.tree.map(lambda x: x[0], tree)
