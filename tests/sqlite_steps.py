"""Counting SQLite's work: the tests' measure of "costs what it did at any size" (never a time)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager


class Steps:
    """How many times SQLite's progress handler was called: one per `every` virtual-machine instructions."""

    count = 0


@contextmanager
def counting_steps(conn: sqlite3.Connection, every: int = 100) -> Iterator[Steps]:
    """Count the SQLite virtual-machine steps `conn` runs inside the block (in units of `every` instructions)."""
    steps = Steps()

    def step() -> int:
        steps.count += 1
        return 0

    conn.set_progress_handler(step, every)
    try:
        yield steps
    finally:
        conn.set_progress_handler(None, 0)
