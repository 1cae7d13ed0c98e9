"""VLMEvalKit / MMBench TSV reader.

Header: `index question hint A B C D ... answer category image source l2-category comment split`; columns vary per
benchmark, so any subset with index, question, two or more option letters and an image (or image_path) is accepted.
`image` holds base64, or (<= 64 characters) the index of another row whose image it shares.
"""

from __future__ import annotations

import binascii
import csv
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from evaluator.choices import NONE_OF_THEM
from evaluator.importers.common import (
    LETTERS,
    ImageRef,
    InputError,
    ReadLimits,
    SourceRow,
    blank,
    check_texts,
    data_url_payload,
    decode_base64_image,
    decoded_lines,
    index_or_none,
    normalise_index,
)

# Inline images shorter than this are references to another row's index (VLMEvalKit's convention).
IMAGE_REF_MAX_CHARS = 64
KNOWN = {
    "index",
    "question",
    "hint",
    "answer",
    "category",
    "l2-category",
    "l2_category",
    "split",
    "image",
    "image_path",
}


def read_tsv(
    path: Path, raw: BinaryIO, *, images_dir: Path | None = None, limits: ReadLimits = ReadLimits()
) -> Iterator[SourceRow | InputError]:
    """Yield one SourceRow (or the InputError of a bad row) per data row; raise InputError if the file is unusable."""
    # Base64 images make single cells of megabytes (the csv module's default cap is 128 KB); a quoted cell may span
    # lines, so the cap on a cell is the cap on a line.
    csv.field_size_limit(limits.max_line_bytes)
    bad_encoding: dict[int, InputError] = {}  # line -> its encoding error, reported with the row it belongs to
    lines = decoded_lines(raw, path, bad_encoding, limits.max_line_bytes)
    reader = csv.reader(lines, delimiter="\t")
    try:
        header = next(reader)
    except StopIteration:
        raise InputError(path, 1, "header", "the file is empty") from None
    except csv.Error as exc:
        raise InputError(path, 1, "header", f"unreadable TSV ({exc})") from None
    if bad_encoding:
        raise bad_encoding[min(bad_encoding)]
    header = [h.strip() for h in header]
    col = {name: i for i, name in enumerate(header)}
    if NONE_OF_THEM in col:
        raise InputError(
            path,
            1,
            "header",
            "an option column Z: vlmdesk reads Z as 'none of the options', so items have at most 25 options (A-Y)",
        )
    option_cols = [c for c in LETTERS if c in col]
    missing = [c for c in ("index", "question") if c not in col]
    if "image" not in col and "image_path" not in col:
        missing.append("image")
    if len(option_cols) < 2:
        missing.append("A, B (at least two option columns)")
    if missing:
        raise InputError(path, 1, "header", f"missing column(s): {', '.join(missing)}")
    if option_cols != list(LETTERS[: len(option_cols)]):
        raise InputError(
            path, 1, "header", f"option columns must be consecutive letters from A, got {' '.join(option_cols)}"
        )
    base_dir = images_dir or path.parent
    extra = [h for h in header if h not in KNOWN and h not in option_cols]

    last_line = 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield InputError(path, reader.line_num, "row", f"unreadable TSV ({exc})")
            return
        first_line, last_line = last_line + 1, reader.line_num
        encoding = [bad_encoding.pop(n) for n in range(first_line, last_line + 1) if n in bad_encoding]
        if encoding:
            encoding[0].index = index_or_none(cells[col["index"]]) if len(cells) > col["index"] else None
            yield encoding[0]
            continue
        if not any(c.strip() for c in cells):
            continue
        if len(cells) != len(header):
            what = "fewer" if len(cells) < len(header) else "more"
            lacking = header[len(cells) :] if len(cells) < len(header) else []
            field = lacking[0] if lacking else "row"
            yield InputError(
                path,
                first_line,
                field,
                f"{what} cells ({len(cells)}) than header columns ({len(header)})"
                + (" — truncated line?" if lacking else ""),
            )
            continue
        row = dict(zip(header, cells))
        try:
            yield _parse(row, first_line, path, option_cols, base_dir, extra, limits)
        except InputError as exc:
            exc.index = index_or_none(row["index"])
            yield exc


def _parse(
    row: dict[str, Any],
    line: int,
    path: Path,
    option_cols: list[str],
    base_dir: Path,
    extra: list[str],
    limits: ReadLimits,
) -> SourceRow:
    def err(field: str, what: str) -> InputError:
        return InputError(path, line, field, what)

    for column, value in row.items():
        check_texts(value, column, err)
    try:
        index = normalise_index(row["index"])
    except ValueError as exc:
        raise err("index", f"not a valid index: {row['index'][:60]!r} ({exc})") from None
    question = row["question"].strip()
    if not question:
        raise err("question", "empty")

    options: list[str] = []
    for letter in option_cols:
        value = row[letter]
        if blank(value):
            continue
        if len(options) != LETTERS.index(letter):
            raise err(letter, f"option {letter} is filled but option {LETTERS[len(options)]} is empty")
        options.append(value.strip())
    if len(options) < 2:
        raise err("A" if not options else "B", f"needs at least two options, found {len(options)}")

    answer = None
    if "answer" in row and not blank(row["answer"]):
        answer = row["answer"].strip().upper()
        if answer not in LETTERS[: len(options)]:
            raise err(
                "answer", f"{row['answer'].strip()!r} is not one of the options {', '.join(LETTERS[: len(options)])}"
            )

    image = _image_ref(row, base_dir, err, limits)

    def get(*names: str) -> str | None:
        return next((row[n].strip() for n in names if n in row and not blank(row[n])), None)

    return SourceRow(
        line=line,
        index=index,
        question=question,
        options=tuple(options),
        answer=answer,
        image=image,
        hint=get("hint"),
        category=get("category"),
        l2_category=get("l2-category", "l2_category"),
        split=get("split"),
        meta={k: row[k] for k in extra if not blank(row[k])},
    )


def _image_ref(
    row: dict[str, Any], base_dir: Path, err: Callable[[str, str], InputError], limits: ReadLimits
) -> ImageRef:
    cell = row.get("image", "")
    if not blank(cell):
        cell = cell.strip()
        try:
            payload = data_url_payload(cell)
        except ValueError as exc:
            raise err("image", str(exc)) from None
        if payload is None and len(cell) <= IMAGE_REF_MAX_CHARS:
            try:
                return ImageRef("row", normalise_index(cell))
            except ValueError:
                raise err("image", f"not base64 and not a row index: {cell!r}") from None
        try:
            return ImageRef("bytes", decode_base64_image(cell if payload is None else payload, limits))
        except binascii.Error as exc:
            raise err("image", f"undecodable base64 ({exc})") from None
        except ValueError as exc:
            raise err("image", str(exc)) from None
    path_cell = row.get("image_path", "")
    if not blank(path_cell):
        p = Path(path_cell.strip())
        return ImageRef("path", p if p.is_absolute() else base_dir / p)
    raise err("image", "empty (no base64 image and no image_path)")
