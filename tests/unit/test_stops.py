"""Ctrl-C and SIGTERM stop a command where stopping is safe (verl_qwen35/run/stops.py), with real signals sent
to this process: a signal that lands inside Hydra's composition waits for it, one inside a wait on a child
process cuts the wait, and the handlers are the caller's again afterwards."""

import os
import signal
import sys
import time

import pytest

from verl_qwen35.config import compose
from verl_qwen35.run.child import run_attached
from verl_qwen35.run.stops import Terminated, stop_point, stops_deferred


def test_a_sigterm_inside_hydras_composition_is_raised_once_the_composition_is_whole():
    composed = []
    with pytest.raises(Terminated), stops_deferred():
        os.kill(os.getpid(), signal.SIGTERM)  # the handler runs before the next line
        time.sleep(0.01)
        composed.append(compose(["device=npu", "model=122b"]))
        stop_point()
        composed.append("after the stop point")
    assert len(composed) == 1 and composed[0].trainer.device == "npu"


def test_the_first_signal_decides_how_the_command_ends_and_a_pending_one_ends_the_block():
    # Ctrl-C as in a terminal: a suite run in the background (CI) starts with SIGINT ignored, which stays ignored.
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt) as stopped, stops_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.01)
    finally:
        signal.signal(signal.SIGINT, before)
    assert type(stopped.value) is KeyboardInterrupt  # Ctrl-C came first: exit 130, not 143


def test_a_wait_on_a_child_is_cut_at_once_and_the_child_is_stopped():
    child = [sys.executable, "-c", "import time; time.sleep(60)"]
    started = time.monotonic()
    with pytest.raises(Terminated), stops_deferred():
        signal.setitimer(signal.ITIMER_REAL, 0.5)  # SIGALRM's handler sends the SIGTERM while we wait
        before = signal.signal(signal.SIGALRM, lambda *_: os.kill(os.getpid(), signal.SIGTERM))
        try:
            run_attached(child, stop_s=1.0)
        finally:
            signal.signal(signal.SIGALRM, before)
    assert time.monotonic() - started < 10


def test_the_handlers_are_the_callers_again_and_an_ignored_signal_stays_ignored():
    before_term = signal.getsignal(signal.SIGTERM)
    before_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with stops_deferred():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # started under nohup: Ctrl-C is not ours
            assert signal.getsignal(signal.SIGTERM) is not before_term
        assert signal.getsignal(signal.SIGTERM) is before_term
    finally:
        signal.signal(signal.SIGINT, before_int)
