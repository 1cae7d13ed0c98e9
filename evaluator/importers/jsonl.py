"""JSON readers: vlmdesk's generic multiple-choice JSONL, and POPE question files (JSON Lines or one JSON array).

Generic JSONL, one object per line:
  {"index": 1, "question": "...", "options": ["cat", "dog"], "answer": "B", "image": "images/x.jpg",
   "hint": "", "category": "...", "l2_category": "...", "split": "dev"}
`options` is a list of texts (or an object letter -> text); `answer` a letter or a 0-based index (optional);
`image` a path relative to the file (or to --images), a data URL or base64; `index` defaults to the line number.
"""
from __future__ import annotations

import base64
import binascii
import json
import re
from pathlib import Path
from typing import Iterator

from evaluator.importers.common import (
    LETTERS, MAX_OPTIONS, ImageRef, InputError, SourceRow, blank, decoded_lines, index_or_none, normalise_index,
)

_DATA_URL = re.compile(r"^data:image/[\w.+-]+;base64,", re.IGNORECASE)
_POPE_SETTINGS = ("random", "popular", "adversarial")
_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")


def _records(path: Path, raw) -> Iterator[tuple[int, object] | InputError]:
    """(line, parsed value) per JSON Lines record, or per element when the file is one JSON array."""
    bad_encoding: dict[int, InputError] = {}  # line -> its encoding error, reported in place of the record
    lines = decoded_lines(raw, path, bad_encoding)
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
    number, text = first
    for number, text in _chain([first], enumerate(lines, start=number + 1)):
        if number in bad_encoding:
            yield bad_encoding.pop(number)
            continue
        if not text.strip():
            continue
        try:
            yield number, json.loads(text)
        except json.JSONDecodeError as exc:
            yield InputError(path, number, "json", f"not valid JSON ({exc.msg} at column {exc.colno})"
                             + (" — truncated last line?" if not text.endswith("\n") else ""))


def _chain(*iterables):
    for it in iterables:
        yield from it


def _array_records(path: Path, first: tuple[int, str], lines,
                   bad_encoding: dict) -> Iterator[tuple[int, object] | InputError]:
    # One JSON array: decode element by element so each error and row carries the line it starts on.
    start_line = first[0]
    text = first[1] + "".join(lines)
    decoder = json.JSONDecoder()
    pos = text.index("[") + 1
    ws = re.compile(r"[\s,]*")
    counted = [0, start_line]  # newlines are counted incrementally (positions only grow): linear, not quadratic

    def line_at(p: int) -> int:
        counted[1] += text.count("\n", counted[0], p)
        counted[0] = p
        return counted[1]

    while True:
        pos = ws.match(text, pos).end()
        line = line_at(pos)
        if pos >= len(text):
            yield InputError(path, line, "json", "the JSON array is not closed — truncated file?")
            return
        if text[pos] == "]":
            return
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            # Undecodable bytes at or before the failure are the likelier cause: report those instead.
            first_bad = min(bad_encoding, default=None)
            if first_bad is not None and first_bad <= line_at(max(exc.pos, pos)):
                yield bad_encoding[first_bad]
            else:
                yield InputError(path, line, "json", f"not valid JSON ({exc.msg})"
                                 + (" — truncated file?" if exc.pos >= len(text.rstrip()) else ""))
            return
        encoding = [bad_encoding.pop(n) for n in range(line, line_at(pos) + 1) if n in bad_encoding]
        yield encoding[0] if encoding else (line, value)


def _inline_or_path(value, base_dir: Path, err) -> ImageRef:
    if not isinstance(value, str) or blank(value):
        raise err("image", "missing (a path, a data URL or base64)")
    value = value.strip()
    match = _DATA_URL.match(value)
    # Plain base64 may contain "/" anywhere (a JPEG's always starts "/9j/"); a path is not 64+ base64 characters
    # (no dot) whose length is a multiple of 4.
    plain_b64 = len(value) >= 64 and len(value) % 4 == 0 and _BASE64.fullmatch(value)
    if match or plain_b64 or (len(value) > 256 and "/" not in value[:64] and "." not in value[-6:]):
        try:
            return ImageRef("bytes", base64.b64decode(value[match.end():] if match else value, validate=True))
        except (binascii.Error, ValueError) as exc:
            raise err("image", f"undecodable base64 ({exc})") from None
    p = Path(value)
    return ImageRef("path", p if p.is_absolute() else base_dir / p)


def read_jsonl(path: Path, raw, *, images_dir: Path | None = None) -> Iterator[SourceRow | InputError]:
    base_dir = images_dir or path.parent
    for record_no, rec in enumerate(_records(path, raw), start=1):
        if isinstance(rec, InputError):
            yield rec
            continue
        line, obj = rec
        try:
            yield _parse_mcq(obj, line, record_no, path, base_dir)
        except InputError as exc:
            exc.index = index_or_none(obj.get("index", record_no)) if isinstance(obj, dict) else None
            yield exc


def _parse_mcq(obj, line: int, record_no: int, path: Path, base_dir: Path) -> SourceRow:
    def err(field: str, what: str) -> InputError:
        return InputError(path, line, field, what)

    if not isinstance(obj, dict):
        raise err("row", f"expected a JSON object, got {type(obj).__name__}")
    try:
        index = normalise_index(obj.get("index", record_no))
    except (ValueError, TypeError):
        raise err("index", f"not a valid index: {obj.get('index')!r}") from None
    question = obj.get("question")
    if not isinstance(question, str) or not question.strip():
        raise err("question", "missing or empty")
    raw_options = obj.get("options")
    if isinstance(raw_options, dict):
        keys = [str(k).strip().upper() for k in raw_options]
        if keys != list(LETTERS[: len(keys)]):
            raise err("options", f"letters must run A, B, C… in order, got {', '.join(keys)}")
        raw_options = list(raw_options.values())
    if not isinstance(raw_options, list) or not all(isinstance(o, (str, int, float)) for o in raw_options):
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
            raise err("answer", f"{answer!r} is not one of the options {', '.join(LETTERS[:len(options)])}")
    else:
        answer = None

    def text(name):
        value = obj.get(name)
        return None if blank(value) else str(value).strip()

    known = {"index", "question", "options", "answer", "image", "hint", "category", "l2_category", "split"}
    return SourceRow(
        line=line, index=index, question=question.strip(), options=tuple(options), answer=answer,
        image=_inline_or_path(obj.get("image"), base_dir, err),
        hint=text("hint"), category=text("category"), l2_category=text("l2_category"), split=text("split"),
        meta={k: v for k, v in obj.items() if k not in known},
    )


def pope_setting_from_name(path: Path) -> str | None:
    stem = path.stem.lower()
    found = [s for s in _POPE_SETTINGS if s in stem]
    return found[0] if len(found) == 1 else None


def read_pope(path: Path, raw, *, images_dir: Path | None = None) -> Iterator[SourceRow | InputError]:
    """POPE question files: `question_id`, `image` (a file name inside --images), `text`, `label` (yes/no)."""
    for rec in _records(path, raw):
        if isinstance(rec, InputError):
            yield rec
            continue
        line, obj = rec
        try:
            yield _parse_pope(obj, line, path, images_dir)
        except InputError as exc:
            exc.index = index_or_none(obj.get("question_id")) if isinstance(obj, dict) else None
            yield exc


def _parse_pope(obj, line: int, path: Path, images_dir: Path | None) -> SourceRow:
    def err(field: str, what: str) -> InputError:
        return InputError(path, line, field, what)

    if not isinstance(obj, dict):
        raise err("row", f"expected a JSON object, got {type(obj).__name__}")
    for name in ("question_id", "image", "text", "label"):
        if name not in obj:
            raise err(name, "missing")
    try:
        index = normalise_index(obj["question_id"])
    except (ValueError, TypeError):
        raise err("question_id", f"not a valid id: {obj['question_id']!r}") from None
    text = obj["text"]
    if not isinstance(text, str) or not text.strip():
        raise err("text", "missing or empty")
    label = obj["label"]
    if not isinstance(label, str) or label.strip().lower() not in ("yes", "no"):
        raise err("label", f"must be 'yes' or 'no', got {label!r}")
    image_name = obj["image"]
    if not isinstance(image_name, str) or not image_name.strip():
        raise err("image", "missing or empty")
    image = ImageRef("path", images_dir / image_name.strip()) if images_dir else None
    return SourceRow(
        line=line, index=index, question=text.strip(), options=(), answer=label.strip().lower(), image=image,
        meta={"image_name": image_name.strip(), **{k: v for k, v in obj.items()
                                                   if k not in ("question_id", "image", "text", "label")}},
    )
