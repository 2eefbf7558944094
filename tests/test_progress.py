"""No silent waits: a long step says what it does at once, then how long it has
taken while it lasts, and stops saying so when it ends."""

from __future__ import annotations

import io
import time

from nnxrl.progress import waiting


def test_a_long_step_is_announced_then_reported_until_it_ends():
    out = io.StringIO()
    with waiting("compiling the programs", out, every=0.05):
        assert out.getvalue() == "nnxrl: compiling the programs...\n"  # before the work
        time.sleep(0.4)
    lines = out.getvalue().splitlines()
    assert len(lines) >= 2 and all(x.endswith(" s so far)") for x in lines[1:]), lines
    ended = len(lines)
    time.sleep(0.2)
    assert len(out.getvalue().splitlines()) == ended  # nothing after the block
