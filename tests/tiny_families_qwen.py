"""Tiny random-weight builders (see tests/tiny_families.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

BUILDERS: dict[str, Callable[[Path], Path]] = {}
