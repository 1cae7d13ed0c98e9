"""Write a benchmark back out in the format it came from, minus some items and with some answers replaced.

- `mmbench-tsv`: VLMEvalKit's TSV. The source file's columns, in its order when the file is still readable (else
  VLMEvalKit's order), plus any column the items carry. Each image is base64 on the first row that shows it; every
  later row with the same image holds that row's index (VLMEvalKit resolves one level of reference, never a chain).
  Questions folded from CircularEval copies are expanded again: the copy at index + k*1,000,000 shows the options
  rotated by k (option i is original option (i + k) mod N) and the answer letter rotated with them, all copies
  after all originals, in k order. An item of several images writes them as VLMEvalKit's MMMU TSV does: one cell
  holding a Python list of base64 texts (`str(list)`), read back by its toliststr.
- `pope`: POPE's JSON Lines: question_id, image (the file name), text, label, plus any other key the source had.
- `jsonl`: vlmdesk's JSONL; images are written once each into a folder next to the file, referenced by path (an
  item of several: `images`, a list of paths in order).

Files are written to a temporary name and renamed, so an interrupted export leaves nothing half-written.
"""

from __future__ import annotations

import base64
import csv
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

from db import catalog
from db.catalog import Benchmark, Item
from db.errors import UserError
from db.workspace import Workspace
from evaluator.formats import registry as formats
from evaluator.formats.importers.common import CIRCULAR_STRIDE, MAX_SOURCE_BYTES, open_regular
from evaluator.formats.outfiles import AtomicOutput
from evaluator.formats.registry import export_formats
from evaluator.registry import resolve
from evaluator.scoring.choices import LETTERS, MAX_OPTIONS, displayed_answer, letters, rotation

VLMEVALKIT_ORDER = (
    "index",
    "question",
    "hint",
    *letters(MAX_OPTIONS),
    "answer",
    "category",
    "image",
    "source",
    "l2-category",
    "comment",
    "split",
)
_MIME_EXT = {
    "image/jpeg": ".jpg",
    "image/png": ".png",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "image/bmp": ".bmp",
    "image/tiff": ".tif",
}


class ExportError(UserError, ValueError):
    """The benchmark cannot be written in the requested format."""


@dataclass(frozen=True)
class ExportReport:
    path: Path
    format: str
    questions: int
    rows: int
    images: int


def export_benchmark(
    ws: Workspace,
    bench: Benchmark,
    path: str | Path,
    *,
    fmt: str | None = None,
    exclude: frozenset[int] = frozenset(),
    answers: dict[int, str] | None = None,
    added_references: dict[int, tuple[str, ...]] | None = None,
) -> ExportReport:
    """Write `bench` without the items in `exclude` and with answers[item_id] replacing their answer keys (an open
    item's references: the corrected one becomes the only one), added_references[item_id] appended to an open item's
    references (the answers its references missed)."""
    fmt = fmt or bench.format
    allowed = export_formats(bench.kind)
    if fmt not in allowed:
        raise ExportError(f"a {bench.kind} benchmark can be exported as {', '.join(allowed)}, not {fmt}")
    answers, added = answers or {}, added_references or {}
    items = [
        _with_references(i, answers.get(i.id), added.get(i.id, ()))
        if bench.kind == "open"
        else _with_answer(i, answers.get(i.id))
        for i in catalog.list_items(ws, bench.id)
        if i.id not in exclude
    ]
    path = Path(path)
    write = formats.REGISTRY[fmt].write  # the format registry names each format's writer
    assert write is not None  # export_formats lists only formats with one
    writer = resolve(write)
    rows, images = writer(ws, bench, items, path)
    return ExportReport(path, fmt, len(items), rows, images)


def _with_answer(item: Item, answer: str | None) -> Item:
    return item if answer is None else replace(item, answer=answer)


def _with_references(item: Item, answer: str | None, added: tuple[str, ...]) -> Item:
    if answer is None and not added:
        return item
    base = (answer,) if answer is not None else item.references
    references = base + tuple(a for a in dict.fromkeys(added) if a not in base)  # repeats in base are VQA's votes
    meta = {k: v for k, v in item.meta.items() if k != "reference"}  # the one-reference form of older imports
    return replace(item, meta={**meta, "references": list(references)})


def _atomic_text(path: Path) -> tuple[IO[Any], AtomicOutput]:
    """(handle, pending output): evaluator/formats/outfiles.py's rule (no devices, workspaces, half-written files)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    out = AtomicOutput(path, newline="")
    return out.open(), out


def _finish(handle: IO[Any], out: AtomicOutput, path: Path, ok: bool) -> None:
    out.close(ok)


def _image(ws: Workspace, sha256: str) -> tuple[bytes, str]:
    found = catalog.image_bytes(ws, sha256)
    if found is None:  # items refer to their images by key: only a damaged workspace lacks one
        raise ExportError(f"image {sha256} is missing from the workspace (vlmdesk check)")
    return found


def _extra(item: Item) -> dict[str, Any]:
    # meta["copies"] / meta["copy_shifts"] are vlmdesk's record of folded circular copies, not columns of the source.
    return {k: v for k, v in item.meta.items() if k not in ("copies", "copy_shifts")}


# ------------------------------------------------------------------------------------------------ TSV
MAX_HEADER_BYTES = 2**16  # a TSV header names a few dozen columns


def _source_header(bench: Benchmark) -> list[str] | None:
    if bench.format != "mmbench-tsv":
        return None
    # The source may have changed since its import (a FIFO, a link to /dev/zero, one endless line): its header is read
    # through the bounded door, and whatever cannot be read leaves the header to the items.
    try:
        with open_regular(Path(bench.source), MAX_SOURCE_BYTES, "limit for a benchmark file") as f:
            first = f.readline(MAX_HEADER_BYTES + 1)
        if len(first) > MAX_HEADER_BYTES:
            return None
        return [h.strip() for h in next(csv.reader([first.decode("utf-8-sig")], delimiter="\t"))]
    except (OSError, ValueError, StopIteration, csv.Error):  # Refused and UnicodeDecodeError are ValueErrors
        return None


def tsv_columns(bench: Benchmark, items: list[Item]) -> list[str]:
    """Every column of the source header (image_path becomes image: images are written inline), then any column
    the items need that it lacks."""
    n_options = max((len(i.options) for i in items), default=2)
    header = _source_header(bench)
    l2_name = "l2_category" if header and "l2_category" in header and "l2-category" not in header else "l2-category"
    wanted = ["index", "question", "image", *letters(n_options)]
    for name, present in (
        ("hint", any(i.hint for i in items)),
        ("answer", any(i.answer for i in items)),
        ("category", any(i.category for i in items)),
        (l2_name, any(i.l2_category for i in items)),
        ("split", any(i.split for i in items)),
    ):
        if present:
            wanted.append(name)
    wanted += list(dict.fromkeys(k for i in items for k in _extra(i)))
    if header:
        # image_path beside image only names the files VLMEvalKit dumps images to (kept from the source's cells).
        columns = ["image" if h == "image_path" and "image" not in header else h for h in header]
        columns = list(dict.fromkeys(columns))
    else:
        columns = [h for h in VLMEVALKIT_ORDER if h in wanted or (h == "l2-category" and l2_name in wanted)]
    return columns + [c for c in wanted if c not in columns]


def copy_shifts(item: Item) -> list[tuple[int | str, int]]:
    """(index, rotation) of each circular copy the source had: the rotation recorded at import, else (workspaces
    imported before it was recorded) the one its index offset implies."""
    copies = item.meta.get("copies", [])
    shifts = item.meta.get("copy_shifts") or [(int(c) - int(item.index)) // CIRCULAR_STRIDE for c in copies]
    return list(zip(copies, shifts))


def _copies(item: Item) -> list[tuple[int, int | str, tuple[str, ...], str | None]]:
    """(k, index, options, answer) of the item's re-expanded circular copies, k being the copy's rank in the
    source (its index offset), which orders the rows as the source did."""
    n = len(item.options)
    rows = []
    for copy_index, shift in copy_shifts(item):
        k = (int(copy_index) - int(item.index)) // CIRCULAR_STRIDE
        order = rotation(n, shift)
        shown = tuple(item.options[j] for j in order)
        answer = displayed_answer(item.answer, order)
        rows.append((k, copy_index, shown, answer))
    return rows


def _image_cell(ws: Workspace, images: tuple[str, ...]) -> str:
    """An item's images as a VLMEvalKit TSV cell: base64, or for several a Python list of them (str(list), which
    VLMEvalKit's toliststr evals back)."""
    inline = [base64.b64encode(_image(ws, sha)[0]).decode("ascii") for sha in images]
    return inline[0] if len(inline) == 1 else str(inline)


def _image_or_reference(
    ws: Workspace, item: Item, index: int | str, first_row_of: dict[tuple[str, ...], int | str]
) -> str | int | None:
    """The image cell of a row: the images inline on the first row that shows them (all of them, in order), that
    row's index on every later one (VLMEvalKit copies the whole cell of the row a short cell names)."""
    if not item.images:
        return None
    if item.images in first_row_of:
        return first_row_of[item.images]
    first_row_of[item.images] = index
    return _image_cell(ws, item.images)


def _distinct(first_row_of: dict[tuple[str, ...], int | str]) -> int:
    return len({sha for images in first_row_of for sha in images})


def _write_tsv(ws: Workspace, bench: Benchmark, items: list[Item], path: Path) -> tuple[int, int]:
    columns = tsv_columns(bench, items)
    first_row_of: dict[tuple[str, ...], int | str] = {}  # images -> index of the row that holds their base64

    def row(item: Item, index: int | str, options: tuple[str, ...], answer: str | None) -> list[str]:
        values = {
            "index": index,
            "question": item.question,
            "hint": item.hint,
            "answer": answer,
            "category": item.category,
            "l2-category": item.l2_category,
            "l2_category": item.l2_category,
            "split": item.split,
            **_extra(item),
            **dict(zip(LETTERS, options)),
        }
        values["image"] = _image_or_reference(ws, item, index, first_row_of)
        return ["" if values.get(c) is None else str(values[c]) for c in columns]

    handle, tmp = _atomic_text(path)
    ok, rows = False, 0
    try:
        out = csv.writer(handle, delimiter="\t", lineterminator="\n")
        out.writerow(columns)
        for item in items:
            out.writerow(row(item, item.index, item.options, item.answer))
            rows += 1
        copies = sorted(
            (
                (k, position, item, index, options, answer)
                for position, item in enumerate(items)
                for k, index, options, answer in _copies(item)
            ),
            key=lambda c: (c[0], c[1]),
        )
        for _, _, item, index, options, answer in copies:
            out.writerow(row(item, index, options, answer))
            rows += 1
        ok = True
    finally:
        _finish(handle, tmp, path, ok)
    return rows, _distinct(first_row_of)


# ------------------------------------------------------------------------------------------------ VQA TSV
def _write_vqa_tsv(ws: Workspace, bench: Benchmark, items: list[Item], path: Path) -> tuple[int, int]:
    """An open benchmark in VLMEvalKit's VQA layout: `index, question, answer, image` and the items' other fields; the
    references as VLMEvalKit writes them (one text, or a Python list's repr, which vqa-tsv reads back), an image
    inline once and by index after."""
    references = [list(i.references) for i in items]
    wanted = ["index", "question", "answer", "image"]
    for name, present in (
        ("hint", any(i.hint for i in items)),
        ("category", any(i.category for i in items)),
        ("l2-category", any(i.l2_category for i in items)),
        ("split", any(i.split for i in items)),
    ):
        if present:
            wanted.append(name)
    extras = list(dict.fromkeys(k for i in items for k in _extra(i) if k not in ("references", "reference")))
    columns = wanted + [c for c in extras if c not in wanted]
    first_row_of: dict[tuple[str, ...], int | str] = {}
    handle, tmp = _atomic_text(path)
    ok = False
    try:
        out = csv.writer(handle, delimiter="\t", lineterminator="\n")
        out.writerow(columns)
        for item, refs in zip(items, references):
            one = len(refs) == 1 and not (refs[0].startswith("[") and refs[0].endswith("]"))
            values: dict[str, Any] = {
                **_extra(item),
                "index": item.index,
                "question": item.question,
                "answer": (refs[0] if one else repr(refs)) if refs else None,
                "hint": item.hint,
                "category": item.category,
                "l2-category": item.l2_category,
                "split": item.split,
            }
            values["image"] = _image_or_reference(ws, item, item.index, first_row_of)
            out.writerow(["" if values.get(c) is None else str(values[c]) for c in columns])
        ok = True
    finally:
        _finish(handle, tmp, path, ok)
    return len(items), _distinct(first_row_of)


# ------------------------------------------------------------------------------------------------ POPE
def _write_pope(ws: Workspace, bench: Benchmark, items: list[Item], path: Path) -> tuple[int, int]:
    handle, tmp = _atomic_text(path)
    ok = False
    try:
        for item in items:
            extra = _extra(item)
            record = {
                "question_id": item.index,
                "image": extra.pop("image_name", None),
                "text": item.question,
                "label": item.answer,
                **extra,
            }
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        ok = True
    finally:
        _finish(handle, tmp, path, ok)
    return len(items), len({i.meta.get("image_name") for i in items})


# ------------------------------------------------------------------------------------------------ JSONL
def images_dir_for(path: Path) -> Path:
    return path.with_name(path.stem + "_images")


def _write_jsonl(ws: Workspace, bench: Benchmark, items: list[Item], path: Path) -> tuple[int, int]:
    folder = images_dir_for(path)
    written: dict[str, str] = {}
    for item in items:
        for sha in item.images:
            if sha in written:
                continue
            data, mime = _image(ws, sha)
            name = sha + _MIME_EXT.get(mime, ".bin")
            folder.mkdir(parents=True, exist_ok=True)
            target = folder / name
            if not target.exists():
                target.write_bytes(data)
            written[sha] = f"{folder.name}/{name}"
    handle, tmp = _atomic_text(path)
    ok = False
    try:
        for item in items:
            record = {
                "index": item.index,
                "question": item.question,
                "options": list(item.options),
                "answer": item.answer,
                "image": written[item.image_sha256] if item.image_sha256 and not item.more_images else None,
                "images": [written[sha] for sha in item.images] if item.more_images else None,
                "hint": item.hint,
                "category": item.category,
                "l2_category": item.l2_category,
                "split": item.split,
                **_extra(item),
            }
            handle.write(json.dumps({k: v for k, v in record.items() if v is not None}, ensure_ascii=False) + "\n")
        ok = True
    finally:
        _finish(handle, tmp, path, ok)
    return len(items), len(written)
