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


def test_what_a_pause_created_goes_to_the_oldest_generation() -> None:
    gc.collect()
    with paused_gc():
        kept = [[i] for i in range(50_000)]  # lasting objects the collector tracks, like profiles
    made = {id(d) for d in kept}
    young = {id(o) for g in (0, 1) for o in gc.get_objects(generation=g)}
    assert not made & young  # not left in the young generations for the next search to walk
    assert made <= {id(o) for o in gc.get_objects(generation=2)}


def test_objects_an_application_froze_stay_frozen() -> None:
    # Objects that other threads free may leave the frozen set meanwhile (the count fell by 2 in one CI run),
    # so the test follows its own objects: frozen ones are in none of the collector's three generations.
    mine = [[i] for i in range(1000)]
    gc.freeze()
    try:
        with paused_gc():
            pass
        tracked = {id(o) for g in (0, 1, 2) for o in gc.get_objects(generation=g)}
        assert not {id(o) for o in mine} & tracked  # no unfreeze behind the application's back
    finally:
        gc.unfreeze()
    assert {id(o) for o in mine} <= {id(o) for g in (0, 1, 2) for o in gc.get_objects(generation=g)}
