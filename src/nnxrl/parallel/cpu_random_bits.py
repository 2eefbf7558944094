"""JAX's random bits on CPU computed without a loop, bit for bit the same.

Every ``jax.random`` call hashes counters with Threefry-2x32: 20 rounds of adds,
rotations and xors, with the key injected after every 4. On GPU and TPU JAX lowers
the 20 rounds written out; on CPU it lowers them as a ``fori_loop`` of 5 steps (to keep
its programs small). XLA's CPU runtime then runs each step as a handful of small
operations, and copies the loop's carry (the two words, the three keys, the rotation
tables) every step. In a training update that draws a little randomness many times
(an epsilon-greedy action per env step, a replay sample per gradient step) those
loops are a large share of what runs: DQN CartPole's update ran 3,750 XLA
operations, 1,960 of them copies, in 26 loops; with the rounds written out 1,250, 160
of them copies, in 1 loop (``docs/performance.md``: the profile, and what each run
gains: CartPole PPO 1.09x, Craftax about nothing).

``unroll_threefry_on_cpu`` registers, for the CPU, the lowering JAX itself uses on
GPU and TPU. The hash is the same sequence of integer operations either way, so
every random number, and every run's records, stay the same
(``tests/test_devices.py`` checks the bits and that the loop is gone). JAX exposes
no public switch for this, so the registration reads JAX's private module; where a
JAX release has moved those names, nothing is changed and JAX's own lowering runs.
"""

from __future__ import annotations

_done = False


def unroll_threefry_on_cpu() -> bool:
    """Lower Threefry-2x32 on CPU as on GPU (its 20 rounds written out, no loop), for
    programs lowered from now on. True once registered, False where this JAX has no
    such names (its rolled lowering then stays)."""
    global _done
    if _done:
        return True
    try:
        from jax._src.interpreters import mlir
        from jax._src.random import threefry2x32

        rule = threefry2x32._threefry2x32_lowering_rule  # the unrolled one (GPU, TPU)
        primitive = threefry2x32.threefry2x32_p
    except (ImportError, AttributeError):
        return False
    mlir.register_lowering(primitive, rule, platform="cpu")
    _done = True
    return True
