"""run/stop.py: SIGINT and SIGTERM become one stop request; the same signal delivered
twice counts once, a deliberate second one stops at once; handlers are restored."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from nnxrl.run import stop as stop_lib
from nnxrl.run.stop import StopRequest, graceful_stop


def test_request_without_a_signal():
    stop = StopRequest()
    assert not stop.requested
    stop.request()
    assert stop.requested and stop.signalled_at is None


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_signal_sets_the_flag_and_names_itself(signum, capsys):
    with graceful_stop() as stop:
        os.kill(os.getpid(), signum)
        assert stop.requested
    err = capsys.readouterr().err
    assert f"nnxrl: {signal.Signals(signum).name}: stopping after the current chunk" in err


def test_a_repeat_within_the_window_is_the_same_request():
    with graceful_stop() as stop:
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)  # uv's forwarded copy of the group's signal
        assert stop.requested


def test_a_second_stop_after_the_window_stops_at_once(monkeypatch):
    with graceful_stop() as stop:
        os.kill(os.getpid(), signal.SIGTERM)
        monkeypatch.setattr(stop_lib.time, "monotonic", lambda: stop.signalled_at + 2)
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)


def test_the_previous_handlers_are_restored():
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    with graceful_stop() as stop:
        assert signal.getsignal(signal.SIGTERM) == stop.handler
    assert {sig: signal.getsignal(sig) for sig in before} == before


def test_off_the_main_thread_signals_are_left_alone():
    before = signal.getsignal(signal.SIGINT)
    seen = {}

    def body():
        with graceful_stop() as stop:
            seen["handler"] = signal.getsignal(signal.SIGINT)
            stop.request()
            seen["requested"] = stop.requested

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    assert seen == {"handler": before, "requested": True}
