"""JSON readers: vlmdesk's generic multiple-choice JSONL, and POPE question files (JSON Lines or one JSON array).

Generic JSONL, one object per line:
  {"index": 1, "question": "...", "options": ["cat", "dog"], "answer": "B", "image": "images/x.jpg",
   "hint": "", "category": "...", "l2_category": "...", "split": "dev"}
`options` is a list of texts (or an object letter -> text); `answer` a letter or a 0-based index (optional);
`image` a path relative to the file (or to --images), a data URL or base64; `index` defaults to the line number.
An item of several images gives `images` instead: a list of them, in order, each what `image` may be.
A file whose lines have no `options` is an open benchmark (kind `open`): `answer`, when given, is a reference answer
text or a list of them (VQAv2's ten), kept in the item's meta as `references` (no answer key: open runs are scored
against them by the open metrics, never by extraction). The first question
decides; a line of the other kind is bad input.
"""

from __future__ import annotations

import binascii
import json
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from evaluator.formats.importers.common import (
    MAX_JSON_ARRAY_BYTES,
    MAX_JSON_DEPTH,
    DuplicateKey,
    ImageRef,
    InputError,
    JsonTooDeep,
    ReadLimits,
    SourceRow,
    blank,
    check_texts,
    data_url_payload,
    decode_base64_image,
    decoded_lines,
    finite,
    index_or_none,
    json_loads,
    json_too_deep,
    no_duplicate_keys,
    normalise_index,
    reference_answers,
    several_images,
)
from evaluator.scoring.choices import LETTERS, MAX_OPTIONS, YES_NO

# json raises a plain ValueError for a number longer than Python's int() accepts.
_TOO_MANY_DIGITS = "not valid JSON (a number of more than 4,300 digits)"
_POPE_SETTINGS = ("random", "popular", "adversarial")
_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")


T = TypeVar("T")


def _records(path: Path, raw: BinaryIO, limits: ReadLimits) -> Iterator[tuple[int, object] | InputError]:
    """(line, parsed value) per JSON Lines record, or per element when the file is one JSON array."""
    bad_encoding: dict[int, InputError] = {}  # line -> its encoding error, reported in place of the record
    lines = decoded_lines(raw, path, bad_encoding, limits.max_line_bytes)
    first = None
    for number, text in enumerate(lines, start=1):
        if text.strip():
            first = (number, text)
            break
    if first is None:
        return
    if first[1].lstrip().startswith("["):
        yield from _array_records(path, first, lines, bad_encoding)
        return
    for number, text in _chain([first], enumerate(lines, start=first[0] + 1)):
        if number in bad_encoding:
            yield bad_encoding.pop(number)
            continue
        if not text.strip():
            continue
        try:
            yield number, json_loads(text)
        except DuplicateKey as exc:
            yield InputError(path, number, exc.key[:60], "given twice in one record")
        except (JsonTooDeep, RecursionError):  # RecursionError: the last line of defence
            yield InputError(path, number, "json", f"nested deeper than {MAX_JSON_DEPTH} levels")
        except json.JSONDecodeError as exc:
            yield InputError(
                path,
                number,
                "json",
                f"not valid JSON ({exc.msg} at column {exc.colno})"
                + (" — truncated last line?" if not text.endswith("\n") else ""),
            )
        except ValueError:
            yield InputError(path, number, "json", _TOO_MANY_DIGITS)


def _chain(*iterables: Iterable[T]) -> Iterator[T]:
    for it in iterables:
        yield from it


def _array_records(
    path: Path, first: tuple[int, str], lines: Iterator[str], bad_encoding: dict[int, InputError]
) -> Iterator[tuple[int, object] | InputError]:
    # One JSON array: decode element by element so each error and row carries the line it starts on.
    start_line = first[0]
    parts, size = [first[1]], len(first[1])
    for chunk in lines:
        size += len(chunk)
        if size > MAX_JSON_ARRAY_BYTES:
            yield InputError(
                path,
                start_line,
                "json",
                f"one JSON array of more than {MAX_JSON_ARRAY_BYTES // 2**20} "
                "MB; write it as JSON Lines (one record per line)",
            )
            return
        parts.append(chunk)
    text = "".join(parts)
    del parts
    decoder = json.JSONDecoder(object_pairs_hook=no_duplicate_keys)
    pos = text.index("[") + 1
    ws = re.compile(r"[\s,]*")
    counted = [0, start_line]  # newlines are counted incrementally (positions only grow): linear, not quadratic

    def line_at(p: int) -> int:
        counted[1] += text.count("\n", counted[0], p)
        counted[0] = p
        return counted[1]

    deep = json_too_deep(text, pos)  # where an element nests too deep: decoding stops before it
    while True:
        gap = ws.match(text, pos)
        assert gap is not None  # [\s,]* matches anywhere
        pos = gap.end()
        line = line_at(pos)
        if pos >= len(text):
            yield InputError(path, line, "json", "the JSON array is not closed — truncated file?")
            return
        if text[pos] == "]":
            return
        try:
            start = pos
            value, pos = decoder.raw_decode(text, pos)
            if deep is not None and start <= deep < pos:
                raise RecursionError
        except RecursionError:
            yield InputError(path, line, "json", f"nested deeper than {MAX_JSON_DEPTH} levels")
            return
        except DuplicateKey as exc:
            yield InputError(path, line, exc.key[:60], "given twice in one record")
            return
        except ValueError as exc:
            if not isinstance(exc, json.JSONDecodeError):
                yield InputError(path, line, "json", _TOO_MANY_DIGITS)
                return
            # Undecodable bytes at or before the failure are the likelier cause: report those instead.
            first_bad = min(bad_encoding, default=None)
            if first_bad is not None and first_bad <= line_at(max(exc.pos, pos)):
                yield bad_encoding[first_bad]
            else:
                yield InputError(
                    path,
                    line,
                    "json",
                    f"not valid JSON ({exc.msg})" + (" — truncated file?" if exc.pos >= len(text.rstrip()) else ""),
                )
            return
        encoding = [bad_encoding.pop(n) for n in range(line, line_at(pos) + 1) if n in bad_encoding]
        yield encoding[0] if encoding else (line, value)


def _inline_or_path(
    value: object, base_dir: Path, err: Callable[[str, str], InputError], limits: ReadLimits
) -> ImageRef:
    if not isinstance(value, str) or blank(value):
        raise err("image", "missing (a path, a data URL or base64)")
    value = value.strip()
    try:
        payload = data_url_payload(value)
    except ValueError as exc:
        raise err("image", str(exc)) from None
    # Plain base64 may contain "/" anywhere (a JPEG's always starts "/9j/"); a path is not 64+ base64 characters
    # (no dot) whose length is a multiple of 4.
    plain_b64 = len(value) >= 64 and len(value) % 4 == 0 and _BASE64.fullmatch(value)
    if payload is not None or plain_b64 or (len(value) > 256 and "/" not in value[:64] and "." not in value[-6:]):
        try:
            return ImageRef("bytes", decode_base64_image(value if payload is None else payload, limits))
        except (binascii.Error, ValueError) as exc:
            raise err("image", f"undecodable base64 ({exc})" if isinstance(exc, binascii.Error) else str(exc)) from None
    p = Path(value)
    return ImageRef("path", p if p.is_absolute() else base_dir / p)


def _item_images(
    obj: dict[str, Any], base_dir: Path, err: Callable[[str, str], InputError], limits: ReadLimits
) -> tuple[ImageRef, tuple[ImageRef, ...]]:
    """`image` (one), or `images`: a list of several, in order, each what `image` may be (a path, a data URL or
    base64)."""
    if "images" not in obj:
        return _inline_or_path(obj.get("image"), base_dir, err, limits), ()
    if obj.get("image") is not None:
        raise err("images", "given with image; an item's images are one list (or image alone)")
    listed = obj["images"]
    if not isinstance(listed, list) or not listed:
        raise err("images", f"a list of one or more images is expected, got {_short(listed)}")
    if len(listed) > limits.max_item_images:  # before anything is decoded
        raise err("images", f"{len(listed)} images; at most {limits.max_item_images} an item")

    def element(n: int) -> Callable[[str, str], InputError]:
        return lambda field, what: err("images", f"element {n}: {what}")

    refs = [_inline_or_path(value, base_dir, element(n), limits) for n, value in enumerate(listed, start=1)]
    first, more = several_images(refs, "images", err, limits)
    assert first is not None
    return first, more


def _check_record(obj: object, err: Callable[[str, str], InputError]) -> None:
    """Every text of a record (keys, values, nested values) must be storable: no NUL, no lone surrogate."""
    if not isinstance(obj, dict):
        raise err("row", f"expected a JSON object, got {type(obj).__name__}")
    for key, value in obj.items():
        check_texts(key, "row", err)
        check_texts(value, key, err)


def read_jsonl(
    path: Path, raw: BinaryIO, *, images_dir: Path | None = None, limits: ReadLimits = ReadLimits()
) -> Iterator[SourceRow | InputError]:
    base_dir = images_dir or path.parent
    first: tuple[int, bool] | None = None  # (line, open) of the first good question: it decides the file's kind
    for record_no, rec in enumerate(_records(path, raw, limits), start=1):
        if isinstance(rec, InputError):
            yield rec
            continue
        line, obj = rec
        try:
            row = _parse_mcq(obj, line, record_no, path, base_dir, limits)
            is_open = not row.options
            if first is None:
                first = (line, is_open)
            elif is_open != first[1]:
                what = "this file's first question (line {}) {}".format(
                    first[0], "has none: an open benchmark" if first[1] else "has options"
                )
                raise InputError(path, line, "options", f"{'missing' if is_open else 'given'}, but {what}")
            yield row
        except InputError as exc:
            exc.index = index_or_none(obj.get("index", record_no)) if isinstance(obj, dict) else None
            yield exc


_KNOWN = {"index", "question", "options", "answer", "image", "images", "hint", "category", "l2_category", "split"}


def _parse_mcq(obj: Any, line: int, record_no: int, path: Path, base_dir: Path, limits: ReadLimits) -> SourceRow:
    def err(field: str, what: str) -> InputError:
        return InputError(path, line, field, what)

    _check_record(obj, err)
    try:
        index = normalise_index(obj.get("index", record_no))
    except ValueError as exc:
        raise err("index", f"not a valid index: {_short(obj.get('index'))} ({exc})") from None
    question = obj.get("question")
    if not isinstance(question, str) or not question.strip():
        raise err("question", "missing or empty")
    raw_options = obj.get("options")
    if raw_options is None:
        return _open_row(obj, line, index, question, base_dir, limits, err)
    if isinstance(raw_options, dict):
        keys = [str(k).strip().upper() for k in raw_options]
        if keys != list(LETTERS[: len(keys)]):
            raise err("options", f"letters must run A, B, C… in order, got {', '.join(keys)}")
        raw_options = list(raw_options.values())
    if not isinstance(raw_options, list) or not all(
        isinstance(o, (str, int, float)) and not isinstance(o, bool) and finite(o) for o in raw_options
    ):
        raise err("options", "must be a list of texts (or an object letter -> text)")
    options = [str(o).strip() for o in raw_options]
    if len(options) < 2 or len(options) > MAX_OPTIONS:
        raise err("options", f"needs 2 to {MAX_OPTIONS} options (Z means 'none of them'), found {len(options)}")
    if any(not o for o in options):
        raise err("options", f"option {LETTERS[options.index('')]} is empty")

    answer = obj.get("answer")
    if answer is not None and not (isinstance(answer, str) and blank(answer)):
        if isinstance(answer, int) and not isinstance(answer, bool):
            if not 0 <= answer < len(options):
                raise err("answer", f"index {answer} is out of range for {len(options)} options")
            answer = LETTERS[answer]
        elif isinstance(answer, str) and answer.strip().upper() in LETTERS[: len(options)]:
            answer = answer.strip().upper()
        else:
            raise err("answer", f"{answer!r} is not one of the options {', '.join(LETTERS[: len(options)])}")
    else:
        answer = None

    def text(name: str) -> str | None:
        value = obj.get(name)
        return None if blank(value) else str(value).strip()

    image, more = _item_images(obj, base_dir, err, limits)
    return SourceRow(
        line=line,
        index=index,
        question=question.strip(),
        options=tuple(options),
        answer=answer,
        image=image,
        more_images=more,
        hint=text("hint"),
        category=text("category"),
        l2_category=text("l2_category"),
        split=text("split"),
        meta={k: v for k, v in obj.items() if k not in _KNOWN},
    )


def _open_row(
    obj: dict[str, Any],
    line: int,
    index: int | str,
    question: str,
    base_dir: Path,
    limits: ReadLimits,
    err: Callable[[str, str], InputError],
) -> SourceRow:
    """A question without options: an open item, with optional reference answers (meta `references`)."""
    meta = {k: v for k, v in obj.items() if k not in _KNOWN}
    if obj.get("answer") is not None:
        references = reference_answers(obj["answer"], "answer", err)
        if references:
            meta["references"] = references

    def text(name: str) -> str | None:
        value = obj.get(name)
        return None if blank(value) else str(value).strip()

    image, more = _item_images(obj, base_dir, err, limits)
    return SourceRow(
        line=line,
        index=index,
        question=question.strip(),
        options=(),
        answer=None,
        image=image,
        more_images=more,
        hint=text("hint"),
        category=text("category"),
        l2_category=text("l2_category"),
        split=text("split"),
        meta=meta,
    )


def pope_setting_from_name(path: Path) -> str | None:
    stem = path.stem.lower()
    found = [s for s in _POPE_SETTINGS if s in stem]
    return found[0] if len(found) == 1 else None


def read_pope(
    path: Path, raw: BinaryIO, *, images_dir: Path | None = None, limits: ReadLimits = ReadLimits()
) -> Iterator[SourceRow | InputError]:
    """POPE question files: `question_id`, `image` (a file name inside --images), `text`, `label` (yes/no)."""
    for rec in _records(path, raw, limits):
        if isinstance(rec, InputError):
            yield rec
            continue
        line, obj = rec
        try:
            yield _parse_pope(obj, line, path, images_dir)
        except InputError as exc:
            exc.index = index_or_none(obj.get("question_id")) if isinstance(obj, dict) else None
            yield exc


def _parse_pope(obj: Any, line: int, path: Path, images_dir: Path | None) -> SourceRow:
    def err(field: str, what: str) -> InputError:
        return InputError(path, line, field, what)

    _check_record(obj, err)
    for name in ("question_id", "image", "text", "label"):
        if name not in obj:
            raise err(name, "missing")
    try:
        index = normalise_index(obj["question_id"])
    except ValueError as exc:
        raise err("question_id", f"not a valid id: {_short(obj['question_id'])} ({exc})") from None
    text = obj["text"]
    if not isinstance(text, str) or not text.strip():
        raise err("text", "missing or empty")
    label = obj["label"]
    if not isinstance(label, str) or label.strip().lower() not in YES_NO:
        raise err("label", f"must be 'yes' or 'no', got {label!r}")
    image_name = obj["image"]
    if not isinstance(image_name, str) or not image_name.strip():
        raise err("image", "missing or empty")
    image = ImageRef("path", images_dir / image_name.strip()) if images_dir else None
    return SourceRow(
        line=line,
        index=index,
        question=text.strip(),
        options=(),
        answer=label.strip().lower(),
        image=image,
        meta={
            "image_name": image_name.strip(),
            **{k: v for k, v in obj.items() if k not in ("question_id", "image", "text", "label")},
        },
    )


def _short(value: object) -> str:
    """A JSON value quoted in an error, as JSON, cut to a readable length."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."
