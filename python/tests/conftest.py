"""Shared test helpers: the repository's fixtures, and skips that fail
instead under CI's `ZRECORD_NO_SKIP=1`."""

import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
PARQUET = REPO / "cli" / "tests" / "fixtures" / "parquet"
GOLDEN = REPO / "zsampler" / "tests" / "reference" / "golden.txt"


def need(condition, reason):
    """Skips the test without `condition` — or fails it when CI promises
    everything (`ZRECORD_NO_SKIP=1`)."""
    if condition:
        return
    if os.environ.get("ZRECORD_NO_SKIP") == "1":
        pytest.fail(f"ZRECORD_NO_SKIP=1 but {reason}")
    pytest.skip(reason)


def module(name):
    """Imports `name`, or skips (fails under ZRECORD_NO_SKIP) without it."""
    try:
        return __import__(name)
    except ImportError:
        need(False, f"{name} is not installed")


@pytest.fixture(autouse=True)
def watchdog():
    """A test that hangs (a request that never returns, a lock never
    released) ends the run with every thread's traceback instead of
    stalling it."""
    import faulthandler

    faulthandler.dump_traceback_later(600, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()
