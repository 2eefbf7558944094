"""Will a run fit? XLA's own memory analysis of the compiled programs against the
memory the devices have, checked before the first state is made.

Compiling costs seconds whatever the sizes, so a config that cannot fit (a width of
100,000, 100,000 seeds, a million envs) is refused with the estimate and the keys
that set it, instead of failing with an out-of-memory traceback minutes later. The
estimate is XLA's per device: the arguments and outputs of a program (the run state,
less what is donated) plus its temporary buffers (the rollout, activations,
gradients). On CPU every device shares the host's memory, so the need of all local
devices is set against what the host has available.
"""

from __future__ import annotations

import math
import os
from typing import Any

import jax
import numpy as np

from nnxrl import config as config_lib
from nnxrl.config import population

GIB = 2**30


def check_fits(config: config_lib.Config, needs: dict[str, int | None]) -> None:
    """A ConfigError when the largest of the programs (name -> its bytes,
    ``store/saved_programs.py: program_bytes``, None where the backend gives no
    analysis) needs more memory than the devices have (see the module docstring)."""
    needs = {name: need for name, need in needs.items() if need is not None}
    if not needs:
        return  # this backend gives no analysis
    name, per_device = max(needs.items(), key=lambda item: item[1])
    short = shortfall(per_device)
    if short is None:
        return
    need, have, where = short
    algo = config.algo
    raise config_lib.ConfigError(
        f"this config needs about {need / GIB:,.1f} GiB ({name}, as XLA compiled it) but "
        f"{where} has {have / GIB:,.1f} GiB available; lower num_seeds ({config.num_seeds}"
        f"{' x settings' if config.is_sweep else ''}), env.num_envs ({config.env.num_envs}), "
        f"{algo}.num_steps ({config.algo_config.num_steps}) or network.width "
        f"({config.network.width}), or train on a device with more memory"
    )


def check_state_fits(config: config_lib.Config, state: Any) -> None:
    """Before compiling: a ConfigError when the run state of every member, whose
    shapes ``state`` holds (init lowered), cannot fit in the devices' memory; its
    largest part is named, an off-policy algorithm's replay buffer with the key that
    sizes it. (``check_fits`` then sets XLA's count, temporaries included, against it.)"""
    parts = {name: tree_bytes(getattr(state, name)) for name in state.__dataclass_fields__}
    total = sum(parts.values())
    short = shortfall(total // len(jax.local_devices()))  # the state is split over them
    if short is None:
        return
    _, have, where = short
    name, largest = max(parts.items(), key=lambda item: item[1])
    what = "the run state's " + ("replay buffer and target network" if name == "memory" else name)
    raise config_lib.ConfigError(
        f"the run state alone needs about {total / GIB:,.1f} GiB, before anything is "
        f"compiled ({what}: {largest / GIB:,.1f} GiB over {population.num_members(config)} "
        f"member(s)), but {where} has {have / GIB:,.1f} GiB available; lower "
        f"{sizing_key(config, name)}num_seeds ({config.num_seeds}) or env.num_envs "
        f"({config.env.num_envs}), or train on a device with more memory"
    )


def sizing_key(config: config_lib.Config, part: str) -> str:
    """The key that sizes a part of the run state, as 'key (value), ' ('' if none)."""
    sizes = getattr(config.algo_config, "buffer_size", None)
    if part == "memory" and sizes:
        return f"{config.algo}.buffer_size ({sizes:,}), "
    if part in ("params", "opt_state"):
        return f"network.width ({config.network.width}), "
    return ""


def shortfall(per_device: int) -> tuple[int, int, str] | None:
    """(need, available, where) when ``per_device`` bytes on every local device do not
    fit, else None (or where the memory is not known). The CPU devices share the
    host's memory, so there the need is every device's."""
    devices = jax.local_devices()
    have, where = available_bytes(devices[0])
    need = per_device * len(devices) if devices[0].platform == "cpu" else per_device
    if have is None or need <= have:
        return None
    return need, have, where


def tree_bytes(tree: Any) -> int:
    """The bytes of a pytree of arrays or shapes (``.shape``, ``.dtype`` leaves)."""
    return sum(math.prod(x.shape) * item_bytes(x.dtype) for x in jax.tree.leaves(tree))


def item_bytes(dtype: Any) -> int:
    """An element's bytes; a PRNG key's (an extended dtype) are its two uint32 words."""
    try:
        return np.dtype(dtype).itemsize
    except TypeError:
        return 8


def available_bytes(device: Any) -> tuple[int | None, str]:
    """(bytes available, what in words): a GPU's limit, or the host's free memory."""
    stats = None
    try:
        stats = device.memory_stats()
    except Exception:
        pass
    if stats and "bytes_limit" in stats:
        free = stats["bytes_limit"] - stats.get("bytes_in_use", 0)
        return free, f"{device.device_kind} {device.id}"
    return host_available_bytes(), "this machine"


def host_available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (Linux), else the physical memory, else None."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
