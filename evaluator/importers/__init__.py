"""Benchmark importers: VLMEvalKit/MMBench TSV, POPE question files, vlmdesk's generic JSONL."""
from evaluator.importers.common import InputError
from evaluator.importers.importer import FORMATS, ImportReport, detect_format, import_benchmark

__all__ = ["FORMATS", "ImportReport", "InputError", "detect_format", "import_benchmark"]
