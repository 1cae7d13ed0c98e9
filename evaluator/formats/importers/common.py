"""What every importer shares: the row type the readers yield, one-line input errors, image checks."""

from __future__ import annotations

import ast
import base64
import hashlib
import io
import json
import math
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from db.errors import InvalidInput, UserError
from db.platform_io import open_no_wait
from db.workspace import in_use

# MMBench and VLMEvalKit put circular copies of question i at index i + k * CIRCULAR_STRIDE.
CIRCULAR_STRIDE = 1_000_000
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

# Limits on what an import reads (every read of a file is bounded). The image cap is `--max-image-mb`.
DEFAULT_MAX_IMAGE_MB = 64
MAX_SOURCE_BYTES = 32 * 2**30  # a benchmark file is a regular file of at most this size
MAX_JSON_ARRAY_BYTES = 128 * 2**20  # a file that is one JSON array is held in memory whole: JSON Lines has no cap
MAX_JSON_DEPTH = 64  # nesting of arrays/objects; Python's json recurses, so 100,000 levels would overflow the stack
TEXT_SLACK_BYTES = 16 * 2**20  # what a line may hold besides an item's base64 images
# An item's images (issue 37): at most this many (MMMU's items hold up to 7, MMIU's a few dozen), of at most
# ReadLimits.max_item_bytes together.
MAX_ITEM_IMAGES = 64


def location(file: str | Path, line: int) -> str:
    """`FILE:LINE`, or `FILE` alone for line 0 (the file as a whole)."""
    return f"{file}:{line}" if line else str(file)


class InputError(UserError):
    """Bad input, reported as one line `FILE:LINE: field: what is wrong` (`FILE: field: …` when LINE is 0: the file
    as a whole)."""

    def __init__(self, file: str | Path, line: int, field: str, what: str, *, index: int | str | None = None):
        # One line, always: a value quoted from the file may hold newlines or other control characters.
        what = _CONTROL.sub(lambda m: repr(m.group())[1:-1], what)
        super().__init__(f"{location(file, line)}: {field}: {what}")
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
    meta: dict[str, Any] = field(default_factory=dict)
    more_images: tuple[ImageRef, ...] = ()  # the item's second image on, in order (never with a "row" image)


def several_images(
    refs: list[ImageRef], field: str, err: Callable[[str, str], Exception], limits: ReadLimits
) -> tuple[ImageRef | None, tuple[ImageRef, ...]]:
    """(first, the rest) of an item's images, in order, within the limits on their number and inline bytes."""
    if len(refs) > limits.max_item_images:
        raise err(field, f"{len(refs)} images; at most {limits.max_item_images} an item")
    inline = sum(len(r.value) for r in refs if isinstance(r.value, bytes))
    if inline > limits.max_item_bytes:
        raise err(field, f"images of {_mb(inline)} together; at most {_mb(limits.max_item_bytes)} an item")
    return (refs[0] if refs else None), tuple(refs[1:])


@dataclass(frozen=True)
class ReadLimits:
    """How far an import may read: image files and inline images up to `max_image_bytes`; image files only inside
    the benchmark file's folder (or --images) unless `allow_outside`."""

    max_image_bytes: int = DEFAULT_MAX_IMAGE_MB * 2**20
    allow_outside: bool = False
    max_item_images: int = MAX_ITEM_IMAGES

    @property
    def max_item_bytes(self) -> int:
        """What an item's inline images may hold together: one image's cap (a line, a TSV cell, a parquet row holds at
        most that much image, as before items had several; MMMU's seven images take a few MB)."""
        return self.max_image_bytes

    @property
    def max_line_bytes(self) -> int:
        """A physical line (or TSV cell) holds at most an item's base64 images plus some text."""
        return self.max_item_bytes * 4 // 3 + TEXT_SLACK_BYTES


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_DIGITS = re.compile(r"[+-]?[0-9]+")


def normalise_index(value: object) -> int | str:
    """An index is a 64-bit integer (integer-looking text becomes one, so indexes sort and compare as numbers) or a
    non-empty text. Raises ValueError with the reason for anything else (bools, fractions, NaN, objects, numbers
    SQLite cannot store)."""
    if isinstance(value, bool):
        raise ValueError("a JSON boolean is not an index")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError("not a whole number")
        value = int(value)
    if isinstance(value, int):
        number = value
    elif isinstance(value, str):
        text = value.strip()
        if blank(text):
            raise ValueError("empty or nan")
        try:
            number = int(text)
        except ValueError:  # not a number, or too many digits for int()
            if _DIGITS.fullmatch(text):
                raise ValueError("a number outside SQLite's 64-bit integer range") from None
            return text
    else:
        kind = {dict: "object", list: "array", type(None): "null"}.get(type(value), type(value).__name__)
        raise ValueError(f"a JSON {kind} is not an index")
    if not _INT64_MIN <= number <= _INT64_MAX:
        raise ValueError("a number outside SQLite's 64-bit integer range")
    return number


def index_for_lookup(text: str) -> int | str:
    """The index to look an item up by, from a command-line argument: never raises (an impossible index is simply
    not found)."""
    found = index_or_none(text)
    return text.strip() if found is None else found


def blank(value: object) -> bool:
    """pandas writes missing cells as '' or 'nan'; both mean absent."""
    return value is None or (isinstance(value, str) and value.strip().lower() in ("", "nan"))


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_stream(f: BinaryIO) -> str:
    h = hashlib.sha256()
    for chunk in iter(lambda: f.read(1 << 20), b""):
        h.update(chunk)
    return h.hexdigest()


class JsonTooDeep(InvalidInput):
    """JSON nested deeper than MAX_JSON_DEPTH."""


class Refused(InvalidInput):
    """A file an import will not read (not a regular file, too big, outside its folder); the message says why."""


_FILE_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


def _mb(n: int) -> str:
    return f"{n / 2**20:.1f} MB" if n < 10 * 2**20 else f"{n // 2**20} MB"


def open_regular(path: Path, max_bytes: int, what: str = "limit") -> BinaryIO:
    """Open a regular file of at most max_bytes for reading; raises Refused (or OSError).

    stat first, so a device is never opened (opening some has effects); then open without waiting (O_NONBLOCK where
    it exists), so that a FIFO swapped in after the stat cannot block, and check that the file opened is the one that
    was checked.
    """
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _FILE_KINDS if test(st.st_mode)), "not a regular file")
        raise Refused(f"{path} is {kind}, not a regular file")
    if in_use(path):  # opening it outside SQLite would drop this process's locks on it (ADR 0023)
        raise Refused(f"{path} is the workspace this command has open (or one of its files), not an input file")
    if st.st_size > max_bytes:
        raise Refused(f"{path} is {_mb(st.st_size)}, over the {what} of {_mb(max_bytes)}")
    fd = open_no_wait(path)
    opened = os.fstat(fd)
    if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino):
        os.close(fd)
        raise Refused(f"{path} changed while it was being opened")
    return os.fdopen(fd, "rb")


def read_regular(path: Path, max_bytes: int, what: str = "limit") -> bytes:
    """The whole of a regular file of at most max_bytes (open_regular's checks; a file that grows past the bound after
    the check is refused too); raises Refused or OSError."""
    with open_regular(path, max_bytes, what) as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise Refused(f"{path} grew past the {what} of {_mb(max_bytes)} while it was read")
    return data


def open_input(path: str | os.PathLike[str], max_bytes: int, what: str = "limit", field: str = "path") -> BinaryIO:
    """open_regular for a file a command was given, every refusal one InputError line (`FILE: field: why`)."""
    path = Path(path)
    try:
        return open_regular(path, max_bytes, what)
    except FileNotFoundError:
        raise InputError(path, 0, field, "no such file") from None
    except Refused as exc:
        raise InputError(path, 0, field, str(exc).removeprefix(f"{path} ")) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL character in the path
        raise InputError(path, 0, field, f"cannot read ({getattr(exc, 'strerror', None) or exc})") from None


def read_input_text(path: str | os.PathLike[str], max_bytes: int, what: str = "limit", field: str = "path") -> str:
    """The whole of a UTF-8 file a command was given (open_input's checks, a BOM dropped; a file growing past the
    bound while it is read is refused too); InputError otherwise."""
    path = Path(path)
    with open_input(path, max_bytes, what, field) as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise InputError(path, 0, field, f"grew past the {what} of {_mb(max_bytes)} while it was read")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            path, 0, "encoding", f"not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None


def inside(path: Path, root: Path) -> bool:
    """Whether path, with every symlink and '..' resolved, lies in the folder root (resolved the same way)."""
    real, real_root = os.path.realpath(path), os.path.realpath(root)
    return os.path.commonpath([real, real_root]) == real_root


def read_image_file(path: Path, root: Path, limits: ReadLimits) -> bytes:
    """The bytes of an image file, read within the limits; raises Refused or OSError (ValueError for a NUL in the
    path)."""
    if not limits.allow_outside and not inside(path, root):
        raise Refused(
            f"{path} is outside {os.path.abspath(root)} (through '..', an absolute path or a symlink); "
            "pass --allow-outside to read it"
        )
    with open_regular(path, limits.max_image_bytes, "--max-image-mb limit") as f:
        data = f.read(limits.max_image_bytes + 1)
    if len(data) > limits.max_image_bytes:  # it grew after the stat
        raise Refused(f"{path} is over the --max-image-mb limit of {_mb(limits.max_image_bytes)}")
    return data


def decode_base64_image(text: str, limits: ReadLimits) -> bytes:
    """Base64 (whitespace-free) to bytes, refusing before decoding anything bigger than the image cap. Raises
    ValueError (binascii.Error is one)."""
    if len(text) * 3 // 4 > limits.max_image_bytes + 2:
        raise Refused(
            f"an inline image of {_mb(len(text) * 3 // 4)}, over the --max-image-mb limit of "
            f"{_mb(limits.max_image_bytes)}"
        )
    return base64.b64decode(text, validate=True)


_DATA_URL = re.compile(r"data:([^,;]*)((?:;[^,;]*)*),", re.IGNORECASE)


def data_url_payload(value: str) -> str | None:
    """The base64 payload of a `data:image/...;base64,` URL, None when value is no data URL at all; raises
    Refused for a data URL that is not a base64 image."""
    if not value[:5].lower() == "data:":
        return None
    match = _DATA_URL.match(value)
    if match is None:
        raise Refused("a data URL without a comma")
    mime = match.group(1).strip().lower()
    if not mime.startswith("image/"):
        raise Refused(f"a data URL of type {mime or 'text/plain (none given)'!r}, not an image")
    if "base64" not in [p.strip().lower() for p in match.group(2).split(";")]:
        raise Refused("a data URL that is not base64-encoded (';base64,' is missing)")
    return value[match.end() :]


def text_problem(value: str) -> str | None:
    """Text SQLite and every reader can hold: no NUL character, no lone surrogate (not encodable as UTF-8)."""
    if "\x00" in value:
        return f"a NUL character at position {value.index(chr(0)) + 1}"
    if value.isascii():  # no copy of a (base64) cell of many megabytes
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"a lone surrogate U+{ord(value[exc.start]):04X} at position {exc.start + 1} (not valid Unicode)"
    return None


def check_texts(value: object, field: str, err: Callable[[str, str], Exception]) -> None:
    """text_problem for every string in value (a string, or lists/objects of them, keys included)."""
    if isinstance(value, str):
        problem = text_problem(value)
        if problem:
            raise err(field, f"contains {problem}")
    elif isinstance(value, dict):
        for key, inner in value.items():
            check_texts(key, field, err)
            check_texts(inner, field, err)
    elif isinstance(value, (list, tuple)):
        for inner in value:
            check_texts(inner, field, err)


MAX_REFERENCES = 100  # reference answers of one open item (VQAv2 keeps ten; COCO five captions)
# An open item's answer cell, every layout's: ten VQA answers or five COCO captions take a few hundred characters; a
# hundred long references fit in this.
MAX_ANSWER_CHARS = 64 * 2**10


def reference_answers(value: object, field: str, err: Callable[[str, str], Exception]) -> list[str]:
    """An open item's reference answers: one text or a list of texts, each stripped, blanks dropped, order and repeats
    kept (a repeat is a vote in VQAv2's accuracy). Stored as the item's meta `references`. A number is no text: a
    list holding one is refused (a TSV's list literal, a parquet's list column), never stored as its digits."""
    texts = [value] if isinstance(value, str) else value
    if not isinstance(texts, list):
        raise err(field, "an open question's answer is a reference text or a list of them")
    for n, text in enumerate(texts, start=1):
        if not isinstance(text, str):
            raise err(field, f"element {n} is a {type(text).__name__}; a reference answer is a text")
    if len(texts) > MAX_REFERENCES:
        raise err(field, f"{len(texts)} reference answers; at most {MAX_REFERENCES}")
    if (size := sum(map(len, texts))) > MAX_ANSWER_CHARS:
        raise err(field, f"reference answers of {size:,} characters; at most {MAX_ANSWER_CHARS:,}")
    check_texts(texts, field, err)
    return [t.strip() for t in texts if not blank(t)]


def python_list_answers(cell: str, field: str, err: Callable[[str, str], Exception]) -> list[str]:
    """The reference answers of a VLMEvalKit answer cell: a Python list literal of texts ("['a', 'b']", which
    VLMEvalKit eval()s), else the cell as one text. The list is parsed, never evaluated (ast.parse of a bounded cell,
    then only a flat list of quoted texts is taken); anything else in brackets is refused, not read as one text."""
    text = cell.strip()
    if not (text.startswith("[") and text.endswith("]")):
        return reference_answers(text, field, err)
    if len(text) > MAX_ANSWER_CHARS:  # before it is parsed
        raise err(field, f"a list of {len(text):,} characters; at most {MAX_ANSWER_CHARS:,}")
    if _number_list(text):  # MathVista's list answers ("[2007, 2008]"): one answer that is a list, kept as written
        return reference_answers(text, field, err)
    return reference_answers(python_text_list(text, field, err), field, err)


def _number_list(text: str) -> bool:
    """Whether a bounded cell is a flat Python list of numbers (parsed, never evaluated)."""
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    numbers = (
        isinstance(e, ast.Constant)
        and isinstance(e.value, int | float)
        and not isinstance(e.value, bool)
        or isinstance(e, ast.UnaryOp)
        and isinstance(e.op, ast.USub)
        and isinstance(e.operand, ast.Constant)
        for e in (node.elts if isinstance(node, ast.List) else [])
    )
    return isinstance(node, ast.List) and bool(node.elts) and all(numbers)


def python_text_list(text: str, field: str, err: Callable[[str, str], Exception]) -> list[str]:
    """The texts of a Python list literal of quoted texts (VLMEvalKit writes lists in TSV cells with str(list) and
    reads them with eval: vlmeval/smp/misc.py toliststr). Parsed, never evaluated: ast.parse of a cell the caller
    bounded, then only a flat list of quoted texts is taken."""
    shape = "a Python list of quoted texts such as ['a', 'b']"
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:  # the last two: the parser's depth limits
        raise err(field, f"not {shape} ({type(exc).__name__}: {str(exc)[:60]})") from None
    if not isinstance(node, ast.List):
        raise err(field, f"not {shape} (an expression: {text[:40]!r})")
    for n, element in enumerate(node.elts, start=1):
        if isinstance(element, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
            raise err(field, f"element {n} is a nested {type(element).__name__.lower()}; {shape} is expected")
        if not (isinstance(element, ast.Constant) and isinstance(element.value, str)):
            raise err(field, f"element {n} is not a quoted text ({ast.unparse(element)[:40]!r}); {shape} is expected")
    return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]


_JSON_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def json_too_deep(text: str, start: int = 0, limit: int = MAX_JSON_DEPTH) -> int | None:
    """The position where arrays/objects in text nest deeper than limit, else None (strings are skipped)."""
    if text.count("[", start) + text.count("{", start) <= limit:
        return None
    depth = 0
    for m in _JSON_TOKENS.finditer(text, start):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > limit:
                return m.start()
        elif c in "]}":
            depth -= 1
    return None


class DuplicateKey(InvalidInput):
    """A JSON object that gives one key twice (`key`)."""

    def __init__(self, key: str):
        super().__init__(f"key {key[:60]!r} given twice in one object")
        self.key = key


def no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict[str, Any]:
    """json's object_pairs_hook that refuses a key given twice (json keeps the last one silently: which one did
    the writer mean?)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise DuplicateKey(k)
            seen.add(k)
    return obj


# Every JSON file vlmdesk reads refuses a key given twice (DuplicateKey): which of the two did the writer mean?
_NO_DUPLICATES = json.JSONDecoder(object_pairs_hook=no_duplicate_keys)


def json_loads(text: str, *, limit: int = MAX_JSON_DEPTH, decoder: json.JSONDecoder | None = None) -> Any:
    """json.loads (or decoder.decode: one made once with hooks such as object_pairs_hook), bounded in depth (`limit`
    levels), a key given twice refused. Raises JsonTooDeep, DuplicateKey, json.JSONDecodeError, or a plain ValueError
    for a number of more than 4,300 digits (Python's limit on int())."""
    if json_too_deep(text, limit=limit) is not None:
        raise JsonTooDeep(f"nested deeper than {limit} levels")
    return (decoder or _NO_DUPLICATES).decode(text)


def finite(value: object) -> bool:
    return not isinstance(value, float) or math.isfinite(value)


def check_image(data: bytes) -> tuple[str, int, int]:
    """Decode fully (catches truncation) after a size check (catches bombs). Returns (mime, width, height).

    Raises ValueError with a short reason.
    """
    from PIL import Image, UnidentifiedImageError  # here: commands that read no image never load Pillow

    # Above this many pixels an image is treated as a decompression bomb (PIL's own warning threshold).
    max_pixels = Image.MAX_IMAGE_PIXELS or 89_478_485
    try:
        with Image.open(io.BytesIO(data)) as img:
            width, height = img.size
            if width * height > max_pixels:
                raise Image.DecompressionBombError(f"{width}x{height} pixels is over the limit of {max_pixels}")
            fmt = img.format
            img.load()
    except Image.DecompressionBombError as exc:
        raise ValueError(f"decompression bomb: {exc}") from None
    except UnidentifiedImageError:
        raise ValueError("not an image PIL can identify") from None
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombWarning) as exc:
        # PIL names its BytesIO ("<_io.BytesIO object at 0x…>"), which tells a reader nothing.
        raise ValueError(f"not an image PIL can open ({_BYTESIO.sub('the image', str(exc))})") from None
    mime = Image.MIME.get(fmt or "", "application/octet-stream")
    return mime, width, height


_BYTESIO = re.compile(r"<_io\.BytesIO object at 0x[0-9a-fA-F]+>")


def decoded_lines(
    raw: BinaryIO,
    file: Path,
    bad: dict[int, InputError] | None = None,
    max_line: int = ReadLimits().max_line_bytes,
) -> Iterator[str]:
    """Lines of a UTF-8 file (a BOM is dropped), decoded one by one so an encoding error names its line.

    Without `bad`, an encoding error is raised. With it, the error is recorded as bad[line] and the line is still
    yielded (undecodable bytes as lone surrogates), so the reader can report that one row and go on (--skip-bad).
    A line longer than max_line bytes ends the file with an InputError (it is never held in memory whole).
    """
    for number, line in enumerate(iter(lambda: raw.readline(max_line + 1), b""), start=1):
        if len(line) > max_line:
            raise InputError(file, number, "line", f"longer than {_mb(max_line)} (an image over --max-image-mb?)")
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            error = InputError(
                file, number, "encoding", f"not UTF-8 (byte 0x{line[exc.start]:02x} at column {exc.start + 1})"
            )
            if bad is None:
                raise error from None
            bad[number] = error
            text = line.decode("utf-8", "surrogateescape")
        if number == 1 and text.startswith("\ufeff"):
            text = text[1:]
        yield text


def index_or_none(value: object) -> int | str | None:
    try:
        return normalise_index(value)
    except (ValueError, TypeError):
        return None
