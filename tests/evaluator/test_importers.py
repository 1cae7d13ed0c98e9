"""The importers through the real command line, on real workspace files.

Every test drives `vlmdesk.cli.main([...])` in-process (stdout/stderr through capsys) except the subprocess tests,
which run the installed `vlmdesk` script. Files are generated into tmp_path (tests/factories.py) or copied from
the POPE slices in tests/data/pope.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import json
import re
import shutil
import sqlite3
import struct
import subprocess
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest

from db import catalog, open_workspace
from tests.factories import HEADER, jpeg_bytes, mmbench_rows, png_bytes, write_mmbench_tsv, write_tsv
from vlmdesk.cli import main

POPE_DATA = Path(__file__).resolve().parents[1] / "data" / "pope"
VLMDESK = Path(sys.executable).with_name("vlmdesk")
ERROR_LINE = re.compile(r"^error: .+:\d+: \w[\w -]*: .+$")
SKIPPED_LINE = re.compile(r"^skipped: .+:\d+: \w[\w -]*: .+$")
SIDE = 24  # small JPEGs keep the files tiny and the tests fast


# ------------------------------------------------------------------------------------------------ helpers


@dataclass
class Result:
    rc: int
    out: str
    err: str

    @property
    def json(self):
        return json.loads(self.out)

    @property
    def err_lines(self) -> list[str]:
        return self.err.splitlines()


class Vlmdesk:
    """`vlmdesk --workspace WS ...` in-process."""

    def __init__(self, ws: Path, capsys):
        self.ws, self.capsys = ws, capsys

    def __call__(self, *argv) -> Result:
        self.capsys.readouterr()
        rc = main(["--workspace", str(self.ws), *map(str, argv)])
        out, err = self.capsys.readouterr()
        return Result(rc, out, err)

    def ok(self, *argv) -> Result:
        r = self(*argv)
        assert r.rc == 0, r.err
        return r

    def items(self, bench: str) -> list[dict]:
        return self.ok("items", bench, "--json").json

    def benchmarks(self) -> dict[str, dict]:
        return {b["name"]: b for b in self.ok("benchmarks", "--json").json}


@pytest.fixture
def ws(tmp_path) -> Path:
    return tmp_path / "ws.sqlite"


@pytest.fixture
def vd(ws, capsys) -> Vlmdesk:
    return Vlmdesk(ws, capsys)


def dump(path: Path) -> dict:
    """The whole content of a workspace file: schema, user_version and every row of every table."""
    conn = sqlite3.connect(str(path))
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        out = {t: sorted(repr(row) for row in conn.execute(f'SELECT * FROM "{t}"')) for t in tables}
        out["-schema"] = list(conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name"))
        out["-user_version"] = conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()
    return out


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def data_url(data: bytes, mime="image/png") -> str:
    return f"data:{mime};base64,{b64(data)}"


def bomb_png(width=30_000, height=30_000) -> bytes:
    """A tiny PNG whose IHDR claims width x height pixels (no huge image is ever allocated)."""
    png = bytearray(png_bytes(size=(4, 4)))
    assert png[12:16] == b"IHDR"
    png[16:24] = struct.pack(">II", width, height)
    png[29:33] = struct.pack(">I", zlib.crc32(bytes(png[12:29])))
    return bytes(png)


def rows(n=4, **kw) -> list[dict]:
    """MMBench-shaped rows without circular copies; row i is on line i + 2 of the written TSV."""
    return list(mmbench_rows(n, circular=False, image_side=SIDE, **kw))


def write_jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def mcq_records(n=4) -> list[dict]:
    return [
        {
            "index": i,
            "question": f"What is shown in picture {i}?",
            "options": ["a cat", "a dog", "a bird"],
            "answer": "ABC"[i % 3],
            "image": data_url(png_bytes((i * 40 % 256, 10, 200))),
        }
        for i in range(n)
    ]


def pope_images(names, folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    for name in names:
        h = hashlib.sha256(name.encode()).digest()
        (folder / name).write_bytes(png_bytes(tuple(h[:3]), size=(6, 6)))
    return folder


def pope_records(path: Path) -> list[dict]:
    text = path.read_text()
    return json.loads(text) if text.lstrip().startswith("[") else [json.loads(x) for x in text.splitlines() if x]


def copy_pope(name: str, tmp_path: Path, as_name: str | None = None) -> tuple[Path, Path, list[dict]]:
    dst = tmp_path / (as_name or name)
    shutil.copy(POPE_DATA / name, dst)
    recs = pope_records(dst)
    images = pope_images(sorted({r["image"] for r in recs}), tmp_path / "images")
    return dst, images, recs


def seed_workspace(vd: Vlmdesk, tmp_path: Path) -> dict:
    """A workspace that already holds a benchmark (with circular copies), so "unchanged" is not trivially true."""
    vd.ok("import", write_mmbench_tsv(tmp_path / "seed.tsv", 3, seed=99, image_side=SIDE), "--name", "seed")
    return dump(vd.ws)


# ----------------------------------------------------------------------------------------- MMBench TSV


def test_mmbench_tsv_circular_copies_are_checked_and_folded(vd, tmp_path):
    src = write_mmbench_tsv(tmp_path / "MMBench_DEV_EN.tsv", 12, seed=1, image_side=SIDE)
    all_rows = list(mmbench_rows(12, seed=1, image_side=SIDE))
    originals = [r for r in all_rows if int(r["index"]) < 1_000_000]
    n_options = {int(r["index"]): sum(1 for L in "ABCD" if r[L]) for r in originals}
    assert {2, 3, 4} <= set(n_options.values()), "the generated file should mix 2, 3 and 4 options"

    r = vd.ok("import", src)
    assert r.err == ""
    folded = len(all_rows) - 12
    assert f"12 questions from {len(all_rows)} rows ({folded} circular copies folded, 0 skipped)" in r.out

    bench = vd.benchmarks()["mmbench-dev-en"]
    assert (bench["kind"], bench["questions"], bench["rows_read"], bench["images"]) == ("mcq", 12, len(all_rows), 12)
    assert bench["rows_folded"] == folded
    items = vd.items("mmbench-dev-en")
    assert [i["index"] for i in items] == list(range(12))
    for item, row in zip(items, originals):
        n = n_options[item["index"]]
        assert item["circular_copies"] == n - 1
        assert len(item["options"]) == n, "empty trailing options must be absent"
        assert item["options"] == [row[L] for L in "ABCD"[:n]]
        assert item["answer"] == row["answer"]
        assert item["hint"] == (None if row["hint"] == "nan" else row["hint"])
        assert (item["category"], item["l2_category"], item["split"]) == (row["category"], row["l2-category"], "dev")
        assert item["language"] == "en"
    # Copies are stored once: their indexes are kept with the question, not as items.
    with open_workspace(vd.ws) as w:
        b = catalog.benchmark_by_name(w, "mmbench-dev-en")
        assert catalog.item_by_index(w, b.id, 1_000_000) is None
        assert sorted(catalog.item_by_index(w, b.id, 0).meta["copies"]) == [
            int(x["index"]) for x in all_rows if int(x["index"]) % 1_000_000 == 0 and x["index"] != "0"
        ]


def _copy_line(all_rows, index: int) -> int:
    return next(n for n, r in enumerate(all_rows, start=2) if int(r["index"]) == index)


@pytest.mark.parametrize(
    "breakage, field",
    [
        ("options not a rotation", "A"),
        ("answer not rotated", "answer"),
        ("question differs", "question"),
        ("different image", "image"),
        ("hint differs", "hint"),
        ("not rotated at all", "A"),
    ],
)
def test_a_circular_copy_that_does_not_match_its_question(vd, tmp_path, breakage, field):
    before = seed_workspace(vd, tmp_path)
    all_rows = list(mmbench_rows(6, seed=2, image_side=SIDE))
    victim = next(r for r in all_rows if int(r["index"]) >= 1_000_000 and sum(1 for L in "ABCD" if r[L]) >= 3)
    if breakage == "options not a rotation":
        victim["A"], victim["B"] = victim["B"], victim["A"]  # a swap is a permutation, not a rotation
        victim["answer"] = {"A": "B", "B": "A"}.get(victim["answer"], victim["answer"])
    elif breakage == "answer not rotated":
        n = sum(1 for L in "ABCD" if victim[L])
        victim["answer"] = "ABCD"[("ABCD".index(victim["answer"]) + 1) % n]
    elif breakage == "question differs":
        victim["question"] += " (edited)"
    elif breakage == "hint differs":
        victim["hint"] = "Another hint than the question's."
    elif breakage == "not rotated at all":
        original = next(r for r in all_rows if int(r["index"]) == int(victim["index"]) % 1_000_000)
        victim.update({L: original[L] for L in "ABCD"}, answer=original["answer"])
    else:
        victim["image"] = b64(jpeg_bytes(12345, SIDE))
    src = write_tsv(tmp_path / "bad_copies.tsv", all_rows)
    line = _copy_line(all_rows, int(victim["index"]))

    r = vd("import", src)
    assert r.rc == 2 and r.out == ""
    assert len(r.err_lines) == 1 and ERROR_LINE.match(r.err_lines[0]), r.err
    assert r.err_lines[0].startswith(f"error: {src}:{line}: {field}: circular copy of row "), r.err
    assert dump(vd.ws) == before

    r = vd("import", src, "--skip-bad", "--json")
    assert r.rc == 0
    assert [x for x in r.err_lines if SKIPPED_LINE.match(x)] == r.err_lines and len(r.err_lines) == 1
    assert r.err_lines[0].startswith(f"skipped: {src}:{line}: {field}: ")
    report = r.json
    assert (report["questions"], report["rows_folded"], report["rows_skipped"]) == (6, len(all_rows) - 7, 1)
    base = int(victim["index"]) % 1_000_000
    item = next(i for i in vd.items("bad-copies") if i["index"] == base)
    n = len(item["options"])
    assert item["circular_copies"] == n - 2


def test_image_references_backward_and_forward(vd, tmp_path):
    rs = rows(5)
    rs[0]["image"] = "3"  # forward: row 3 comes later
    rs[4]["image"] = "1"  # backward
    src = write_tsv(tmp_path / "refs.tsv", rs)
    vd.ok("import", src)
    items = {i["index"]: i for i in vd.items("refs")}
    assert items[0]["image_sha256"] == items[3]["image_sha256"]
    assert items[4]["image_sha256"] == items[1]["image_sha256"]
    assert items[0]["image_sha256"] != items[1]["image_sha256"]
    assert vd.benchmarks()["refs"]["images"] == 3
    # The shared image is the referenced row's image, byte for byte.
    out = tmp_path / "img0.jpg"
    vd.ok("show", "refs", "0", "--image-out", out)
    assert out.read_bytes() == base64.b64decode(rs[3]["image"])


def test_a_reference_to_a_skipped_row_is_skipped_too(vd, tmp_path):
    rs = rows(5)
    rs[1]["image"] = "@" * 100  # undecodable base64 (line 3)
    rs[3]["image"] = "1"  # refers to the bad row (line 5)
    src = write_tsv(tmp_path / "chain.tsv", rs)
    r = vd("import", src, "--skip-bad")
    assert r.rc == 0
    assert [x.split(": ")[1:3] for x in r.err_lines] == [[f"{src}:3", "image"], [f"{src}:5", "image"]], r.err
    assert "which was skipped" in r.err_lines[1]
    assert [i["index"] for i in vd.items("chain")] == [0, 2, 4]


def test_copies_of_a_skipped_question_are_skipped(vd, tmp_path):
    all_rows = list(mmbench_rows(3, seed=4, image_side=SIDE))
    all_rows[0]["answer"] = "Z"
    src = write_tsv(tmp_path / "orphans.tsv", all_rows)
    r = vd("import", src, "--skip-bad", "--json")
    n_copies = sum(1 for x in all_rows if int(x["index"]) % 1_000_000 == 0) - 1
    assert r.json["rows_skipped"] == 1 + n_copies
    assert r.err_lines[0].startswith(f"skipped: {src}:2: answer: ")
    # The copies share row 0's image by reference, so they fail on that first.
    assert all("row 0, which was skipped" in x for x in r.err_lines[1:]) and len(r.err_lines) == 1 + n_copies
    assert [i["index"] for i in vd.items("orphans")] == [1, 2]


def test_image_path_column_relative_to_the_file_or_images_dir(vd, tmp_path):
    header = [h if h != "image" else "image_path" for h in HEADER]
    pics = tmp_path / "pics"
    pics.mkdir()
    rs = rows(3)
    for i, r in enumerate(rs):
        (pics / f"{i}.jpg").write_bytes(base64.b64decode(r.pop("image")))
        r["image_path"] = f"pics/{i}.jpg"
    src = write_tsv(tmp_path / "paths.tsv", rs, header=header)
    vd.ok("import", src)
    items = vd.items("paths")
    assert [i["image_sha256"] for i in items] == [
        hashlib.sha256((pics / f"{i}.jpg").read_bytes()).hexdigest() for i in range(3)
    ]
    # With --images the paths are relative to that folder instead.
    other = tmp_path / "elsewhere"
    other.mkdir()
    moved = write_tsv(other / "paths2.tsv", [dict(r, question=r["question"] + "!") for r in rs], header=header)
    vd.ok("import", moved, "--images", tmp_path)
    assert [i["image_sha256"] for i in vd.items("paths2")] == [i["image_sha256"] for i in items]


def test_hints_options_and_answers_as_pandas_writes_them(vd, tmp_path):
    rs = rows(4)
    rs[0].update(hint="nan", A="yes", B="no", C="", D="", answer="B")
    rs[1].update(hint="", A="1", B="2", C="3", D="nan", answer="C")
    rs[2].update(hint="  Look at the sky.  ", answer="a")  # lower-case answers are accepted
    src = write_tsv(tmp_path / "shapes.tsv", rs)
    vd.ok("import", src)
    items = vd.items("shapes")
    assert [(i["hint"], i["options"], i["answer"]) for i in items[:3]] == [
        (None, ["yes", "no"], "B"),
        (None, ["1", "2", "3"], "C"),
        ("Look at the sky.", [rs[2][L] for L in "ABCD" if rs[2][L]], "A"),
    ]


def test_a_gap_in_the_options_is_an_error(vd, tmp_path):
    rs = rows(3)
    rs[1].update(C="", D="filled after a gap")
    src = write_tsv(tmp_path / "gap.tsv", rs)
    r = vd("import", src)
    assert r.rc == 2 and r.err_lines == [r.err_lines[0]]
    assert r.err_lines[0].startswith(f"error: {src}:3: D: ")


def test_test_split_without_answer_column(vd, tmp_path):
    src = write_mmbench_tsv(tmp_path / "MMBench_TEST_EN.tsv", 5, seed=5, with_answer=False, image_side=SIDE)
    assert "answer" not in src.read_text().splitlines()[0].split("\t")
    r = vd.ok("import", src, "--json")
    assert r.json["questions"] == 5 and r.json["rows_folded"] > 0
    items = vd.items("mmbench-test-en")
    assert [i["answer"] for i in items] == [None] * 5
    shown = vd.ok("show", "mmbench-test-en", "2", "--json").json
    assert shown["answer"] is None


def test_chinese_items_are_zh(vd, tmp_path):
    rs = rows(3)
    rs[1].update(question="图中是什么动物？", A="猫", B="狗", C="鸟", D="", answer="A")
    rs[2].update(hint="请看图片。")
    src = write_tsv(tmp_path / "MMBench_DEV_CN.tsv", rs)
    vd.ok("import", src)
    assert [i["language"] for i in vd.items("mmbench-dev-cn")] == ["en", "zh", "zh"]
    text = vd.ok("show", "mmbench-dev-cn", "1").out
    assert "图中是什么动物？" in text and " * A. 猫" in text


def test_extra_columns_are_kept(vd, tmp_path):
    header = HEADER + ["difficulty"]
    rs = rows(2)
    rs[0]["difficulty"] = "hard"
    src = write_tsv(tmp_path / "extra.tsv", rs, header=header)
    vd.ok("import", src)
    with open_workspace(vd.ws) as w:
        b = catalog.benchmark_by_name(w, "extra")
        meta0 = catalog.item_by_index(w, b.id, 0).meta
        meta1 = catalog.item_by_index(w, b.id, 1).meta
    assert meta0 == {"source": "generated", "difficulty": "hard"}  # "comment" is nan: absent
    assert meta1 == {"source": "generated"}


def test_seed_bench_like_tsv(vd, tmp_path):
    header = ["index", "question", "A", "B", "C", "D", "answer", "category", "image", "question_type_id"]
    rs = [
        {
            "index": str(100 + i),
            "question": f"How many objects are there in scene {i}?",
            "A": "1",
            "B": "2",
            "C": "3",
            "D": "4",
            "answer": "ABCD"[i % 4],
            "category": "Instance Counting",
            "image": b64(jpeg_bytes(500 + i, SIDE)),
            "question_type_id": str(i % 9 + 1),
        }
        for i in range(6)
    ]
    rs[5]["image"] = "102"
    src = write_tsv(tmp_path / "SEEDBench_IMG.tsv", rs, header=header)
    r = vd.ok("import", src, "--name", "seed", "--json")
    assert (r.json["questions"], r.json["rows_folded"], r.json["images"]) == (6, 0, 5)
    items = vd.items("seed")
    assert [i["index"] for i in items] == [100, 101, 102, 103, 104, 105]
    assert all(i["hint"] is None and i["l2_category"] is None and i["split"] is None for i in items)
    assert [i["answer"] for i in items] == ["A", "B", "C", "D", "A", "B"]
    assert items[5]["image_sha256"] == items[2]["image_sha256"]


def test_windows_line_ends_and_a_bom(vd, tmp_path):
    src = write_mmbench_tsv(tmp_path / "win.tsv", 3, seed=12, image_side=SIDE)
    src.write_bytes(b"\xef\xbb\xbf" + src.read_bytes().replace(b"\n", b"\r\n"))
    r = vd.ok("import", src, "--json")
    assert r.json["questions"] == 3 and r.json["rows_folded"] > 0
    items = vd.items("win")
    assert [i["index"] for i in items] == [0, 1, 2] and all(i["split"] == "dev" for i in items)
    assert not any(o.endswith("\r") for i in items for o in i["options"])


def test_large_indexes_without_an_original_are_plain_items(vd, tmp_path):
    rs = rows(2)
    rs[1]["index"] = "3000001"  # no row 1: not a circular copy
    vd.ok("import", write_tsv(tmp_path / "big.tsv", rs))
    assert [(i["index"], i["circular_copies"]) for i in vd.items("big")] == [(0, 0), (3000001, 0)]


# ----------------------------------------------------------------------------------------------- POPE


@pytest.mark.parametrize(
    "name, setting",
    [
        ("coco_pope_random.json", "random"),
        ("coco_pope_popular.json", "popular"),
        ("coco_pope_adversarial.json", "adversarial"),
        ("gqa_pope_seem_random.json", "random"),
    ],
)
def test_pope_files_with_images(vd, tmp_path, name, setting):
    src, images, recs = copy_pope(name, tmp_path)
    r = vd.ok("import", src, "--images", images, "--json")  # format detected from the content
    assert r.err == ""
    bench_name = Path(name).stem.replace("_", "-")
    distinct = {x["image"] for x in recs}
    assert (r.json["kind"], r.json["format"], r.json["questions"], r.json["images"]) == (
        "yesno",
        "pope",
        len(recs),
        len(distinct),
    )
    bench = vd.benchmarks()[bench_name]
    assert (bench["setting"], bench["questions"], bench["rows_read"], bench["images"]) == (
        setting,
        len(recs),
        len(recs),
        len(distinct),
    )
    items = vd.items(bench_name)
    assert [(i["index"], i["question"], i["answer"], i["options"]) for i in items] == [
        (x["question_id"], x["text"], x["label"], []) for x in recs
    ]
    for item, rec in zip(items, recs):
        assert item["image_sha256"] == hashlib.sha256((images / rec["image"]).read_bytes()).hexdigest()
    out = tmp_path / "q1.png"
    shown = vd.ok("show", bench_name, recs[0]["question_id"], "--image-out", out)
    assert f"answer: {recs[0]['label']}" in shown.out
    assert out.read_bytes() == (images / recs[0]["image"]).read_bytes()


def test_pope_setting_option_and_unknown_setting(vd, tmp_path):
    src, images, _ = copy_pope("coco_pope_random.json", tmp_path, as_name="pope_questions.jsonl")
    vd.ok("import", src, "--images", images, "--format", "pope")
    assert vd.benchmarks()["pope-questions"]["setting"] is None
    other = tmp_path / "pope_questions_again.jsonl"
    other.write_text(src.read_text() + "\n")  # different bytes, same questions
    vd.ok("import", other, "--images", images, "--format", "pope", "--setting", "popular", "--name", "p2")
    assert vd.benchmarks()["p2"]["setting"] == "popular"
    # --setting wins over the file name too.
    adv, _, _ = copy_pope("coco_pope_adversarial.json", tmp_path)
    vd.ok("import", adv, "--images", images, "--setting", "random", "--name", "p3")
    assert vd.benchmarks()["p3"]["setting"] == "random"


def test_pope_without_images_warns(vd, tmp_path):
    src, _, recs = copy_pope("coco_pope_popular.json", tmp_path)
    r = vd.ok("import", src)
    assert r.err_lines == ["warning: no --images given: questions are imported without images (runs will need them)"]
    items = vd.items("coco-pope-popular")
    assert len(items) == len(recs) and all(i["image_sha256"] is None for i in items)


# ---------------------------------------------------------------------------------------- generic JSONL


def test_generic_jsonl(vd, tmp_path):
    jpeg, png = jpeg_bytes(7, SIDE), png_bytes((1, 2, 3))
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "cat.png").write_bytes(png_bytes((9, 9, 9)))
    records = [
        {
            "index": 1,
            "question": "Which animal?",
            "options": ["cat", "dog"],
            "answer": "B",
            "image": "img/cat.png",
            "hint": "Look closely.",
            "category": "animals",
            "l2_category": "perception",
            "split": "dev",
        },
        {
            "index": 2,
            "question": "Which colour?",
            "options": ["red", "green", "blue"],
            "answer": 2,
            "image": b64(jpeg),
        },  # plain base64 of a JPEG starts with "/9j/"
        {
            "index": 3,
            "question": "How many?",
            "options": {"A": "one", "B": "two", "C": "three", "D": "four"},
            "answer": 0,
            "image": data_url(png),
        },
        {"question": "No index, no answer?", "options": ["x", "y"], "image": b64(png), "source": "mine"},
    ]
    src = write_jsonl(tmp_path / "mine.jsonl", records)
    r = vd.ok("import", src, "--json")
    assert (r.json["format"], r.json["kind"], r.json["questions"], r.json["images"]) == ("jsonl", "mcq", 4, 3)
    items = vd.items("mine")
    assert [(i["index"], i["options"], i["answer"]) for i in items] == [
        (1, ["cat", "dog"], "B"),
        (2, ["red", "green", "blue"], "C"),
        (3, ["one", "two", "three", "four"], "A"),
        (4, ["x", "y"], None),
    ]
    assert (items[0]["hint"], items[0]["category"], items[0]["l2_category"], items[0]["split"]) == (
        "Look closely.",
        "animals",
        "perception",
        "dev",
    )
    assert items[1]["image_sha256"] == hashlib.sha256(jpeg).hexdigest()
    assert items[2]["image_sha256"] == items[3]["image_sha256"] == hashlib.sha256(png).hexdigest()


# ---------------------------------------------------------------------------------------- re-import


def test_reimport_is_idempotent(vd, tmp_path):
    src = write_mmbench_tsv(tmp_path / "again.tsv", 4, seed=6, image_side=SIDE)
    first = vd.ok("import", src)
    before = dump(vd.ws)
    r = vd.ok("import", src)
    assert r.out.strip() == f"{src} is already imported as 'again' (same content); nothing to do"
    assert dump(vd.ws) == before
    # Same content under another name and path: still the same benchmark.
    copy = tmp_path / "copy_of_again.tsv"
    shutil.copy(src, copy)
    r = vd.ok("import", copy, "--json")
    assert r.json["already_imported"] is True and r.json["name"] == "again" and r.json["questions"] == 4
    assert dump(vd.ws) == before
    assert list(vd.benchmarks()) == ["again"] and first.out != r.out


def test_a_different_file_under_a_taken_name_is_refused(vd, tmp_path):
    vd.ok("import", write_mmbench_tsv(tmp_path / "one.tsv", 2, seed=1, image_side=SIDE), "--name", "x")
    before = dump(vd.ws)
    r = vd("import", write_mmbench_tsv(tmp_path / "two.tsv", 2, seed=2, image_side=SIDE), "--name", "x")
    assert r.rc == 2 and len(r.err_lines) == 1 and "--name" in r.err
    assert dump(vd.ws) == before


# ---------------------------------------------------------------------------------- documented outputs


def test_json_outputs_have_the_documented_fields(vd, tmp_path):
    vd.ok("import", write_mmbench_tsv(tmp_path / "doc.tsv", 3, seed=8, image_side=SIDE))
    (bench,) = vd.ok("benchmarks", "--json").json
    assert {"name", "kind", "questions", "rows_read", "images"} <= set(bench)
    item_fields = {"index", "question", "hint", "options", "answer", "category", "l2_category", "split", "image_sha256"}
    items = vd.items("doc")
    assert len(items) == 3 and all(item_fields <= set(i) for i in items)
    assert all(isinstance(i["options"], list) and len(i["image_sha256"]) == 64 for i in items)
    shown = vd.ok("show", "doc", "1", "--json").json
    assert item_fields <= set(shown) and shown == items[1]
    limited = vd.ok("items", "doc", "--json", "--limit", "2").json
    assert limited == items[:2]


def test_text_outputs(vd, tmp_path):
    assert vd("benchmarks").rc == 2 and not vd.ws.exists()  # a reading command creates no workspace
    open_workspace(vd.ws).close()
    assert "no benchmarks yet" in vd.ok("benchmarks").out
    vd.ok("import", write_mmbench_tsv(tmp_path / "txt.tsv", 3, seed=9, image_side=SIDE))
    out = vd.ok("benchmarks").out
    assert re.search(r"^txt\s+mcq\s+3\s+\d+\s+3\s", out, re.MULTILINE), out
    assert len(vd.ok("items", "txt").out.splitlines()) == 3
    img = tmp_path / "shown.jpg"
    shown = vd.ok("show", "txt", "0", "--image-out", img).out
    assert "question: Question 0" in shown and f"written to {img}" in shown
    item = vd.items("txt")[0]
    assert hashlib.sha256(img.read_bytes()).hexdigest() == item["image_sha256"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["items", "nope"], "no benchmark named 'nope'"),
        (["show", "nope", "1"], "no benchmark named 'nope'"),
        (["show", "u", "77"], "has no item with index 77"),
    ],
)
def test_usage_errors_are_one_line(vd, tmp_path, argv, message):
    vd.ok("import", write_mmbench_tsv(tmp_path / "u.tsv", 1, image_side=SIDE))
    r = vd(*argv)
    assert r.rc == 2 and r.out == "" and len(r.err_lines) == 1 and message in r.err


@pytest.mark.parametrize("command", [None, "import", "benchmarks", "items", "show"])
def test_help_everywhere_has_examples(capsys, command):
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"] if command else ["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out and "vlmdesk " in out.split("examples:")[1]
    assert "--workspace" in out


def test_workspace_option_everywhere_and_the_environment_default(tmp_path, capsys, monkeypatch):
    src = write_mmbench_tsv(tmp_path / "w.tsv", 2, image_side=SIDE)
    after = tmp_path / "after.sqlite"
    assert main(["import", str(src), "--workspace", str(after)]) == 0
    for argv in (["benchmarks", "--json"], ["items", "w", "--json"], ["show", "w", "1", "--json"]):
        capsys.readouterr()
        assert main([*argv, "--workspace", str(after)]) == 0
        assert "w" in capsys.readouterr().out
    env = tmp_path / "env.sqlite"
    monkeypatch.setenv("VLMDESK_WORKSPACE", str(env))
    assert main(["import", str(src)]) == 0
    assert env.is_file()
    capsys.readouterr()
    assert main(["benchmarks", "--json"]) == 0
    assert [b["name"] for b in json.loads(capsys.readouterr().out)] == ["w"]


# ---------------------------------------------------------------------------------------- bad input


@dataclass
class Bad:
    path: Path
    line: int
    field: str
    args: tuple = ()
    good: int | None = None  # questions imported with --skip-bad; None: the error is about the whole file
    skipped: int = 1


def _tsv(tmp_path, name, rs, header=None) -> Path:
    return write_tsv(tmp_path / name, rs, header=header)


def _replace_line(path: Path, line: int, make) -> Path:
    lines = path.read_bytes().split(b"\n")
    lines[line - 1] = make(lines[line - 1])
    path.write_bytes(b"\n".join(lines))
    return path


def _cut_last_line(path: Path, keep: float = 0.5) -> Path:
    data = path.read_bytes().rstrip(b"\n")
    start = data.rindex(b"\n") + 1
    path.write_bytes(data[: start + int((len(data) - start) * keep)])
    return path


def bad_tsv(tmp_path, case) -> Bad:
    rs = rows(5)
    if case == "missing column":
        header = [h for h in HEADER if h != "question"]
        return Bad(_tsv(tmp_path, "c.tsv", rs, header), 1, "header")
    if case == "missing cell":
        p = _replace_line(_tsv(tmp_path, "c.tsv", rs), 4, lambda b: b"\t".join(b.split(b"\t")[:5]))
        return Bad(p, 4, "C", good=4)
    if case == "undecodable base64":
        rs[2]["image"] = "Zm9v*" * 30
        return Bad(_tsv(tmp_path, "c.tsv", rs), 4, "image", good=4)
    if case == "not an image":
        rs[2]["image"] = b64(b"GIF89a, or so it says. " * 8)
        return Bad(_tsv(tmp_path, "c.tsv", rs), 4, "image", good=4)
    if case == "truncated image":
        rs[2]["image"] = b64(base64.b64decode(rs[2]["image"])[:300])
        return Bad(_tsv(tmp_path, "c.tsv", rs), 4, "image", good=4)
    if case == "answer not an option":
        rs[2].update(C="", D="", answer="C")
        return Bad(_tsv(tmp_path, "c.tsv", rs), 4, "answer", good=4)
    if case == "duplicate index":
        rs[3]["index"] = rs[1]["index"]
        return Bad(_tsv(tmp_path, "c.tsv", rs), 5, "index", good=4)
    if case == "reference to a missing row":
        rs[2]["image"] = "999"
        return Bad(_tsv(tmp_path, "c.tsv", rs), 4, "image", good=4)
    if case == "decompression bomb":
        rs[2]["image"] = b64(bomb_png())
        return Bad(_tsv(tmp_path, "c.tsv", rs), 4, "image", good=4)
    if case == "wrong encoding":
        rs[2]["question"] = "Qu\u00e9 es esto?"
        p = _tsv(tmp_path, "c.tsv", rs)
        return Bad(_replace_line(p, 4, lambda b: b.replace("é".encode(), "é".encode("latin-1"))), 4, "encoding", good=4)
    if case == "truncated last line":
        return Bad(_cut_last_line(_tsv(tmp_path, "c.tsv", rs)), 6, "source", good=4)
    raise AssertionError(case)


def bad_jsonl(tmp_path, case) -> Bad:
    recs = mcq_records(5)
    p = tmp_path / "c.jsonl"
    if case == "missing field":
        del recs[2]["question"]
        return Bad(write_jsonl(p, recs), 3, "question", good=4)
    if case == "undecodable base64":
        recs[2]["image"] = "data:image/png;base64,***not base64***"
        return Bad(write_jsonl(p, recs), 3, "image", good=4)
    if case == "not an image":
        recs[2]["image"] = data_url(b"plain text, not pixels")
        return Bad(write_jsonl(p, recs), 3, "image", good=4)
    if case == "answer not an option":
        recs[2]["answer"] = "D"
        return Bad(write_jsonl(p, recs), 3, "answer", good=4)
    if case == "answer index out of range":
        recs[2]["answer"] = 3
        return Bad(write_jsonl(p, recs), 3, "answer", good=4)
    if case == "duplicate index":
        recs[3]["index"] = 1
        return Bad(write_jsonl(p, recs), 4, "index", good=4)
    if case == "missing image file":
        recs[2]["image"] = "no/such/picture.png"
        return Bad(write_jsonl(p, recs), 3, "image", good=4)
    if case == "decompression bomb":
        recs[2]["image"] = data_url(bomb_png())
        return Bad(write_jsonl(p, recs), 3, "image", good=4)
    if case == "wrong encoding":
        recs[2]["question"] = "Qu\u00e9 es esto?"
        write_jsonl(p, recs)
        return Bad(_replace_line(p, 3, lambda b: b.replace("é".encode(), "é".encode("latin-1"))), 3, "encoding", good=4)
    if case == "truncated last line":
        return Bad(_cut_last_line(write_jsonl(p, recs)), 5, "json", good=4)
    raise AssertionError(case)


def bad_pope(tmp_path, case) -> Bad:
    src, images, recs = copy_pope("coco_pope_random.json", tmp_path)
    recs = recs[:8]
    args = ("--images", images)
    if case == "missing label":
        del recs[2]["label"]
        return Bad(write_jsonl(src, recs), 3, "label", args, good=7)
    if case == "label not yes or no":
        recs[2]["label"] = "maybe"
        return Bad(write_jsonl(src, recs), 3, "label", args, good=7)
    if case == "duplicate question_id":
        recs[5]["question_id"] = recs[1]["question_id"]
        return Bad(write_jsonl(src, recs), 6, "index", args, good=7)
    if case == "missing image file":
        recs[2]["image"] = "COCO_val2014_missing.jpg"
        return Bad(write_jsonl(src, recs), 3, "image", args, good=7)
    if case == "image PIL cannot open":
        (images / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
        recs[2]["image"] = "broken.jpg"
        return Bad(write_jsonl(src, recs), 3, "image", args, good=7)
    if case == "decompression bomb":
        (images / "bomb.png").write_bytes(bomb_png())
        recs[2]["image"] = "bomb.png"
        return Bad(write_jsonl(src, recs), 3, "image", args, good=7)
    if case == "wrong encoding":
        recs[2]["text"] = "Is there a caf\u00e9 in the image?"
        write_jsonl(src, recs)
        return Bad(
            _replace_line(src, 3, lambda b: b.replace("é".encode(), "é".encode("latin-1"))), 3, "encoding", args, good=7
        )
    if case == "truncated last line":
        return Bad(_cut_last_line(write_jsonl(src, recs)), 8, "json", args, good=7)
    if case == "truncated array":
        gqa, gimages, grecs = copy_pope("gqa_pope_seem_random.json", tmp_path)
        text = gqa.read_text()
        # Cut inside element 7, which starts on line 38 ("[" on line 1, then 6 lines per element).
        gqa.write_text(text[: text.index('"question_id": 7')])
        return Bad(gqa, 38, "json", ("--images", gimages), good=6)
    raise AssertionError(case)


TSV_CASES = [
    "missing column",
    "missing cell",
    "undecodable base64",
    "not an image",
    "truncated image",
    "answer not an option",
    "duplicate index",
    "reference to a missing row",
    "decompression bomb",
    "wrong encoding",
    "truncated last line",
]
JSONL_CASES = [
    "missing field",
    "undecodable base64",
    "not an image",
    "answer not an option",
    "answer index out of range",
    "duplicate index",
    "missing image file",
    "decompression bomb",
    "wrong encoding",
    "truncated last line",
]
POPE_CASES = [
    "missing label",
    "label not yes or no",
    "duplicate question_id",
    "missing image file",
    "image PIL cannot open",
    "decompression bomb",
    "wrong encoding",
    "truncated last line",
    "truncated array",
]
CASES = [("tsv", c) for c in TSV_CASES] + [("jsonl", c) for c in JSONL_CASES] + [("pope", c) for c in POPE_CASES]
BUILDERS = {"tsv": bad_tsv, "jsonl": bad_jsonl, "pope": bad_pope}


@pytest.mark.parametrize("fmt, case", CASES, ids=[f"{f}-{c.replace(' ', '-')}" for f, c in CASES])
def test_bad_input_is_one_line_and_changes_nothing(vd, tmp_path, fmt, case):
    before = seed_workspace(vd, tmp_path)
    bad = BUILDERS[fmt](tmp_path, case)
    r = vd("import", bad.path, *bad.args)
    assert r.rc == 2, r
    assert r.out == ""
    assert len(r.err_lines) == 1, r.err
    line = r.err_lines[0]
    assert ERROR_LINE.match(line), line
    assert line.startswith(f"error: {bad.path}:{bad.line}: {bad.field}: "), line
    assert dump(vd.ws) == before


@pytest.mark.parametrize("fmt, case", CASES, ids=[f"{f}-{c.replace(' ', '-')}" for f, c in CASES])
def test_skip_bad_imports_the_good_rows_and_reports_each_skipped_one(vd, tmp_path, fmt, case):
    seed_workspace(vd, tmp_path)
    bad = BUILDERS[fmt](tmp_path, case)
    r = vd("import", bad.path, *bad.args, "--skip-bad", "--json")
    if bad.good is None:  # the file as a whole is unusable: nothing to skip to
        assert r.rc == 2 and len(r.err_lines) == 1 and ERROR_LINE.match(r.err_lines[0])
        assert r.err_lines[0].startswith(f"error: {bad.path}:{bad.line}: {bad.field}: ")
        return
    assert r.rc == 0, r.err
    skipped = [x for x in r.err_lines if x.startswith("skipped: ")]
    assert len(skipped) == bad.skipped, r.err
    assert all(SKIPPED_LINE.match(x) for x in skipped), skipped
    assert skipped[0].startswith(f"skipped: {bad.path}:{bad.line}: {bad.field}: "), skipped
    report = r.json
    assert report["questions"] == bad.good and report["rows_skipped"] == bad.skipped
    assert report["skipped"] == [x.removeprefix("skipped: ") for x in skipped]
    bench = vd.benchmarks()[report["name"]]
    assert bench["questions"] == bad.good and bench["rows_skipped"] == bad.skipped
    assert len(vd.items(report["name"])) == bad.good


def test_every_bad_row_is_reported(vd, tmp_path):
    rs = rows(8)
    rs[1]["answer"] = "Q"
    rs[3]["image"] = "404"
    rs[5]["index"] = rs[0]["index"]
    rs[6]["image"] = b64(bomb_png())
    src = write_tsv(tmp_path / "many.tsv", rs)
    r = vd("import", src, "--skip-bad")
    assert r.rc == 0
    got = [x.split(": ")[1:3] for x in r.err_lines]
    assert got == [[f"{src}:3", "answer"], [f"{src}:7", "index"], [f"{src}:8", "image"], [f"{src}:5", "image"]], r.err
    assert "4 questions from 8 rows" in r.out and "4 skipped" in r.out


def test_errors_name_the_physical_line_after_multiline_cells(vd, tmp_path):
    rs = rows(4)
    rs[0]["hint"] = "first line\nsecond line\nthird line"  # a quoted cell spanning lines 2-4
    rs[2]["answer"] = "Z"  # row 2 starts on line 6
    src = write_tsv(tmp_path / "multi.tsv", rs)
    r = vd("import", src)
    assert r.rc == 2 and r.err_lines[0].startswith(f"error: {src}:6: answer: "), r.err
    rs[2]["answer"] = "A"
    vd.ok("import", write_tsv(tmp_path / "multi_ok.tsv", rs))
    assert vd.items("multi-ok")[0]["hint"] == "first line\nsecond line\nthird line"


def test_indexes_beyond_64_bits_are_an_error(vd, tmp_path):
    """SQLite stores 64-bit integers: a larger index cannot be kept as the number it is, so it is refused."""
    rs = rows(3)
    rs[1]["index"] = "99999999999999999999999"
    src = write_tsv(tmp_path / "huge.tsv", rs)
    r = vd("import", src)
    assert r.rc == 2 and r.err_lines == [
        f"error: {src}:3: index: not a valid index: '99999999999999999999999' "
        "(a number outside SQLite's 64-bit integer range)"
    ]
    recs = mcq_records(2)
    recs[1]["index"] = 2**64
    src = write_jsonl(tmp_path / "huge.jsonl", recs)
    r = vd("import", src)
    assert r.rc == 2 and r.err_lines[0].startswith(f"error: {src}:2: index: not a valid index: ")
    recs[1]["index"] = 2**63 - 1
    vd.ok("import", write_jsonl(tmp_path / "edge.jsonl", recs))
    assert [i["index"] for i in vd.items("edge")] == [0, 2**63 - 1]


def test_a_path_with_a_nul_character_is_bad_input(vd, tmp_path):
    recs = mcq_records(3)
    recs[1]["image"] = "pic\u0000.png"
    src = write_jsonl(tmp_path / "nul.jsonl", recs)
    r = vd("import", src)
    assert r.rc == 2 and r.err_lines == [f"error: {src}:2: image: contains a NUL character at position 4"]


def test_values_quoted_in_errors_cannot_break_the_line(vd, tmp_path):
    rs = rows(3)
    rs[1]["image"] = "1\n2"  # a short (reference-sized) quoted cell spanning two lines
    src = write_tsv(tmp_path / "nl.tsv", rs)
    r = vd("import", src)
    assert r.rc == 2 and len(r.err_lines) == 1, r.err
    assert r.err_lines[0] == f"error: {src}:3: image: refers to row 1\\n2, which is not in the file"
    recs = mcq_records(2)
    recs[1]["options"] = {"A": "x", "B\nC": "y"}
    r = vd("import", write_jsonl(tmp_path / "nl.jsonl", recs))
    assert r.rc == 2 and len(r.err_lines) == 1 and ERROR_LINE.match(r.err_lines[0]), r.err


@pytest.mark.parametrize("kind", ["newer", "foreign"])
def test_a_workspace_that_cannot_be_opened_is_one_line(tmp_path, capsys, kind):
    path = tmp_path / "w.sqlite"
    if kind == "newer":
        open_workspace(path).close()
        with sqlite3.connect(str(path)) as conn:
            conn.execute("PRAGMA user_version = 999")
    else:
        with sqlite3.connect(str(path)) as conn:
            conn.execute("CREATE TABLE t (x)")
    before = dump(path)
    for argv in (["benchmarks"], ["import", str(write_mmbench_tsv(tmp_path / "a.tsv", 1, image_side=SIDE))]):
        capsys.readouterr()
        assert main(["--workspace", str(path), *argv]) == 2
        out, err = capsys.readouterr()
        assert out == "" and len(err.splitlines()) == 1 and err.startswith(f"error: {path}: ")
    assert dump(path) == before


def test_missing_file_and_images_dir(vd, tmp_path):
    r = vd("import", tmp_path / "absent.tsv")
    assert r.rc == 2 and len(r.err_lines) == 1 and "no such file" in r.err
    src = write_mmbench_tsv(tmp_path / "x.tsv", 1, image_side=SIDE)
    r = vd("import", src, "--images", tmp_path / "no-dir")
    assert r.rc == 2 and len(r.err_lines) == 1 and "no such directory" in r.err


# ------------------------------------------------------------------------------------ the real script


def _script(*argv, ws: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(VLMDESK), "--workspace", str(ws), *map(str, argv)], capture_output=True, text=True, timeout=120
    )


def test_the_installed_script(tmp_path):
    assert VLMDESK.is_file()
    ws = tmp_path / "ws.sqlite"
    src = write_mmbench_tsv(tmp_path / "MMBench_DEV_EN.tsv", 4, seed=11, image_side=SIDE)
    p = _script("import", src, "--json", ws=ws)
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    assert json.loads(p.stdout)["questions"] == 4
    before = dump(ws)

    rs = rows(3)
    rs[1]["image"] = "@" * 80
    bad = write_tsv(tmp_path / "bad.tsv", rs)
    p = _script("import", bad, ws=ws)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.splitlines() == [p.stderr.strip()] and ERROR_LINE.match(p.stderr.strip())
    assert p.stderr.startswith(f"error: {bad}:3: image: ")
    assert dump(ws) == before

    p = _script("import", src, ws=ws)
    assert p.returncode == 0 and "already imported" in p.stdout
    p = _script("benchmarks", "--json", ws=ws)
    assert [b["name"] for b in json.loads(p.stdout)] == ["mmbench-dev-en"]


def test_format_detection_reads_the_whole_first_record(tmp_path):
    import base64

    from evaluator.formats.importers import detect_format

    big = {"image": base64.b64encode(jpeg_bytes(1, 200)).decode(), "question": "Q?", "options": ["a", "b"]}
    path = tmp_path / "big-first.jsonl"
    path.write_text(json.dumps(big) + "\n")
    assert len(path.read_text()) > 4096 and detect_format(path) == "jsonl"
    pope = tmp_path / "p.json"
    pope.write_text(
        json.dumps([{"question_id": 1, "image": "a.jpg", "text": "Is there a cat?", "label": "no"}], indent=4)
    )
    assert detect_format(pope) == "pope"


def test_copies_rotated_the_other_way_import_and_export_as_they_were(vd, tmp_path):
    """A source whose copy k shows the options shifted by -k: accepted, and written back row for row."""
    from evaluator.formats.prediction_export import _copy_index

    all_rows = []
    for r in mmbench_rows(5, seed=4, image_side=SIDE):
        k, i = divmod(int(r["index"]), 1_000_000)
        if k:
            original = next(o for o in all_rows if int(o["index"]) == i)
            opts = [original[L] for L in "ABCD" if original[L]]
            n = len(opts)
            shown = [opts[(j - k) % n] for j in range(n)]
            r = dict(
                r,
                **{L: (shown[j] if j < n else "") for j, L in enumerate("ABCD")},
                answer="ABCD"[(("ABCD".index(original["answer"])) + k) % n],
            )
        all_rows.append(r)
    src = write_tsv(tmp_path / "other_way.tsv", all_rows)
    assert vd.ok("import", src, "--json").json["rows_folded"] == len(all_rows) - 5
    out = tmp_path / "back.tsv"
    vd.ok("qc", "export", "other-way", "--out", out)
    with open(out, newline="", encoding="utf-8") as f:
        back = {int(r["index"]): r for r in csv.DictReader(f, delimiter="\t")}
    for r in all_rows:
        for column in ("A", "B", "C", "D", "answer"):
            assert (back[int(r["index"])][column] or "") == (r[column] or ""), (r["index"], column)
    # A prediction file names, for each pass, the source row that showed that rotation.
    from db import catalog, open_workspace

    with open_workspace(vd.ws) as ws:
        item = catalog.item_by_index(ws, catalog.benchmark_by_name(ws, "other-way").id, 0)
    n = len(item.options)
    for k in range(1, n):
        row = back[int(_copy_index(item, k))]
        assert [row[L] for L in "ABCD"[:n]] == [item.options[(j + k) % n] for j in range(n)]


def test_option_z_is_reserved_for_none_of_the_options(vd, tmp_path):
    img = tmp_path / "i.png"
    img.write_bytes(png_bytes())
    many = write_jsonl(
        tmp_path / "many.jsonl",
        [{"question": "Q?", "options": [f"o{i}" for i in range(26)], "answer": "Z", "image": "i.png"}],
    )
    r = vd("import", many)
    assert r.rc == 2 and "options: needs 2 to 25 options" in r.err
    tsv = write_tsv(tmp_path / "z.tsv", [], header=["index", "question", *"ABCDEFGHIJKLMNOPQRSTUVWXYZ", "image"])
    r = vd("import", tsv)
    assert r.rc == 2 and ":1: header: an option column Z" in r.err


def test_the_demo_command_imports_the_bundled_benchmarks_once(vd):
    open_workspace(vd.ws).close()
    assert "vlmdesk demo" in vd.ok("benchmarks").out
    assert vd.ok("demo").out.count(": imported") == 3
    assert vd.ok("demo").out.count(": already there") == 3
    found = vd.benchmarks()
    assert (found["demo"]["questions"], found["demo-pope"]["questions"], found["demo-open"]["questions"]) == (30, 48, 8)
    assert found["demo-open"]["kind"] == "open"
    assert found["demo-pope"]["kind"] == "yesno" and found["demo-pope"]["setting"] == "random"


def test_json_progress_is_one_event_per_line(vd, tmp_path):
    src = write_mmbench_tsv(tmp_path / "progress.tsv", 3, image_side=SIDE)
    r = vd.ok("import", src, "--json-progress")
    events = [json.loads(line) for line in r.out.splitlines()]
    assert events[0] == {
        "event": "start",
        "name": "progress",
        "format": "mmbench-tsv",
        "kind": "mcq",
        "bytes_total": src.stat().st_size,
    }
    progress = [e for e in events[1:-1]]
    assert progress and all(e["event"] == "progress" for e in progress)
    assert set(progress[0]) == {"event", "rows", "questions", "skipped", "images_new", "bytes_read", "bytes_total"}
    assert [e["rows"] for e in progress] == sorted(e["rows"] for e in progress)
    done = events[-1]
    assert done["event"] == "done" and done["questions"] == 3 and done["rows_read"] == progress[-1]["rows"]
    assert done["images_new"] == 3 and done["already_imported"] is False
    assert set(done) - {"event"} == set(vd.ok("import", src, "--json").json)  # the fields of --json
    again = [json.loads(line) for line in vd.ok("import", src, "--json-progress").out.splitlines()]
    assert len(again) == 1 and again[0]["event"] == "done" and again[0]["already_imported"] is True


def test_a_key_given_twice_is_refused_in_jsonl_lines_and_arrays(vd, tmp_path):
    """json keeps the last of two `answer`s silently; every JSON reader refuses it (common.json_loads), naming the
    line and the key, as merge files always did."""
    png = b64(png_bytes((4, 5, 6)))
    good = json.dumps({"index": 1, "question": "Which?", "options": ["a", "b"], "answer": "A", "image": png})
    twice = good[:-1] + ', "answer": "B"}'
    lines = tmp_path / "twice.jsonl"
    lines.write_text(good.replace('"index": 1', '"index": 0') + "\n" + twice + "\n")
    r = vd("import", lines)
    assert r.rc == 2 and r.err == f"error: {lines}:2: answer: given twice in one record\n"
    array = tmp_path / "twice_array.json"
    array.write_text("[\n" + good.replace('"index": 1', '"index": 0') + ",\n" + twice + "\n]")
    r = vd("import", array, "--format", "jsonl")
    assert r.rc == 2 and r.err.startswith(f"error: {array}:3: answer: given twice in one record")
    assert vd.ok("benchmarks", "--json").json == []
