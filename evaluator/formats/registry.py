"""The format registry: benchmark file formats vlmdesk imports and exports, by name.

An entry names a format, the benchmark kind it holds, how a file is recognised (extensions, or a look at its first
record), its reader (evaluator/formats/importers/) and writer (evaluator/formats/exporters.py), and what its import
takes (an
images folder, a POPE setting). The importer, the exporter, `vlmdesk import --format`, `qc export --format` and the
app's import dialog read them. A new format is a module declaring a tuple `FORMATS` of FormatEntry — a reader, a
writer if it can be written — built in (the builtins below) or named in VLMDESK_PLUGINS (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from evaluator.registry import Field, Registry


@dataclass(frozen=True)
class FormatEntry:
    """``read(path, raw, *, images_dir, limits)`` yields the importer's SourceRows (or InputErrors);
    ``write(ws, bench, items, path) -> (rows, images)`` writes a benchmark; either may be "module:function".
    ``sniff(first_record, first_line, head)`` says whether a file not recognised by its extension is in this
    format (``first_record``: the first line read as JSON, or None; ``head``: the first 4 KB or so)."""

    name: str
    kind: Literal["mcq", "yesno", "open"]
    help: str
    read: Callable[..., Any] | str
    write: Callable[..., Any] | str | None = None
    extensions: tuple[str, ...] = ()
    sniff: Callable[[object, str, str], bool] | None = None
    sniff_order: int = 0  # lower first: a loose test (a tab in the first line) goes after the exact ones
    fold_copies: bool = False  # MMBench's pre-expanded circular copies are folded into their question
    takes_setting: bool = False  # a POPE setting (random / popular / adversarial), else read from the file name
    # The file holds several settings and the setting selects the rows read (`read(..., setting=)`): each setting
    # is its own benchmark, identified by the file's SHA-256 and the setting.
    selects_setting: bool = False
    wants_images: bool = False  # images are named, not embedded: warn when no images folder is given
    fields: tuple[Field, ...] = ()
    # (path, raw) -> the name of a closer format, when a look inside tells more than the extension (parquet's schema).
    refine: Callable[..., Any] | str | None = None


def _pope_sniff(record: object, first: str, head: str) -> bool:
    if isinstance(record, dict):
        return {"question_id", "label"} <= record.keys()
    return '"question_id"' in head and '"label"' in head  # a pretty-printed JSON array


_IMAGES = Field("images_dir", "Images folder", "path", help="where the image files the questions name are")
FORMATS = (
    FormatEntry(
        "mmbench-tsv",
        "mcq",
        "VLMEvalKit / MMBench TSV (base64 images; circular copies folded)",
        "evaluator.formats.importers.tsv:read_tsv",
        "evaluator.formats.exporters:_write_tsv",
        extensions=(".tsv", ".tab"),
        sniff=lambda record, first, head: "\t" in first,
        sniff_order=1,
        fold_copies=True,
        fields=(_IMAGES,),
        refine="evaluator.formats.importers.tsv:refine",
    ),
    FormatEntry(
        "pope",
        "yesno",
        "POPE question file: question_id, image, text, label (JSON Lines or an array)",
        "evaluator.formats.importers.jsonl:read_pope",
        "evaluator.formats.exporters:_write_pope",
        sniff=_pope_sniff,
        takes_setting=True,
        wants_images=True,
        fields=(_IMAGES, Field("setting", "Setting", "choice", choices=("", "random", "popular", "adversarial"))),
    ),
    FormatEntry(
        "jsonl",
        "mcq",
        "vlmdesk's JSON Lines: question, options, answer, image (path, data URL or base64); no options: open",
        "evaluator.formats.importers.jsonl:read_jsonl",
        "evaluator.formats.exporters:_write_jsonl",
        # A line without options is an open question (kind open; evaluator/formats/importers/jsonl.py).
        sniff=lambda record, first, head: (
            isinstance(record, dict) and "question" in record and ("options" in record or "image" in record)
        ),
        fields=(_IMAGES,),
    ),
    FormatEntry(
        "parquet",
        "mcq",
        "Hugging Face parquet: lmms-lab's MMBench layout, or a column per field (images as bytes); a folder of "
        "shards is one benchmark",
        "evaluator.formats.importers.parquet:read_parquet",
        "evaluator.formats.importers.parquet:write_parquet",
        extensions=(".parquet",),
        sniff=lambda record, first, head: first.startswith("PAR1"),
        fold_copies=True,
        refine="evaluator.formats.importers.parquet:refine",
    ),
    FormatEntry(
        "pope-parquet",
        "yesno",
        "Hugging Face parquet in lmms-lab's POPE layout: question_id, question, answer, image, category (one setting)",
        "evaluator.formats.importers.parquet:read_pope_parquet",
        "evaluator.formats.importers.parquet:write_parquet",
        takes_setting=True,
        fields=(Field("setting", "Setting", "choice", choices=("", "random", "popular", "adversarial")),),
    ),
    FormatEntry(
        "pope-tsv",
        "yesno",
        "VLMEvalKit's yes/no TSV (POPE.tsv): index, question, answer, image (base64), category (the settings); "
        "one setting per benchmark",
        "evaluator.formats.importers.tsv:read_pope_tsv",
        takes_setting=True,
        selects_setting=True,
        fields=(Field("setting", "Setting", "choice", choices=("", "random", "popular", "adversarial")),),
    ),
    FormatEntry(
        "vqa-parquet",
        "open",
        "Hugging Face parquet in lmms-lab's VQA / caption layouts (textvqa, DocVQA, VQAv2, OK-VQA, ChartQA, "
        "COCO-Caption2017): question, answers or answer (the references), image; open questions",
        "evaluator.formats.importers.parquet:read_vqa_parquet",
    ),
    FormatEntry(
        "vqa-tsv",
        "open",
        "VLMEvalKit's VQA / caption TSV (TextVQA, DocVQA, InfoVQA, ChartQA, OCRVQA, COCO_VAL): index, question, answer "
        "(a reference text or a Python list of them), image (base64); open questions",
        "evaluator.formats.importers.tsv:read_vqa_tsv",
        "evaluator.formats.exporters:_write_vqa_tsv",
        fields=(_IMAGES,),
    ),
)
REGISTRY: Registry[FormatEntry] = Registry("format", "FORMATS", builtins=(__name__,))


def format_names() -> tuple[str, ...]:
    return tuple(entry.name for entry in REGISTRY.help_entries())


def get(name: str) -> FormatEntry | None:
    return REGISTRY.get(name)


def by_extension(suffix: str) -> str | None:
    """The format a file name's extension says, if one does."""
    return next((e.name for e in REGISTRY.entries() if suffix.lower() in e.extensions), None)


def sniff(record: object, first: str, head: str) -> str | None:
    """The format a file's first record says: the first whose sniff agrees, exact tests before loose ones."""
    ordered = sorted(REGISTRY.entries(), key=lambda e: e.sniff_order)  # stable: registration order within a rank
    return next((e.name for e in ordered if e.sniff and e.sniff(record, first, head)), None)


def export_formats(kind: str) -> tuple[str, ...]:
    """The formats a benchmark of `kind` can be written in."""
    return tuple(e.name for e in REGISTRY.entries() if e.kind == kind and e.write is not None)
