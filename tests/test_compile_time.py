"""Compile time per thread: what a handler's deadline does not count."""

from __future__ import annotations

import threading

import numpy as np

from fedtrees._compile_time import compile_seconds, compiling
from fedtrees._compiling import f64, kernel, ro


def test_a_compile_under_way_counts_until_it_ends_and_only_for_its_thread() -> None:
    entered, release = threading.Event(), threading.Event()

    def compile_() -> None:
        with compiling(), compiling():  # nested: counted once
            entered.set()
            release.wait(timeout=600.0)

    worker = threading.Thread(target=compile_)
    worker.start()
    assert entered.wait(timeout=600.0)
    thread = worker.ident
    assert thread is not None
    before = compile_seconds(thread, now=1e9)
    assert compile_seconds(thread, now=1e9 + 5.0) - before == 5.0  # under way
    assert compile_seconds(threading.get_ident(), now=1e9) == compile_seconds(
        threading.get_ident(), now=1e9 + 5.0
    )  # this thread is not compiling
    release.set()
    worker.join()
    ended = compile_seconds(thread, now=1e9)
    assert compile_seconds(thread, now=1e9 + 5.0) == ended > 0.0  # stopped counting


def test_a_declared_kernels_first_call_is_compile_time() -> None:
    # Declared here, not at import: every test module is imported in every test
    # worker, and tests/test_compiling.py checks that each declared kernel holds
    # its compiled signatures once a fit has run.
    @kernel((ro(f64),))
    def _total(values: np.ndarray) -> float:  # pragma: no cover - compiled
        return float(values.sum())

    me = threading.get_ident()
    before = compile_seconds(me)
    assert _total(np.array([1.0, 2.0])) == 3.0  # compiles, or loads from the cache
    first = compile_seconds(me)
    assert first > before
    assert _total(np.array([3.0])) == 3.0
    assert compile_seconds(me) == first  # a compiled kernel's call is not compile time
