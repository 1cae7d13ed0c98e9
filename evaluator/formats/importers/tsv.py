"""VLMEvalKit / MMBench TSV readers.

Header: `index question hint A B C D ... answer category image source l2-category comment split`; columns vary per
benchmark, so any subset with index, question, two or more option letters and an image (or image_path) is accepted.
`image` holds base64, or (<= 64 characters) the index of another row whose image it shares, or an item's several
images as a Python list of base64 texts (`['iVBOR…', '/9j/…']`, VLMEvalKit's MMMU layout: vlmeval/dataset/
image_base.py ImageBaseDataset.__init__ and dump_image, vlmeval/smp/misc.py toliststr, read at VLMEvalKit commit
050726559997d4642f3ae483391be97d49868f8c); `image_path` likewise a path or a list of them. The question's
`<image 1>`… placeholders are kept as text: they say where each image goes.

Without option columns a TSV is VLMEvalKit's yes/no layout (POPE, read by read_pope_tsv) or its VQA / caption
layout (TextVQA_VAL, DocVQA_VAL, InfoVQA_VAL, ChartQA_TEST, OCRVQA_TEST, COCO_VAL; read by read_vqa_tsv): open
questions whose `answer` cell is one reference text or a Python list of them ("['a', 'b']").
"""

from __future__ import annotations

import binascii
import csv
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from evaluator.formats.importers.common import (
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
    python_list_answers,
    python_text_list,
    several_images,
)
from evaluator.scoring.choices import LETTERS, NONE_OF_THEM

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
    table = _table(path, raw, limits)
    header = next(table)
    assert isinstance(header, list)
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
    for first_line, row in table:  # after the header: (line, the row or its error)
        if isinstance(row, InputError):
            yield row
            continue
        try:
            yield _parse(row, first_line, path, option_cols, base_dir, extra, limits)
        except InputError as exc:
            exc.index = index_or_none(row["index"])
            yield exc


def _table(path: Path, raw: BinaryIO, limits: ReadLimits) -> Iterator[Any]:
    """The header (a list of column names), then (first line, the row as a dict, or its InputError) per data row;
    blank rows are left out. Raises InputError when the header cannot be read."""
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
    yield header
    col = {name: i for i, name in enumerate(header)}
    last_line = 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield reader.line_num, InputError(path, reader.line_num, "row", f"unreadable TSV ({exc})")
            return
        first_line, last_line = last_line + 1, reader.line_num
        encoding = [bad_encoding.pop(n) for n in range(first_line, last_line + 1) if n in bad_encoding]
        if encoding:
            index_col = col.get("index", 0)
            encoding[0].index = index_or_none(cells[index_col]) if len(cells) > index_col else None
            yield first_line, encoding[0]
            continue
        if not any(c.strip() for c in cells):
            continue
        if len(cells) != len(header):
            what = "fewer" if len(cells) < len(header) else "more"
            lacking = header[len(cells) :] if len(cells) < len(header) else []
            field = lacking[0] if lacking else "row"
            yield (
                first_line,
                InputError(
                    path,
                    first_line,
                    field,
                    f"{what} cells ({len(cells)}) than header columns ({len(header)})"
                    + (" — truncated line?" if lacking else ""),
                ),
            )
            continue
        yield first_line, dict(zip(header, cells))


def _row_head(
    row: dict[str, Any], line: int, path: Path, *, missing_question: str | None = None
) -> tuple[Callable[[str, str], InputError], int | str, str]:
    """What every layout's row starts with: its error maker (file, line, field), every cell's text checked, its index
    and its question (`missing_question` where the layout may have no question column) read and checked."""

    def err(field: str, what: str) -> InputError:
        return InputError(path, line, field, what)

    for column, value in row.items():
        check_texts(value, column, err)
    try:
        index = normalise_index(row["index"])
    except ValueError as exc:
        raise err("index", f"not a valid index: {row['index'][:60]!r} ({exc})") from None
    question = missing_question if missing_question is not None and "question" not in row else row["question"].strip()
    if not question:
        raise err("question", "empty")
    return err, index, question


def _parse(
    row: dict[str, Any],
    line: int,
    path: Path,
    option_cols: list[str],
    base_dir: Path,
    extra: list[str],
    limits: ReadLimits,
) -> SourceRow:
    err, index, question = _row_head(row, line, path)

    options: list[str] = []
    for letter in option_cols:
        value = row[letter]
        if blank(value):
            continue
        if len(options) != LETTERS.index(letter):
            raise err(letter, f"option {letter} is filled but option {LETTERS[len(options)]} is empty")
        options.append(value.strip())
    # A row with no option at all in a multiple-choice file is an open question of it (MMMU's 'open' questions):
    # no key letter, its answer kept as the item's reference; one option alone is a broken row.
    open_question = not options and "answer" in row and not blank(row["answer"])
    if len(options) < 2 and not open_question:
        raise err("A" if not options else "B", f"needs at least two options, found {len(options)}")

    answer = None
    references: dict[str, Any] = {}
    if open_question:
        references = {"references": python_list_answers(row["answer"], "answer", err)}
    elif "answer" in row and not blank(row["answer"]):
        answer = row["answer"].strip().upper()
        if answer not in LETTERS[: len(options)]:
            raise err(
                "answer", f"{row['answer'].strip()!r} is not one of the options {', '.join(LETTERS[: len(options)])}"
            )

    image, more = _images(row, base_dir, err, limits)

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
        meta={k: row[k] for k in extra if not blank(row[k])} | _image_names(row) | references,
        more_images=more,
    )


def _image_names(row: dict[str, Any]) -> dict[str, str]:
    """Beside inline images, `image_path` only names the files VLMEvalKit dumps them to (MMMU's list of names): kept
    as it was, so that an export writes the file's cells again."""
    if "image" in row and not blank(row["image"]) and not blank(row.get("image_path")):
        return {"image_path": row["image_path"]}
    return {}


def _images(
    row: dict[str, Any], base_dir: Path, err: Callable[[str, str], InputError], limits: ReadLimits
) -> tuple[ImageRef, tuple[ImageRef, ...]]:
    """(first image, the rest): a list cell (`image` of base64 texts, or `image_path` of paths) is an item of
    several images, in the list's order; a one-element list is one image (VLMEvalKit's `x[0] if len(x) == 1`)."""
    for column in ("image", "image_path"):
        cell = row.get(column, "")
        if blank(cell) or not (cell.strip().startswith("[") and cell.strip().endswith("]")):
            if column == "image" and not blank(cell):
                break  # one image inline (or a row reference)
            continue
        texts = python_text_list(cell.strip(), column, err)
        if not texts:
            raise err(column, "an empty list of images")
        if len(texts) > limits.max_item_images:  # before anything is decoded
            raise err(column, f"{len(texts)} images; at most {limits.max_item_images} an item")
        refs = [_one_image(text, column, n, base_dir, err, limits) for n, text in enumerate(texts, start=1)]
        first, more = several_images(refs, column, err, limits)
        assert first is not None
        return first, more
    return _image_ref(row, base_dir, err, limits), ()


def _one_image(
    text: str, column: str, n: int, base_dir: Path, err: Callable[[str, str], InputError], limits: ReadLimits
) -> ImageRef:
    """Element n of a list cell: base64 (or a data URL) in `image`, a path in `image_path`."""
    text = text.strip()
    if blank(text):
        raise err(column, f"element {n} is empty")
    if column == "image_path":
        p = Path(text)
        return ImageRef("path", p if p.is_absolute() else base_dir / p)
    try:
        payload = data_url_payload(text)
        return ImageRef("bytes", decode_base64_image(text if payload is None else payload, limits))
    except binascii.Error as exc:
        raise err(column, f"element {n}: undecodable base64 ({exc})") from None
    except ValueError as exc:
        raise err(column, f"element {n}: {exc}") from None


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


# ------------------------------------------------------------------------------------------------ POPE

POPE_SETTINGS = ("random", "popular", "adversarial")
# Images of rows left out (another setting's) that a kept row may refer to by index: at most this many bytes held.
MAX_HELD_IMAGE_BYTES = 2**30


def read_pope_tsv(
    path: Path,
    raw: BinaryIO,
    *,
    images_dir: Path | None = None,
    limits: ReadLimits = ReadLimits(),
    setting: str | None = None,
) -> Iterator[SourceRow | InputError]:
    """VLMEvalKit's yes/no TSV (POPE.tsv): `index, question, answer (Yes/No), image` (base64, or the index of the
    row whose image it shares) or `image_path`, and `category`: the POPE settings the question belongs to
    ("adversarial,popular,random"). One setting per benchmark: `setting` selects its rows; without one, every row
    must belong to the same single setting."""
    table = _table(path, raw, limits)
    header = next(table)
    assert isinstance(header, list)
    missing = [c for c in ("index", "question", "answer") if c not in header]
    if "image" not in header and "image_path" not in header:
        missing.append("image")
    if missing:
        raise InputError(path, 1, "header", f"missing column(s): {', '.join(missing)}")
    if setting is not None and setting not in POPE_SETTINGS:
        raise InputError(path, 0, "--setting", f"{setting!r} is not one of {', '.join(POPE_SETTINGS)}")
    base_dir = images_dir or path.parent
    extra = [h for h in header if h not in KNOWN]
    # index of a row left out -> its image (bytes, or the row its own reference names), for kept rows naming it
    held: dict[int | str, ImageRef] = {}
    held_bytes = 0
    only: str | None = None  # without a setting: the one every row has
    for first_line, row in table:
        if isinstance(row, InputError):
            yield row
            continue
        try:
            parsed, settings = _parse_pope_row(row, first_line, path, base_dir, extra, limits)
        except InputError as exc:
            exc.index = index_or_none(row["index"])
            yield exc
            continue
        if setting is None and settings:
            if len(settings) > 1 or (only is not None and settings[0] != only):
                raise InputError(
                    path,
                    first_line,
                    "category",
                    f"questions of several POPE settings ({', '.join(sorted({*settings, *([only] if only else [])}))}):"
                    " one setting per benchmark; pass --setting random|popular|adversarial",
                )
            only = settings[0]
        if setting is not None and settings and setting not in settings:
            # Left out, but a kept row may name its image: keep the bytes, or where its own reference leads.
            if parsed.image is not None and parsed.image.kind == "bytes":
                assert isinstance(parsed.image.value, bytes)
                held_bytes += len(parsed.image.value)
                if held_bytes > MAX_HELD_IMAGE_BYTES:
                    raise InputError(path, first_line, "image", "over 1 GB of other settings' images held")
                held[parsed.index] = parsed.image
            elif parsed.image is not None and parsed.image.kind == "row":
                held[parsed.index] = held.get(parsed.image.value, parsed.image)  # type: ignore[arg-type]
            continue
        image = parsed.image
        if image is not None and image.kind == "row" and image.value in held:
            image = held[image.value]
        yield SourceRow(
            line=parsed.line,
            index=parsed.index,
            question=parsed.question,
            options=(),
            answer=parsed.answer,
            image=image,
            category=setting or only,
            split=parsed.split,
            meta=parsed.meta,
        )


def _pope_image(
    row: dict[str, Any], base_dir: Path, err: Callable[[str, str], InputError], limits: ReadLimits
) -> ImageRef:
    """POPE asks about objects in one image: a list of several is refused."""
    first, more = _images(row, base_dir, err, limits)
    if more:
        raise err("image" if not blank(row.get("image")) else "image_path", f"{1 + len(more)} images; POPE's hold one")
    return first


def _parse_pope_row(
    row: dict[str, Any], line: int, path: Path, base_dir: Path, extra: list[str], limits: ReadLimits
) -> tuple[SourceRow, list[str]]:
    err, index, question = _row_head(row, line, path)
    answer = None if blank(row["answer"]) else row["answer"].strip().lower()
    if answer is not None and answer not in ("yes", "no"):
        open_hint = "if this is an open VQA file: --format vqa-tsv"
        raise err("answer", f"{row['answer'].strip()[:40]!r} is not Yes or No ({open_hint})")
    settings: list[str] = []
    if not blank(row.get("category", "")):
        settings = sorted({s.strip().lower() for s in row["category"].split(",") if s.strip()})
        unknown = [s for s in settings if s not in POPE_SETTINGS]
        if unknown:
            raise err("category", f"{unknown[0][:40]!r} is not a POPE setting ({', '.join(POPE_SETTINGS)})")
    meta = {k: row[k] for k in extra if not blank(row[k])}
    if settings:
        meta["settings"] = ",".join(settings)
    return (
        SourceRow(
            line=line,
            index=index,
            question=question,
            options=(),
            answer=answer,
            image=_pope_image(row, base_dir, err, limits),
            split=None if blank(row.get("split", "")) else row["split"].strip(),
            meta=meta,
        ),
        settings,
    )


# ------------------------------------------------------------------------------------------------ VQA / captions

# What VLMEvalKit asks of a TSV without a question column (COCO_VAL): ImageCaptionDataset.load_data's prompt.
CAPTION_PROMPT = (
    "Please describe this image in general. Directly provide the description, "
    'do not include prefix like "This image depicts". '
)


def read_vqa_tsv(
    path: Path, raw: BinaryIO, *, images_dir: Path | None = None, limits: ReadLimits = ReadLimits()
) -> Iterator[SourceRow | InputError]:
    """VLMEvalKit's VQA and caption TSVs: `index, question, answer, image` (base64 or a row's index) or `image_path`,
    and any of category, split, hint. No options: each row is an open question whose `answer` cell holds its
    reference answers (one text, or a Python list of texts, repeats kept: VQA accuracy counts them), stored as the
    item's meta `references`; no answer (a TEST split) means none. COCO_VAL has no question column: every row gets
    VLMEvalKit's caption prompt (CAPTION_PROMPT), as VLMEvalKit asks it."""
    table = _table(path, raw, limits)
    header = next(table)
    assert isinstance(header, list)
    options = [c for c in LETTERS if c in header]
    if options:
        raise InputError(
            path, 1, "header", f"option column(s) {' '.join(options)}: a multiple-choice TSV (--format mmbench-tsv)"
        )
    missing = [] if "index" in header else ["index"]
    if "image" not in header and "image_path" not in header:
        missing.append("image")
    if missing:
        raise InputError(path, 1, "header", f"missing column(s): {', '.join(missing)}")
    base_dir = images_dir or path.parent
    extra = [h for h in header if h not in KNOWN]
    for first_line, row in table:
        if isinstance(row, InputError):
            yield row
            continue
        try:
            yield _parse_open(row, first_line, path, base_dir, extra, limits)
        except InputError as exc:
            exc.index = index_or_none(row["index"])
            yield exc


def _parse_open(
    row: dict[str, Any], line: int, path: Path, base_dir: Path, extra: list[str], limits: ReadLimits
) -> SourceRow:
    err, index, question = _row_head(row, line, path, missing_question=CAPTION_PROMPT)
    meta: dict[str, Any] = {k: row[k] for k in extra if not blank(row[k])}
    if not blank(row.get("answer")):
        references = python_list_answers(row["answer"], "answer", err)
        if references:
            meta["references"] = references

    def get(*names: str) -> str | None:
        return next((row[n].strip() for n in names if n in row and not blank(row[n])), None)

    image, more = _images(row, base_dir, err, limits)
    return SourceRow(
        line=line,
        index=index,
        question=question,
        options=(),
        answer=None,
        image=image,
        hint=get("hint"),
        category=get("category"),
        l2_category=get("l2-category", "l2_category"),
        split=get("split"),
        meta=meta | _image_names(row),
        more_images=more,
    )


# A TSV without option columns is POPE's yes/no layout when the answers of its first rows are all Yes or No.
_SNIFF_ROWS = 50
_SNIFF_BYTES = 64 * 2**20


def refine(path: Path, raw: BinaryIO) -> str | None:
    """For a TSV without option columns: pope-tsv when it has a question and its first rows' answers are all Yes or
    No (VLMEvalKit's yes/no layout), else vqa-tsv (its VQA and caption layouts: answers are texts or lists of them;
    COCO_VAL has no question column; a TEST split no answers)."""
    first = raw.readline(1 << 16).decode("utf-8", "replace").rstrip("\r\n")
    header = {h.strip().lstrip("\ufeff") for h in first.split("\t")}
    if "A" in header or "B" in header:
        return None
    if not {"answer", "question"} <= header:
        return "vqa-tsv"
    raw.seek(0)
    answers: list[str] = []
    try:
        table = _table(path, raw, ReadLimits())
        next(table)
        for n, (_, row) in enumerate(table):
            if n >= _SNIFF_ROWS or raw.tell() > _SNIFF_BYTES:
                break
            if isinstance(row, dict) and not blank(row["answer"]):
                answers.append(row["answer"].strip().lower())
    except InputError:  # the reader reports what is wrong with the file, line by line
        pass
    return "pope-tsv" if answers and all(a in ("yes", "no") for a in answers) else "vqa-tsv"
