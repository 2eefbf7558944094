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


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_shown_where_someone_watches():
    from nnxrl.progress import attended

    assert attended(Terminal()) and not attended(io.StringIO())


def test_train_from_python_shows_the_clis_progress_when_asked_and_is_quiet_in_a_file(capsys):
    """nnxrl.train(config, progress=True): compiling, then the progress line with its
    ETA; by default, with stdout not a terminal (pytest's capture), nothing."""
    import nnxrl

    tiny = ["total_env_steps=4096", "env.num_envs=4", "ppo.num_steps=16", "network.width=16"]
    config = nnxrl.load_config("ppo-cartpole", [*tiny, "logging.print_every=8"])
    nnxrl.train(config)
    assert capsys.readouterr().out == ""
    nnxrl.train(config, progress=True)
    said = capsys.readouterr().out
    assert "nnxrl: compiling the programs" in said, said
    assert "steps/s all seeds  ETA " in said, said
