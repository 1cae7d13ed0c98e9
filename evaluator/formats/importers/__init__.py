"""Benchmark importers: VLMEvalKit/MMBench TSV, POPE question files, vlmdesk's generic JSONL."""

from evaluator.formats.importers.common import InputError
from evaluator.formats.importers.importer import ImportReport, detect_format, import_benchmark

__all__ = ["ImportReport", "InputError", "detect_format", "import_benchmark"]
