"""The run loop (nnxrl.run.loop) on a stand-in for the compiled programs: chunks are
dispatched until the run is done, a stop is taken between chunks with every update
recorded, and the first non-finite update ends the run at the last good one."""

from __future__ import annotations

import dataclasses

import numpy as np

from nnxrl import config as config_lib
from nnxrl.logging import make_logger, members_of
from nnxrl.logging.records import records_to_arrays
from nnxrl.run import schedule
from nnxrl.run.loop import RunLoop
from nnxrl.run.stop import StopRequest

# 20 updates of 4 envs x 32 steps, in chunks of 5, two seeds, nothing written
CONFIG = config_lib.from_dict(
    {},
    [
        "total_env_steps=2560",
        "ppo.num_steps=32",
        "num_seeds=2",
        "logging.updates_per_chunk=5",
        "logging.backends=[]",
        "checkpoint.enabled=false",
    ],
)


@dataclasses.dataclass
class Programs:
    """What the loop asks of the compiled programs: ``chunk(n)(state, hp)``."""

    bad_update: int | None = None  # this update's values are NaN
    hp: float = 1.0
    lengths: list = dataclasses.field(default_factory=list)

    def chunk(self, count: int):
        self.lengths.append(count)

        def run(state: np.ndarray, hp: float):
            updates = state[0] + 1 + np.arange(count)  # the updates this chunk does
            loss = np.tile(updates.astype(np.float32), (2, 1))  # [seeds, updates]
            nonfinite = np.zeros_like(loss)
            if self.bad_update is not None and self.bad_update in updates:
                nonfinite[1, list(updates).index(self.bad_update)] = 1.0
            metrics = {"loss/total": loss, "nonfinite": nonfinite, "episode_count": 0 * loss}
            return state + count, metrics

        return run


def run_loop(programs: Programs, stop_after: int | None = None):
    logger = make_logger(CONFIG, None, console=False)
    loop = RunLoop(CONFIG, programs, logger, None, StopRequest(), 0, stop_after)
    outcome = loop.run(np.zeros(2, np.int64))
    logger.close("finished")
    return outcome, records_to_arrays(logger.memory.records, members_of(CONFIG)), loop


def test_the_chunks_run_the_whole_run_and_every_update_is_recorded():
    programs = Programs()
    outcome, history, _ = run_loop(programs)
    assert (outcome.kind, outcome.update) == ("finished", 20) and schedule.num_updates(CONFIG) == 20
    assert programs.lengths == [5, 5, 5, 5]
    assert list(history["update"]) == list(range(1, 21))
    np.testing.assert_array_equal(history["loss/total"][1], np.arange(1, 21))


def test_a_stop_is_taken_between_chunks_with_every_update_recorded():
    outcome, history, _ = run_loop(Programs(), stop_after=7)
    assert (outcome.kind, outcome.update) == ("stopped", 10)  # the chunk in flight ends
    assert list(history["update"]) == list(range(1, 11))


def test_the_first_nonfinite_update_ends_the_run_at_the_last_good_one():
    outcome, history, loop = run_loop(Programs(bad_update=13))
    assert (outcome.kind, outcome.update) == ("nonfinite", 12)
    assert list(history["update"]) == list(range(1, 13))  # nothing from update 13 on
    assert "non-finite values at update 13, seed(s) [1]" in loop.failure
