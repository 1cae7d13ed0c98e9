"""Hostile inputs, faults and concurrent writers, against the real `vlmdesk import` command (a subprocess each).

The corpus is tests/data/hostile/: each file with the one line it must produce (or the clean import it must give).
FIFOs, sockets and links to devices cannot live in git, so the second table builds them in tmp_path. Every case runs
with a timeout, so a hang fails it, as does a traceback or a second line; and the workspace must be unchanged.
"""

from __future__ import annotations

import base64
import json
import os
import random
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from db import catalog, open_workspace
from evaluator.formats.importers import import_benchmark
from evaluator.formats.importers.common import location
from tests.factories import mmbench_rows, png_bytes, write_tsv

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = ROOT / "tests" / "data" / "hostile"
CASE_TIMEOUT_S = 120  # generous for a loaded machine; a hang (an unbounded read, a FIFO) never ends at all
ERROR_LINE = re.compile(r"^error: .+?(:\d+)?: [\w -]+: .+$")


@dataclass(frozen=True)
class Err:
    line: int
    field: str
    says: str  # a part of the message


@dataclass(frozen=True)
class Ok:
    questions: int
    skipped: int = 0


JSONL, POPE = ("--format", "jsonl"), ("--format", "pope", "--images", str(HOSTILE / "img"))
OUTSIDE = "(through '..', an absolute path or a symlink); pass --allow-outside"
NO_ROWS = "no rows: an empty file, an empty JSON array or a header without rows"

# file in tests/data/hostile, arguments, expected outcome
CORPUS = [
    # JSON nesting: a one-line error, never RecursionError
    ("jsonl_deep_100000.jsonl", JSONL, Err(1, "json", "nested deeper than 64 levels")),
    ("jsonl_deep_objects_100000.jsonl", JSONL, Err(2, "json", "nested deeper than 64 levels")),
    ("jsonl_deep_in_extra_field.jsonl", JSONL, Err(2, "json", "nested deeper than 64 levels")),
    ("pope_deep_array.json", POPE, Err(4, "json", "nested deeper than 64 levels")),
    ("jsonl_index_5000_digits.jsonl", JSONL, Err(2, "json", "a number of more than 4,300 digits")),
    # text SQLite cannot hold: lone surrogates, NUL characters
    ("jsonl_lone_surrogate_question.jsonl", JSONL, Err(2, "question", "lone surrogate U+D800")),
    ("jsonl_lone_surrogate_option.jsonl", JSONL, Err(2, "options", "lone surrogate U+DFFF")),
    ("jsonl_lone_surrogate_key.jsonl", JSONL, Err(2, "row", "lone surrogate U+D83D")),
    ("jsonl_lone_surrogate_category.jsonl", JSONL, Err(2, "category", "lone surrogate U+DC80")),
    ("pope_lone_surrogate_text.jsonl", POPE, Err(2, "text", "lone surrogate U+D800")),
    ("jsonl_nul_question.jsonl", JSONL, Err(2, "question", "a NUL character at position 5")),
    ("jsonl_nul_hint.jsonl", JSONL, Err(2, "hint", "a NUL character")),
    ("jsonl_nul_option.jsonl", JSONL, Err(2, "options", "a NUL character")),
    ("pope_nul_text.jsonl", POPE, Err(2, "text", "a NUL character")),
    ("pope_nul_image_name.jsonl", POPE, Err(2, "image", "a NUL character")),
    ("tsv_nul_question.tsv", (), Err(3, "question", "a NUL character")),
    ("tsv_nul_option.tsv", (), Err(3, "B", "a NUL character")),
    # indexes: 64-bit integers or texts, nothing else
    ("jsonl_index_object.jsonl", JSONL, Err(2, "index", 'not a valid index: {"a": 1} (a JSON object is not an index)')),
    ("jsonl_index_array.jsonl", JSONL, Err(2, "index", "a JSON array is not an index")),
    ("jsonl_index_nan.jsonl", JSONL, Err(2, "index", "not a valid index: NaN (not a whole number)")),
    ("jsonl_index_infinity.jsonl", JSONL, Err(2, "index", "not a valid index: Infinity (not a whole number)")),
    ("jsonl_index_fraction.jsonl", JSONL, Err(2, "index", "not a valid index: 1.5 (not a whole number)")),
    ("jsonl_index_bool.jsonl", JSONL, Err(2, "index", "not a valid index: true (a JSON boolean is not an index)")),
    ("jsonl_index_null.jsonl", JSONL, Err(2, "index", "a JSON null is not an index")),
    ("jsonl_index_beyond_int64.jsonl", JSONL, Err(2, "index", "outside SQLite's 64-bit integer range")),
    ("tsv_index_beyond_int64.tsv", (), Err(3, "index", "outside SQLite's 64-bit integer range")),
    ("tsv_index_nan.tsv", (), Err(3, "index", "'nan' (empty or nan)")),
    ("pope_question_id_object.jsonl", POPE, Err(2, "question_id", "a JSON object is not an index")),
    ("pope_question_id_nan.jsonl", POPE, Err(2, "question_id", "NaN (not a whole number)")),
    ("pope_question_id_bool.jsonl", POPE, Err(2, "question_id", "a JSON boolean is not an index")),
    ("pope_question_id_fraction.jsonl", POPE, Err(2, "question_id", "2.5 (not a whole number)")),
    # other malformed values
    ("jsonl_options_nan.jsonl", JSONL, Err(2, "options", "must be a list of texts")),
    ("jsonl_options_bool.jsonl", JSONL, Err(2, "options", "must be a list of texts")),
    ("jsonl_row_not_an_object.jsonl", JSONL, Err(2, "row", "expected a JSON object, got list")),
    # empty sources are errors, not 0-question benchmarks
    ("jsonl_empty.jsonl", JSONL, Err(0, "rows", NO_ROWS)),
    ("jsonl_blank_lines.jsonl", JSONL, Err(0, "rows", NO_ROWS)),
    ("jsonl_empty_array.json", JSONL, Err(0, "rows", NO_ROWS)),
    ("pope_empty.jsonl", POPE, Err(0, "rows", NO_ROWS)),
    ("pope_empty_array.json", POPE, Err(0, "rows", NO_ROWS)),
    ("tsv_header_only.tsv", (), Err(0, "rows", NO_ROWS)),
    ("tsv_empty.tsv", (), Err(1, "header", "the file is empty")),
    # data URLs must be base64 images
    ("jsonl_data_url_text_plain.jsonl", JSONL, Err(2, "image", "a data URL of type 'text/plain', not an image")),
    ("jsonl_data_url_html.jsonl", JSONL, Err(2, "image", "a data URL of type 'text/html', not an image")),
    ("jsonl_data_url_no_type.jsonl", JSONL, Err(2, "image", "a data URL of type 'text/plain (none given)'")),
    ("jsonl_data_url_not_base64.jsonl", JSONL, Err(2, "image", "not base64-encoded")),
    ("tsv_image_data_url_text_plain.tsv", (), Err(3, "image", "a data URL of type 'text/plain', not an image")),
    # paths that leave the file's folder (or --images), devices, folders
    ("jsonl_image_parent_dir.jsonl", JSONL, Err(2, "image", OUTSIDE)),
    ("jsonl_image_dev_zero.jsonl", JSONL, Err(2, "image", f"/dev/zero is outside {HOSTILE} {OUTSIDE}")),
    ("jsonl_image_dev_urandom.jsonl", JSONL, Err(2, "image", "/dev/urandom is outside")),
    ("jsonl_image_etc_passwd.jsonl", JSONL, Err(2, "image", "/etc/passwd is outside")),
    ("jsonl_image_proc_self.jsonl", JSONL, Err(2, "image", "/proc/self/fd/0 is outside")),
    (
        "jsonl_image_dev_zero.jsonl",
        (*JSONL, "--allow-outside"),
        Err(2, "image", "is a character device, not a regular file"),
    ),
    ("jsonl_image_a_directory.jsonl", JSONL, Err(2, "image", "is a directory, not a regular file")),
    ("pope_image_parent_dir.jsonl", POPE, Err(2, "image", f"is outside {HOSTILE / 'img'} {OUTSIDE}")),
    ("pope_image_dev_zero.jsonl", POPE, Err(2, "image", "/dev/zero is outside")),
    ("tsv_image_path_parent_dir.tsv", (), Err(3, "image", OUTSIDE)),
    ("tsv_image_path_dev_zero.tsv", (), Err(3, "image", "/dev/zero is outside")),
    ("tsv_image_path_dev_urandom.tsv", (), Err(3, "image", "/dev/urandom is outside")),
    ("tsv_image_path_dev_urandom.tsv", ("--allow-outside",), Err(3, "image", "is a character device")),
    ("tsv_image_path_a_directory.tsv", (), Err(3, "image", "is a directory")),
    # PIL's errors name the row and field, never "<_io.BytesIO object at 0x…>"
    ("jsonl_image_not_an_image.jsonl", JSONL, Err(2, "image", "not an image PIL can identify")),
    ("jsonl_image_truncated_png.jsonl", JSONL, Err(2, "image", "not an image PIL can open (image file is truncated)")),
    ("pope_image_not_an_image.jsonl", POPE, Err(2, "image", "not an image PIL can identify")),
    ("tsv_image_not_an_image.tsv", (), Err(3, "image", "not an image PIL can identify")),
    # benchmark names: one printable line of at most 100 characters
    ("jsonl_clean_odd_but_valid.jsonl", (*JSONL, "--name", "evil\u202egnp.exe"), Err(0, "--name", "U+202E")),
    ("jsonl_clean_odd_but_valid.jsonl", (*JSONL, "--name", "two\nlines"), Err(0, "--name", "U+000A")),
    (
        "jsonl_clean_odd_but_valid.jsonl",
        (*JSONL, "--name", "x" * 5000),
        Err(0, "--name", "5000 characters; at most 100"),
    ),
    ("jsonl_clean_odd_but_valid.jsonl", (*JSONL, "--name", "   "), Err(0, "--name", "empty")),
    # a compression bomb (tests/parquet_bombs.py): 62 KB of zstd holding 30 answers of 60 MB, refused from its pages'
    # sizes before a row group is decoded
    ("parquet_answers_zstd_bomb.parquet", (), Err(1, "answers", "unpacks to 600.0 MB for 10 rows; at most 1 MB a row")),
    # odd but valid: these import
    ("jsonl_clean_odd_but_valid.jsonl", JSONL, Ok(4)),
    ("pope_clean_array.json", POPE, Ok(3)),
    ("tsv_clean_odd_but_valid.tsv", (), Ok(4)),
    # --skip-bad skips the bad row, names it, and imports the others
    ("jsonl_lone_surrogate_question.jsonl", (*JSONL, "--skip-bad"), Ok(2, skipped=1)),
    ("jsonl_index_nan.jsonl", (*JSONL, "--skip-bad"), Ok(2, skipped=1)),
    ("jsonl_image_dev_zero.jsonl", (*JSONL, "--skip-bad"), Ok(2, skipped=1)),
    ("pope_nul_text.jsonl", (*POPE, "--skip-bad"), Ok(2, skipped=1)),
    ("tsv_image_path_dev_urandom.tsv", ("--skip-bad",), Ok(2, skipped=1)),
]


def vlmdesk(ws: Path, *argv, timeout: float = CASE_TIMEOUT_S) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "vlmdesk", "--workspace", str(ws), *map(str, argv)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def dump(path: Path) -> dict:
    """Every row of every table, the schema and user_version (the workspace's whole content)."""
    conn = sqlite3.connect(str(path))
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        out = {t: sorted(repr(row) for row in conn.execute(f'SELECT * FROM "{t}"')) for t in tables}
        out["-schema"] = list(conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name"))
        out["-user_version"] = conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()
    return out


@pytest.fixture
def ws(tmp_path) -> Path:
    """A workspace that already holds a benchmark (so 'unchanged' means more than 'empty')."""
    path = tmp_path / "ws.sqlite"
    seed = tmp_path / "seed"
    seed.mkdir()
    (seed / "s.png").write_bytes(png_bytes((9, 99, 199)))
    with open_workspace(path) as w:
        import_benchmark(w, _jsonl(seed / "seed.jsonl", [_mcq(1, "s.png"), _mcq(2, "s.png")]))
    return path


def check(ws: Path, source: Path, args, expected, before: dict) -> None:
    try:
        p = vlmdesk(ws, "import", source, *args, "--json")
    except subprocess.TimeoutExpired:
        pytest.fail(f"vlmdesk import {source.name} {' '.join(map(str, args))} hung")
    assert "Traceback" not in p.stderr, p.stderr
    if isinstance(expected, Err):
        assert p.returncode == 2, (p.returncode, p.stderr)
        assert p.stdout == ""
        lines = p.stderr.splitlines()
        assert len(lines) == 1 and ERROR_LINE.match(lines[0]), p.stderr
        assert lines[0].startswith(f"error: {location(source, expected.line)}: {expected.field}: "), lines[0]
        assert expected.says in lines[0], lines[0]
        assert "BytesIO" not in lines[0]
        assert dump(ws) == before
    else:
        assert p.returncode == 0, p.stderr
        report = json.loads(p.stdout)
        assert (report["questions"], report["rows_skipped"]) == (expected.questions, expected.skipped), report
        skipped = [line for line in p.stderr.splitlines() if line.startswith("skipped: ")]
        assert len(skipped) == expected.skipped and all(str(source) in line for line in skipped), p.stderr
        after = dump(ws)
        assert after["benchmarks"] != before["benchmarks"]
        with open_workspace(ws) as w:
            assert catalog.benchmark_by_name(w, report["name"]).questions == expected.questions
            # Images stored for nothing would be orphans.
            assert (
                w.conn.execute(
                    "SELECT count(*) FROM images WHERE sha256 NOT IN "
                    "(SELECT image_sha256 FROM items WHERE image_sha256 IS NOT NULL)"
                ).fetchone()[0]
                == 0
            )


def test_the_corpus_is_large_and_every_file_has_a_case():
    files = {p.name for p in HOSTILE.iterdir() if p.is_file()}
    assert len(files) >= 40
    assert files == {name for name, _, _ in CORPUS}, files ^ {name for name, _, _ in CORPUS}


@pytest.mark.parametrize(
    "name, args, expected",
    CORPUS,
    ids=[f"{n}{'-' + '-'.join(a[2:] if a[:2] == JSONL[:2] else a)[:30] if a else ''}" for n, a, _ in CORPUS],
)
def test_hostile_file(ws, name, args, expected):
    check(ws, HOSTILE / name, args, expected, dump(ws))


# ------------------------------------------------------------- special files, built at test time


def _mcq(i, image) -> dict:
    return {"index": i, "question": f"Which colour {i}?", "options": ["red", "blue"], "answer": "A", "image": image}


def _jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _socket(path: Path) -> socket.socket:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    return s


def _noise_png(side: int) -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.frombytes("RGB", (side, side), random.Random(side).randbytes(side * side * 3)).save(buf, "PNG")
    return buf.getvalue()


def special(tmp_path: Path, case: str):
    """(source, args, expected) for one case of SPECIAL, with its FIFO, socket, symlink or large file made here."""
    d = tmp_path / "bench"
    d.mkdir()
    (d / "ok.png").write_bytes(png_bytes())
    good = [_mcq(1, "ok.png"), _mcq(3, "ok.png")]
    if case == "source is a FIFO":
        os.mkfifo(d / "q.jsonl")
        return d / "q.jsonl", (), Err(0, "path", "is a FIFO (named pipe), not a regular file")
    if case == "source is a socket":
        _socket(d / "q.jsonl")
        return d / "q.jsonl", (), Err(0, "path", "is a socket, not a regular file")
    if case == "source links to /dev/zero":
        (d / "q.jsonl").symlink_to("/dev/zero")
        return d / "q.jsonl", ("--format", "jsonl"), Err(0, "path", "is a character device, not a regular file")
    if case == "source is /dev/urandom":
        return Path("/dev/urandom"), ("--format", "jsonl"), Err(0, "path", "is a character device")
    if case == "source is a folder":
        return d, (), Err(0, "path", "is a directory, not a regular file")
    if case.startswith("jsonl image is a FIFO"):
        os.mkfifo(d / "fifo.png")
        src = _jsonl(d / "q.jsonl", [good[0], _mcq(2, "fifo.png"), good[1]])
        if case.endswith("--skip-bad"):
            return src, ("--skip-bad",), Ok(2, skipped=1)
        return src, (), Err(2, "image", "fifo.png is a FIFO (named pipe), not a regular file")
    if case.startswith("tsv image_path is a FIFO"):
        os.mkfifo(d / "fifo.png")
        rows = list(mmbench_rows(3, circular=False, image_side=8))
        rows[1]["image"] = ""
        header = ["index", "question", "A", "B", "C", "D", "answer", "image", "image_path"]
        rows = [dict(r, image_path="fifo.png" if i == 1 else "") for i, r in enumerate(rows)]
        src = write_tsv(d / "q.tsv", rows, header=header)
        if case.endswith("--skip-bad"):
            return src, ("--skip-bad",), Ok(2, skipped=1)
        return src, (), Err(3, "image", "is a FIFO (named pipe)")
    if case.startswith("pope --images holds a FIFO"):
        images = tmp_path / "images"
        images.mkdir()
        (images / "a.png").write_bytes(png_bytes())
        os.mkfifo(images / "b.png")
        src = _jsonl(
            d / "pope_random.jsonl",
            [
                {"question_id": i, "image": "ab"[i == 2] + ".png", "text": f"Is there a thing {i}?", "label": "yes"}
                for i in (1, 2, 3)
            ],
        )
        args = ("--images", images, "--format", "pope")
        if case.endswith("--skip-bad"):
            return src, (*args, "--skip-bad"), Ok(2, skipped=1)
        return src, args, Err(2, "image", "b.png is a FIFO (named pipe)")
    if case == "pope --images links to /dev/urandom":
        images = tmp_path / "images"
        images.mkdir()
        (images / "b.png").symlink_to("/dev/urandom")
        src = _jsonl(
            d / "pope_random.jsonl", [{"question_id": 1, "image": "b.png", "text": "Is there a cat?", "label": "no"}]
        )
        return src, ("--images", images, "--format", "pope"), Err(1, "image", "is outside")
    if case == "image is a socket":
        _socket(d / "sock.png")
        return _jsonl(d / "q.jsonl", [good[0], _mcq(2, "sock.png")]), (), Err(2, "image", "is a socket")
    if case.startswith("image links to /dev/zero"):
        (d / "zero.png").symlink_to("/dev/zero")
        src = _jsonl(d / "q.jsonl", [good[0], _mcq(2, "zero.png")])
        if case.endswith("--allow-outside"):
            return src, ("--allow-outside",), Err(2, "image", "is a character device, not a regular file")
        return src, (), Err(2, "image", f"zero.png is outside {d} {OUTSIDE}")
    if case.startswith("image links to a file outside"):
        (tmp_path / "elsewhere.png").write_bytes(png_bytes((1, 2, 3)))
        (d / "link.png").symlink_to(tmp_path / "elsewhere.png")
        src = _jsonl(d / "q.jsonl", [good[0], _mcq(2, "link.png")])
        if case.endswith("--allow-outside"):
            return src, ("--allow-outside",), Ok(2)
        return src, (), Err(2, "image", "link.png is outside")
    if case.startswith("image over --max-image-mb"):
        (d / "big.png").write_bytes(_noise_png(700))  # about 1.4 MB
        src = _jsonl(d / "q.jsonl", [good[0], _mcq(2, "big.png")])
        if case.endswith("default"):
            return src, (), Ok(2)
        return (
            src,
            ("--max-image-mb", "1"),
            Err(2, "image", "big.png is 1.4 MB, over the --max-image-mb limit of 1.0 MB"),
        )
    if case == "inline image over --max-image-mb":
        url = "data:image/png;base64," + base64.b64encode(_noise_png(700)).decode()
        src = _jsonl(d / "q.jsonl", [good[0], _mcq(2, url)])
        return src, ("--max-image-mb", "1"), Err(2, "image", "an inline image of 1.4 MB, over the --max-image-mb limit")
    if case == "a line longer than the cap":
        src = d / "q.jsonl"
        with open(src, "w") as f:
            f.write(json.dumps(good[0]) + "\n" + '{"question": "' + "x" * (18 * 2**20) + '"}\n')
        return src, ("--max-image-mb", "1"), Err(2, "line", "longer than 17 MB")
    raise AssertionError(case)


SPECIAL = [
    "source is a FIFO",
    "source is a socket",
    "source links to /dev/zero",
    "source is /dev/urandom",
    "source is a folder",
    "jsonl image is a FIFO",
    "jsonl image is a FIFO --skip-bad",
    "tsv image_path is a FIFO",
    "tsv image_path is a FIFO --skip-bad",
    "pope --images holds a FIFO",
    "pope --images holds a FIFO --skip-bad",
    "pope --images links to /dev/urandom",
    "image is a socket",
    "image links to /dev/zero",
    "image links to /dev/zero --allow-outside",
    "image links to a file outside",
    "image links to a file outside --allow-outside",
    "image over --max-image-mb",
    "image over --max-image-mb default",
    "inline image over --max-image-mb",
    "a line longer than the cap",
]


@pytest.mark.parametrize("case", SPECIAL, ids=[c.replace(" ", "-") for c in SPECIAL])
def test_special_file(ws, tmp_path, case):
    source, args, expected = special(tmp_path, case)
    check(ws, source, args, expected, dump(ws))


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--max-image-mb", "0"], "must be at least 1"),
        (["--max-image-mb", "99999999999999999999"], "at most 4096"),
        (["--max-image-mb", "1.5"], "is not a whole number"),
    ],
)
def test_max_image_mb_is_checked_at_the_door(ws, argv, says):
    p = vlmdesk(ws, "import", HOSTILE / "tsv_clean_odd_but_valid.tsv", *argv)
    assert p.returncode == 2 and says in p.stderr and "Traceback" not in p.stderr


# ------------------------------------------------------------------ interruptions and other writers


def big_tsv(path: Path, questions: int) -> Path:
    """Several write batches' worth of rows (500 rows per batch), each with its own image."""
    return write_tsv(path, mmbench_rows(questions, seed=5, circular=False, image_side=12))


def test_an_import_interrupted_after_storing_images_leaves_nothing(ws, tmp_path):
    """KeyboardInterrupt is what SIGTERM and Ctrl+C become in `vlmdesk import`: raised here after the first batch
    of images was committed, the import must take them out again."""
    src = big_tsv(tmp_path / "big.tsv", 1200)
    before = dump(ws)
    events = []

    def interrupt(event):
        events.append(event)
        if event["event"] == "progress" and event["images_new"] > 0:
            raise KeyboardInterrupt

    with open_workspace(ws) as w:
        with pytest.raises(KeyboardInterrupt):
            import_benchmark(w, src, on_event=interrupt)
        assert [d[1] for d in w.conn.execute("PRAGMA database_list")] == ["main"]  # the staging database is gone
        assert not w.conn.in_transaction
    assert events[-1]["images_new"] >= 500  # images had been committed: they were removed again
    assert dump(ws) == before


def _progress_lines(proc):
    for line in proc.stdout:
        event = json.loads(line)
        yield event


def test_sigterm_while_another_writer_holds_the_lock_leaves_nothing(ws, tmp_path):
    """Cancel from the app is SIGTERM. Another writer holds the workspace, so the import is stopped mid-way,
    waiting to write its first batch; it must exit 130 with one line and leave the workspace as it was."""
    src = big_tsv(tmp_path / "big.tsv", 300)
    before = dump(ws)
    blocker = sqlite3.connect(str(ws), timeout=30)
    blocker.execute("BEGIN IMMEDIATE")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-m", "vlmdesk", "--workspace", str(ws), "import", str(src), "--json-progress"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        events = _progress_lines(proc)
        assert next(events)["event"] == "start"
        progress = next(events)
        assert progress["event"] == "progress" and progress["rows"] == 300, progress
        proc.send_signal(signal.SIGTERM)
        blocker.rollback()
        assert proc.wait(timeout=CASE_TIMEOUT_S) == 130
        assert proc.stderr.read().splitlines() == [f"import of {src} interrupted; nothing was imported"]
    finally:
        blocker.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert dump(ws) == before


def _holds_write_lock(ws: Path) -> bool:
    probe = sqlite3.connect(str(ws), timeout=0)
    try:
        probe.execute("BEGIN IMMEDIATE")
        probe.rollback()
        return False
    except sqlite3.OperationalError:
        return True
    finally:
        probe.close()


def test_a_slow_import_does_not_lock_out_a_run_or_a_verdict(ws, tmp_path):
    """The import is paused (SIGSTOP) half-way, outside its short write transactions, for as long as a whole
    `vlmdesk run` and an annotator's verdict take: both must go through (with one long import transaction they
    would fail with "database is locked" after the busy timeout), and the import then finishes."""
    from annotation import reviews
    from vlmdesk.demo import import_demo

    with open_workspace(ws) as w:
        import_demo(w)
        item = catalog.list_items(w, catalog.benchmark_by_name(w, "demo").id)[0]
    src = big_tsv(tmp_path / "slow.tsv", 3000)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-m", "vlmdesk", "--workspace", str(ws), "import", str(src), "--json-progress"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        events = _progress_lines(proc)
        while (event := next(events))["event"] != "progress" or event["images_new"] == 0:
            pass  # the first batch of images is in the workspace
        for _ in range(200):  # stop it where it holds no lock (it rarely does)
            os.kill(proc.pid, signal.SIGSTOP)
            if not _holds_write_lock(ws):
                break
            os.kill(proc.pid, signal.SIGCONT)
            time.sleep(0.005)
        else:
            pytest.fail("the import held the write lock every time it was stopped")
        run = vlmdesk(ws, "run", "--bench", "demo", "--model", "baseline:random", "--json")
        assert run.returncode == 0, run.stderr
        with open_workspace(ws) as w:
            reviews.add_review(w, item.id, "alice", "ok")
            assert catalog.benchmark_by_name(w, "slow") is None  # the import is still under way, not visible
        assert proc.poll() is None
        os.kill(proc.pid, signal.SIGCONT)
        assert proc.wait(timeout=600) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
            proc.wait()
    with open_workspace(ws) as w:
        assert catalog.benchmark_by_name(w, "slow").questions == 3000
        assert [r.verdict for r in reviews.standing_reviews(w, annotator="alice")] == ["ok"]
        assert w.conn.execute("SELECT status FROM runs ORDER BY id DESC").fetchone()[0] == "finished"


def test_extract_input_nested_100000_deep_is_one_line(ws, tmp_path):
    deep = tmp_path / "responses.jsonl"
    deep.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    p = vlmdesk(ws, "extract", "--input", deep)
    assert p.returncode == 2 and p.stderr.splitlines() == [
        f"error: {deep}:1: line: not JSON (nested deeper than 64 levels)"
    ], p.stderr
