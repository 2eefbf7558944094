"""The run loop (nnxrl.run.loop) on a stand-in for the compiled programs: chunks are
dispatched until the run is done, a stop is taken between chunks with every update
recorded, the first non-finite update ends the run at the last good one, and an
``hp_schedule``'s changes end chunks and reach the next one's values."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from nnxrl import config as config_lib
from nnxrl.config import hp_schedule, schedule
from nnxrl.logging import make_logger, members_of
from nnxrl.logging.records import records_to_arrays
from nnxrl.run.loop import RunLoop
from nnxrl.run.programs import scheduled_hyperparams
from nnxrl.run.stop import StopRequest

# 20 updates of 4 envs x 32 steps, in chunks of 5, two seeds, nothing written
SMALL = [
    "fast_compile=true",
    "total_env_steps=2560",
    "ppo.num_steps=32",
    "num_seeds=2",
    "logging.backends=[]",
    "checkpoint.enabled=false",
]
CONFIG = config_lib.from_dict({}, [*SMALL, "logging.updates_per_chunk=5"])


@dataclasses.dataclass
class Programs:
    """What the loop asks of the compiled programs: ``chunk(n)(state, hp)``."""

    bad_update: int | None = None  # this update's values are NaN
    hp: float = 1.0
    lengths: list = dataclasses.field(default_factory=list)
    given: list = dataclasses.field(default_factory=list)  # the hp each chunk was given
    hyperparams_at: object = None  # update -> hp; None: self.hp throughout

    def __post_init__(self) -> None:
        if self.hyperparams_at is None:
            self.hyperparams_at = lambda update: self.hp

    def chunk(self, count: int):
        self.lengths.append(count)

        def run(state: np.ndarray, hp: float):
            self.given.append(hp)
            updates = state[0] + 1 + np.arange(count)  # the updates this chunk does
            loss = np.tile(updates.astype(np.float32), (2, 1))  # [seeds, updates]
            nonfinite = np.zeros_like(loss)
            if self.bad_update is not None and self.bad_update in updates:
                nonfinite[1, list(updates).index(self.bad_update)] = 1.0
            metrics = {"loss/total": loss, "nonfinite": nonfinite, "episode_count": 0 * loss}
            return state + count, metrics

        return run


def run_loop(programs: Programs, stop_after: int | None = None, config=CONFIG):
    logger = make_logger(config, None, console=False)
    loop = RunLoop(config, programs, logger, None, StopRequest(), 0, stop_after)
    outcome = loop.run(np.zeros(2, np.int64))
    logger.close("finished")
    return outcome, records_to_arrays(logger.memory.records, members_of(config)), loop


@pytest.mark.parametrize(
    "steps,expected",
    [(500_000, 16), (10**11, 1250), (2_500_000_000, 1563)],  # 976, 195M, 4.9M updates
)
def test_a_chunk_is_a_fiftieth_of_the_run_at_most_and_at_most_a_million_env_steps(steps, expected):
    """An endless budget (a soak, a run stopped by hand) keeps chunks short: progress,
    checkpoints and Ctrl-C come between chunks, which must not last hours."""
    config = config_lib.load("configs/ppo-cartpole.yaml", [f"total_env_steps={steps}"])
    per_chunk = schedule.updates_per_chunk(config)
    assert per_chunk == expected and schedule.num_updates(config) % per_chunk == 0
    assert per_chunk * schedule.batch_size(config) <= schedule.CHUNK_ENV_STEPS


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


def test_a_schedules_changes_reach_the_chunks_after_them_and_its_records():
    entries = "[{from_update: 3, ppo.learning_rate: 1e-3}, {from_update: 9, ppo.ent_coef: 0.1}]"
    config = config_lib.from_dict(
        {}, [*SMALL, "logging.updates_per_chunk=2", f"hp_schedule={entries}"]
    )
    layout = type("Layout", (), {"replicated": jax.devices()[0]})
    programs = Programs(hyperparams_at=scheduled_hyperparams(config, None, layout))
    outcome, history, _ = run_loop(programs, config=config)
    assert outcome.kind == "finished" and programs.lengths == [2] * 10
    base = CONFIG.ppo
    rates = [float(hp.learning_rate) for hp in programs.given]
    assert rates == pytest.approx([base.learning_rate] + [1e-3] * 9)
    ents = [float(hp.ent_coef) for hp in programs.given]
    assert ents == pytest.approx([base.ent_coef] * 4 + [0.1] * 6)
    want = [base.learning_rate] * 2 + [1e-3] * 18  # each update: the value it trained with
    np.testing.assert_allclose(history["hp/ppo.learning_rate"][1], want)
    np.testing.assert_allclose(history["hp/ppo.ent_coef"][0][6:10], [base.ent_coef] * 2 + [0.1] * 2)
    # a chunk of a run resumed at update 3 (another updates_per_chunk) ends before update 9
    ahead = [hp_schedule.updates_to_next_change(config.hp_schedule, d) for d in (3, 8, 9)]
    assert ahead == [5, None, None]
    with pytest.raises(config_lib.ConfigError, match=r"hp_schedule\[0\].*multiple of the 5"):
        config_lib.from_dict({}, [*SMALL, "logging.updates_per_chunk=5", f"hp_schedule={entries}"])


def test_a_stop_before_the_first_update_does_not_claim_a_checkpoint(tmp_path):
    from nnxrl.cli import stopped_message
    from nnxrl.errors import Stopped
    from nnxrl.hints import command
    from nnxrl.run.loop import Outcome
    from nnxrl.run.training import raise_if_cut_short

    stop = StopRequest()
    stop.request()  # as a Ctrl-C during compilation does: the loop runs no chunk
    with pytest.raises(Stopped) as stopped:
        raise_if_cut_short(Outcome("stopped", 0, None, 0.0), stop, tmp_path)
    assert not stopped.value.checkpointed
    said = stopped_message(stopped.value, None)
    assert said.startswith("stopped before the first update: nothing was trained or checkpointed")
    later = stopped_message(Stopped(4, tmp_path), stop_after=3)
    resume = command(f"train --resume {tmp_path}")
    assert later.startswith(f"stopped at update 4, checkpointed; continue with `{resume}`")
    assert "--stop-after 3 stops at the end of the chunk that reaches it" in later
