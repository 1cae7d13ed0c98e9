"""What every importer shares: the row type the readers yield, one-line input errors, image checks."""
from __future__ import annotations

import hashlib
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from PIL import Image, UnidentifiedImageError

from db.errors import UserError

# MMBench and VLMEvalKit put circular copies of question i at index i + k * CIRCULAR_STRIDE.
CIRCULAR_STRIDE = 1_000_000
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
# Z is the extractors' "none of the options / refusal" choice, so an item has at most 25 options (A-Y).
MAX_OPTIONS = 25
# Above this many pixels an image is treated as a decompression bomb (PIL's own warning threshold).
MAX_PIXELS = Image.MAX_IMAGE_PIXELS or 89_478_485
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class InputError(UserError):
    """Bad input, reported as one line `FILE:LINE: field: what is wrong` (LINE 0 means the file as a whole)."""

    def __init__(self, file: str | Path, line: int, field: str, what: str, *, index=None):
        # One line, always: a value quoted from the file may hold newlines or other control characters.
        what = _CONTROL.sub(lambda m: repr(m.group())[1:-1], what)
        super().__init__(f"{file}:{line}: {field}: {what}")
        self.file, self.line, self.field, self.what = str(file), line, field, what
        self.index = index  # the row's index when known, so rows that depend on a skipped row are skipped too


@dataclass(frozen=True)
class ImageRef:
    """Where a row's image comes from: inline bytes, a file, or another row of the same file (by index)."""

    kind: str  # "bytes" | "path" | "row"
    value: bytes | Path | int | str


@dataclass(frozen=True)
class SourceRow:
    """One row of a benchmark file, parsed but not yet checked against the rest of the file."""

    line: int
    index: int | str
    question: str
    options: tuple[str, ...]
    answer: str | None  # an option letter (mcq), "yes"/"no" (yesno), or None (e.g. TEST splits)
    image: ImageRef | None
    hint: str | None = None
    category: str | None = None
    l2_category: str | None = None
    split: str | None = None
    meta: dict = field(default_factory=dict)


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def normalise_index(value) -> int | str:
    """Integer-looking indexes become ints (so they sort and compare as numbers); anything else stays text."""
    if isinstance(value, bool):
        raise ValueError("not an index")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        # SQLite integers are 64-bit: a larger number is kept as text rather than overflowing at insert time.
        return value if _INT64_MIN <= value <= _INT64_MAX else str(value)
    text = str(value).strip()
    if not text:
        raise ValueError("empty")
    try:
        number = int(text)
    except ValueError:
        return text
    return number if _INT64_MIN <= number <= _INT64_MAX else text


def blank(value) -> bool:
    """pandas writes missing cells as '' or 'nan'; both mean absent."""
    return value is None or (isinstance(value, str) and value.strip().lower() in ("", "nan"))


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_image(data: bytes) -> tuple[str, int, int]:
    """Decode fully (catches truncation) after a size check (catches bombs). Returns (mime, width, height).

    Raises ValueError with a short reason.
    """
    try:
        with Image.open(io.BytesIO(data)) as img:
            width, height = img.size
            if width * height > MAX_PIXELS:
                raise ValueError(f"decompression bomb: {width}x{height} pixels is over the limit of {MAX_PIXELS}")
            fmt = img.format
            img.load()
    except Image.DecompressionBombError as exc:
        raise ValueError(f"decompression bomb: {exc}") from None
    except (UnidentifiedImageError, OSError, SyntaxError, Image.DecompressionBombWarning) as exc:
        raise ValueError(f"not an image PIL can open ({exc})") from None
    mime = Image.MIME.get(fmt or "", "application/octet-stream")
    return mime, width, height


def decoded_lines(raw: io.BufferedReader, file: Path, bad: dict | None = None) -> Iterator[str]:
    """Lines of a UTF-8 file (a BOM is dropped), decoded one by one so an encoding error names its line.

    Without `bad`, an encoding error is raised. With it, the error is recorded as bad[line] and the line is still
    yielded (undecodable bytes as lone surrogates), so the reader can report that one row and go on (--skip-bad).
    """
    for number, line in enumerate(raw, start=1):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            error = InputError(file, number, "encoding",
                               f"not UTF-8 (byte 0x{line[exc.start]:02x} at column {exc.start + 1})")
            if bad is None:
                raise error from None
            bad[number] = error
            text = line.decode("utf-8", "surrogateescape")
        if number == 1 and text.startswith("\ufeff"):
            text = text[1:]
        yield text


def letters_for(options: Iterable[str]) -> str:
    return LETTERS[: len(tuple(options))]


def index_or_none(value) -> int | str | None:
    try:
        return normalise_index(value)
    except (ValueError, TypeError):
        return None
