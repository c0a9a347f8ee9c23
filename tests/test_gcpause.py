"""Tests of toolrag.gcpause: the collector is off inside a pause and back to its earlier state after it."""

from __future__ import annotations

import gc
import threading

import pytest

from toolrag.gcpause import paused_gc


def test_pauses_nest_and_restore_the_collector() -> None:
    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause still holds
    assert gc.isenabled()
    with pytest.raises(RuntimeError), paused_gc():
        raise RuntimeError("a failed load resumes the collector too")
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    try:
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_overlapping_pauses_in_threads_resume_after_the_last() -> None:
    inside, release = threading.Event(), threading.Event()

    def worker() -> None:
        with paused_gc():
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=worker)
    with paused_gc():
        thread.start()
        assert inside.wait(10)
    assert not gc.isenabled()  # the worker's pause outlives this one
    release.set()
    thread.join(10)
    assert gc.isenabled()
