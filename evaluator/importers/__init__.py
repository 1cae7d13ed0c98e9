"""Benchmark importers: VLMEvalKit/MMBench TSV, POPE question files, vlmdesk's generic JSONL."""

from evaluator.importers.common import InputError
from evaluator.importers.importer import ImportReport, detect_format, import_benchmark

__all__ = ["ImportReport", "InputError", "detect_format", "import_benchmark"]
