"""Fuzzing the importers: whatever the bytes, the readers yield SourceRow / InputError or raise InputError, and an
import either succeeds or raises InputError with the workspace unchanged.

Seeds are small valid files (tiny images, circular copies, image references); mutations flip, insert and delete
bytes, cut the file, and duplicate or swap lines. Example counts are modest so the file runs in seconds.
"""

from __future__ import annotations

import base64
import csv
import io
import itertools
import json
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from db import catalog, open_workspace
from evaluator.formats.importers import InputError, import_benchmark
from evaluator.formats.importers.common import SourceRow, check_image, location
from evaluator.formats.importers.jsonl import read_jsonl, read_pope
from evaluator.formats.importers.tsv import read_tsv
from tests.factories import HEADER, jpeg_bytes, mmbench_rows, png_bytes

FAKE = Path("/nonexistent-vlmdesk-fuzz/input.file")  # only used in messages and as the base of relative paths
FUZZ = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)
PNG = png_bytes((10, 200, 30), size=(3, 3))
JPEG = jpeg_bytes(3, side=8)


def _tsv_bytes(rows, header=HEADER) -> bytes:
    out = io.StringIO()
    w = csv.writer(out, delimiter="\t", lineterminator="\n")
    w.writerow(header)
    for r in rows:
        w.writerow(["" if r.get(h) is None else r.get(h) for h in header])
    return out.getvalue().encode()


def _seed_tsv() -> bytes:
    rows = list(mmbench_rows(3, seed=7, image_side=8))
    rows[1]["image"] = "2"  # a forward reference besides the copies' references
    for row in rows:  # a quoted multi-line cell, on question 2 and its circular copies alike
        if int(row["index"]) % 1_000_000 == 2:
            row["hint"] = "多行\nhint"
    return _tsv_bytes(rows)


def _seed_mcq_jsonl() -> bytes:
    recs = [
        {
            "index": 1,
            "question": "Which?",
            "options": ["a", "b", "c"],
            "answer": "B",
            "image": "data:image/png;base64," + base64.b64encode(PNG).decode(),
        },
        {
            "index": 2,
            "question": "哪个？",
            "options": {"A": "x", "B": "y"},
            "answer": 0,
            "image": base64.b64encode(JPEG).decode(),
            "hint": "nan",
            "split": "dev",
        },
        {"question": "No index", "options": ["p", "q"], "image": "pic.png"},
    ]
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs).encode()


def _seed_pope(array: bool) -> bytes:
    recs = [
        {
            "question_id": i,
            "image": f"img{i % 2}.png",
            "text": f"Is there a thing {i} in the image?",
            "label": "yes" if i % 2 else "no",
        }
        for i in range(1, 5)
    ]
    if array:
        return json.dumps(recs, indent=4).encode()
    return "".join(json.dumps(r) + "\n" for r in recs).encode()


SEED_TSV = _seed_tsv()
SEED_JSONL = _seed_mcq_jsonl()
SEED_POPE = _seed_pope(False)
SEED_POPE_ARRAY = _seed_pope(True)

INSERTS = [
    b"\t",
    b"\n",
    b"\r\n",
    b'"',
    b"\\",
    b"\xff",
    b"\xe9",
    b"\xe4\xb8",
    b"\x00",
    b"nan",
    b"",
    b" ",
    b"99999999999999999999999",
    b"-1",
    b"1000001",
    b"2000000",
    b"0",
    b"A",
    b"Z",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"null",
    b"true",
    b"1e999",
    b"NaN",
    b'"index"',
    b'"options"',
    b"\xef\xbb\xbf",
    b"=",
    b"/9j/",
]

CELLS = INSERTS + [
    b'"a\nb"',
    b'"1\n2"',
    b'" 7 "',
    b'"x\\u0000y.png"',
    b'"\\n"',
    b"1.5",
    b"-0",
    b'""',
    b"9223372036854775808",
    b"-9223372036854775809",
    b"1_000",
    b'"' + b"A" * 70 + b'"',
]


@st.composite
def mutated(draw, seed: bytes) -> bytes:
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(
            st.sampled_from(
                ["flip", "insert", "delete", "truncate", "dup_line", "swap_lines", "drop_line", "cell", "cell"]
            )
        )
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "cell":
            # Replace one cell / JSON token (between separators) with an interesting value.
            parts = re.split(rb"([\t\n,:])", bytes(data))
            i = draw(st.integers(0, len(parts) - 1)) // 2 * 2
            parts[i] = draw(st.sampled_from(CELLS))
            data = bytearray(b"".join(parts))
        elif op == "flip" and data:
            data[pos] = draw(st.integers(0, 255))
        elif op == "insert":
            data[pos:pos] = draw(st.sampled_from(INSERTS) | st.binary(max_size=6))
        elif op == "delete":
            del data[pos : pos + draw(st.integers(1, 80))]
        elif op == "truncate":
            del data[pos:]
        else:
            lines = bytes(data).split(b"\n")
            i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            if op == "dup_line":
                lines.insert(j, lines[i])
            elif op == "swap_lines":
                lines[i], lines[j] = lines[j], lines[i]
            elif len(lines) > 1:
                del lines[i]
            data = bytearray(b"\n".join(lines))
    return bytes(data)


def _one_line(err: InputError) -> None:
    text = str(err)
    assert "\n" not in text and "\r" not in text, text
    assert text.startswith(f"{location(err.file, err.line)}: {err.field}: ")
    assert isinstance(err.line, int) and err.line >= 0


def drain(reader, data: bytes, **kw) -> list:
    """Run a reader to the end; it may only yield SourceRow / InputError or raise InputError."""
    out = []
    try:
        for x in reader(FAKE, io.BytesIO(data), **kw):
            assert isinstance(x, (SourceRow, InputError)), type(x)
            if isinstance(x, InputError):
                _one_line(x)
            else:
                assert isinstance(x.line, int) and x.line >= 1 and isinstance(x.index, (int, str))
                assert all(isinstance(o, str) and o for o in x.options)
            out.append(x)
    except InputError as err:
        _one_line(err)
    return out


# ---------------------------------------------------------------------------------------------- readers


READERS = {"tsv": (read_tsv, {}), "jsonl": (read_jsonl, {}), "pope": (read_pope, {"images_dir": FAKE.parent})}


@pytest.mark.parametrize("name", sorted(READERS))
@settings(FUZZ, max_examples=150)
@given(data=st.binary(max_size=400))
def test_readers_on_arbitrary_bytes(name, data):
    reader, kw = READERS[name]
    drain(reader, data, **kw)


@pytest.mark.parametrize(
    "name, seed",
    [
        ("tsv", SEED_TSV),
        ("jsonl", SEED_JSONL),
        ("pope", SEED_POPE),
        ("pope", SEED_POPE_ARRAY),
        ("jsonl", SEED_POPE_ARRAY),
        ("tsv", SEED_JSONL),
    ],
    ids=["tsv", "jsonl", "pope", "pope-array", "jsonl-on-pope-array", "tsv-on-jsonl"],
)
@settings(FUZZ, max_examples=150)
@given(data=st.data())
def test_readers_on_mutated_valid_files(name, seed, data):
    reader, kw = READERS[name]
    drain(reader, data.draw(mutated(seed)), **kw)


def test_the_seeds_are_valid():
    n_tsv = len(list(mmbench_rows(3, seed=7, image_side=8)))
    for name, seed, n in [
        ("tsv", SEED_TSV, n_tsv),
        ("jsonl", SEED_JSONL, 3),
        ("pope", SEED_POPE, 4),
        ("pope", SEED_POPE_ARRAY, 4),
    ]:
        reader, kw = READERS[name]
        rows = drain(reader, seed, **kw)
        assert len(rows) == n and all(isinstance(r, SourceRow) for r in rows), rows


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
IMAGES = st.sampled_from(
    [
        "data:image/png;base64," + base64.b64encode(PNG).decode(),
        base64.b64encode(JPEG).decode(),
        "pic.png",
        "",
        "nan",
        "data:image/png;base64,!!!!",
        "a\x00b.png",
        "a\nb.png",
        "x" * 300,
        "/" * 70,
        "../images",
        ".",
    ]
)
MCQ_RECORD = st.fixed_dictionaries(
    {},
    optional={
        "index": st.integers() | st.sampled_from([2**63, -(2**63) - 1, 10**30, 1_000_001, "9" * 25]) | JSON_VALUES,
        "question": st.text(max_size=20) | JSON_VALUES,
        "options": st.lists(st.text(max_size=6) | st.integers(), max_size=5)
        | st.dictionaries(st.sampled_from(list("ABCDEab \n") + ["A\nB"]), st.text(max_size=6), max_size=4)
        | JSON_VALUES,
        "answer": st.sampled_from(["A", "b", "Z", "", "nan", 0, 1, 7, -1, True, 1.0]) | JSON_VALUES,
        "image": IMAGES | JSON_VALUES,
        "hint": JSON_VALUES,
        "category": JSON_VALUES,
        "l2_category": JSON_VALUES,
        "split": JSON_VALUES,
        "extra": JSON_VALUES,
    },
)
POPE_RECORD = st.fixed_dictionaries(
    {},
    optional={
        "question_id": st.integers() | st.sampled_from([2**63, 10**30, "1e400"]) | JSON_VALUES,
        "image": st.sampled_from(["img0.png", "pic.png", "a.jpg", "", "../b.jpg", "x\x00.png", "a\nb.png", "."])
        | JSON_VALUES,
        "text": st.text(max_size=20) | JSON_VALUES,
        "label": st.sampled_from(["yes", "No", " YES ", "maybe"]) | JSON_VALUES,
    },
)


@pytest.mark.parametrize("name, records", [("jsonl", MCQ_RECORD), ("pope", POPE_RECORD)])
@settings(FUZZ, max_examples=150)
@given(data=st.data())
def test_readers_on_odd_json_values(name, records, data):
    recs = data.draw(st.lists(records | JSON_VALUES, max_size=4))
    as_array = data.draw(st.booleans())
    text = json.dumps(recs) if as_array else "".join(json.dumps(r) + "\n" for r in recs)
    reader, kw = READERS[name]
    drain(reader, text.encode(), **kw)


@settings(FUZZ, max_examples=200)
@given(data=st.data())
def test_check_image_only_raises_value_error(data):
    seed = data.draw(st.sampled_from([PNG, JPEG, png_bytes(size=(1, 1)), b"GIF89a\x01\x00\x01\x00\x00\x00\x00;"]))
    blob = data.draw(mutated(seed))
    try:
        mime, width, height = check_image(blob)
    except ValueError as exc:
        assert str(exc)
    else:
        assert isinstance(mime, str) and width >= 0 and height >= 0


# ---------------------------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def e2e(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    images = root / "images"
    images.mkdir()
    for name in ("img0.png", "img1.png", "pic.png"):
        (images / name).write_bytes(png_bytes(tuple(map(ord, name[:3])), size=(4, 4)))
    ws = open_workspace(root / "ws.sqlite")
    yield root, images, ws
    ws.close()


def _counts(ws) -> tuple:
    return tuple(ws.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("benchmarks", "items", "images"))


_names = itertools.count()

E2E = [
    ("mmbench-tsv", SEED_TSV, ".tsv"),
    ("jsonl", SEED_JSONL, ".jsonl"),
    ("pope", SEED_POPE, ".jsonl"),
    ("pope", SEED_POPE_ARRAY, ".json"),
]


@pytest.mark.parametrize("fmt, seed, suffix", E2E, ids=[f"{f}{s}" for f, _, s in E2E])
@settings(FUZZ, max_examples=40)
@given(data=st.data(), skip_bad=st.booleans())
def test_import_succeeds_or_raises_input_error_leaving_no_trace(e2e, fmt, seed, suffix, data, skip_bad):
    root, images, ws = e2e
    blob = data.draw(mutated(seed))
    name = f"fuzz-{next(_names)}"
    path = root / f"{name}{suffix}"
    path.write_bytes(blob)
    before = _counts(ws)
    try:
        report = import_benchmark(ws, path, fmt=fmt, name=name, images_dir=images, skip_bad=skip_bad)
    except InputError as err:
        _one_line(err)
        assert catalog.benchmark_by_name(ws, name) is None
        assert _counts(ws) == before
        assert not ws.conn.in_transaction
    else:
        assert not ws.conn.in_transaction
        if report.already_imported:
            assert _counts(ws) == before
            return
        bench = catalog.benchmark_by_name(ws, name)
        assert bench is not None and bench.questions == report.questions
        assert bench.rows_skipped == len(report.skipped)
        assert report.questions + report.rows_folded + len(report.skipped) <= report.rows_read
        if not skip_bad:
            assert report.skipped == []
        for err in report.skipped:
            _one_line(err)
        items = catalog.list_items(ws, bench.id)
        assert len(items) == report.questions
        for item in items:
            assert item.answer is None or item.answer in ("yes", "no") or item.answer in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
            if item.image_sha256 is not None:
                assert catalog.has_image(ws, item.image_sha256)
    finally:
        path.unlink()


def test_the_end_to_end_seeds_import(e2e):
    root, images, ws = e2e
    for fmt, seed, suffix in E2E:
        with tempfile.NamedTemporaryFile(suffix=suffix, dir=root, delete=False) as f:
            f.write(seed)
        report = import_benchmark(ws, f.name, fmt=fmt, name=f"seed-{next(_names)}", images_dir=images)
        assert report.questions > 0 and not report.skipped


@pytest.mark.parametrize("fmt, records", [("jsonl", MCQ_RECORD), ("pope", POPE_RECORD)])
@settings(FUZZ, max_examples=60)
@given(data=st.data(), skip_bad=st.booleans())
def test_import_of_odd_json_values(e2e, fmt, records, data, skip_bad):
    root, images, ws = e2e
    recs = data.draw(st.lists(records, min_size=1, max_size=4))
    name = f"fuzz-{next(_names)}"
    path = root / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    before = _counts(ws)
    try:
        report = import_benchmark(ws, path, fmt=fmt, name=name, images_dir=images, skip_bad=skip_bad)
    except InputError as err:
        _one_line(err)
        assert catalog.benchmark_by_name(ws, name) is None and _counts(ws) == before
    else:
        for err in report.skipped:
            _one_line(err)
        if not report.already_imported:
            assert catalog.benchmark_by_name(ws, name).questions == report.questions
    finally:
        path.unlink()
