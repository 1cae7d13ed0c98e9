"""Benchmark importers: VLMEvalKit/MMBench TSV, POPE question files, vlmdesk's generic JSONL."""

from typing import TYPE_CHECKING, Any

from evaluator.formats.importers.common import InputError

if TYPE_CHECKING:
    from evaluator.formats.importers.importer import ImportReport, detect_format, import_benchmark

__all__ = ["ImportReport", "InputError", "detect_format", "import_benchmark"]


def __getattr__(name: str) -> Any:
    """The importers load on first use: a module that needs only common.py's rules (a name, a limit) and the commands
    that read a few rows do not pay for every file format's reader (issue 34)."""
    if name in ("ImportReport", "detect_format", "import_benchmark"):
        from evaluator.formats.importers import importer

        return getattr(importer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
