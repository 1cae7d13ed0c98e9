"""Items of several images (issue 37): stored in order (the first in items.image_sha256, the rest in item_images),
read back by every reader a page at a time, imported from VLMEvalKit's MMMU TSV layout, JSONL `images` lists and
parquet image lists, exported in the same layouts and re-imported the same; check never calls them orphans.

VLMEvalKit's layout as read at commit 050726559997d4642f3ae483391be97d49868f8c: vlmeval/dataset/image_base.py
(ImageBaseDataset.__init__ resolves a short `image` cell to the whole cell of the row it names, then toliststr; a
one-element list is one image; dump_image pairs the list with `image_path`'s names).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import json
import sqlite3

import pytest

from db import catalog, item_query, open_workspace, run_items
from db.check import check_workspace
from evaluator.formats.exporters import export_benchmark
from evaluator.formats.importers import import_benchmark
from evaluator.formats.importers.common import InputError
from tests.factories import png_bytes
from tests.sqlite_steps import counting_steps

COLORS = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (9, 9, 9), (200, 100, 0)]
PNGS = [png_bytes(c) for c in COLORS]
B64 = [base64.b64encode(p).decode("ascii") for p in PNGS]
NOT_AN_IMAGE = base64.b64encode(b"not an image at all, but long enough" * 3).decode()
DATA_URL = f"data:image/png;base64,{B64[2]}"
SHA = [hashlib.sha256(p).hexdigest() for p in PNGS]
NAMES = "['1_1.png', '1_2.png']"  # image_path beside image: the names VLMEvalKit dumps the images to
HEADER = ["index", "question", "A", "B", "answer", "category", "image", "image_path", "split"]


def _mmmu_rows() -> list[list[str]]:
    """MMMU-style rows: list cells of base64 (str(list), as VLMEvalKit writes them), names in image_path, a short cell
    naming another row, a single image, images shared across items."""
    return [
        ["1", "Compare <image 1> and <image 2>.", "same", "different", "B", "Art", str(B64[:2]), NAMES, "validation"],
        ["2", "Which <image 1> <image 2> <image 3>?", "x", "y", "A", "Art", str(B64[1:3] + B64[:1]), "", "validation"],
        ["3", "Again <image 1> and <image 2>.", "p", "q", "A", "Art", "1", "", "validation"],
        ["4", "One image.", "r", "s", "B", "Math", B64[3], "", "validation"],
    ]  # fmt: skip


def _write(path, rows, header=HEADER) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f, delimiter="\t", lineterminator="\n")
        out.writerow(header)
        out.writerows(rows)


def _counts(ws, *tables: str) -> list[int]:
    return [ws.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables]


def _images_of(ws, name: str) -> dict[int | str, tuple[str, ...]]:
    bench = catalog.benchmark_by_name(ws, name)
    return {i.index: i.images for i in catalog.list_items(ws, bench.id)}


def test_a_vlmevalkit_mmmu_tsv_keeps_every_image_in_order_each_stored_once(tmp_path):
    src = tmp_path / "MMMU_DEV_VAL.tsv"
    _write(src, _mmmu_rows())
    with open_workspace(tmp_path / "w.sqlite") as ws:
        report = import_benchmark(ws, src, name="mmmu")
        assert (report.questions, report.images, report.images_new) == (4, 4, 4)
        images = _images_of(ws, "mmmu")
        assert images == {1: tuple(SHA[:2]), 2: (SHA[1], SHA[2], SHA[0]), 3: tuple(SHA[:2]), 4: (SHA[3],)}
        assert ws.conn.execute("SELECT count(*) FROM images").fetchone()[0] == 4  # by content hash, once each
        bench = catalog.benchmark_by_name(ws, "mmmu")
        first = catalog.item_by_index(ws, bench.id, 1)
        assert first.question == "Compare <image 1> and <image 2>." and first.more_images == (SHA[1],)
        assert (
            first.to_json()["images"] == list(SHA[:2])
            and "images" not in catalog.item_by_index(ws, bench.id, 4).to_json()
        )
        assert item_query.item_by_id(ws, first.id).images == tuple(SHA[:2])
        pages = [i.images for page in run_items.item_pages(ws, bench.id, limit=None, page=3) for i in page]
        assert pages == list(images.values())


def test_a_tsv_imported_then_exported_is_byte_identical_and_reimports_the_same(tmp_path):
    src = tmp_path / "MMMU_DEV_VAL.tsv"
    _write(src, _mmmu_rows())
    out = tmp_path / "out" / "MMMU_DEV_VAL.tsv"
    with open_workspace(tmp_path / "w.sqlite") as ws:
        import_benchmark(ws, src, name="mmmu")
        report = export_benchmark(ws, catalog.benchmark_by_name(ws, "mmmu"), out)
        before = _images_of(ws, "mmmu")
    assert out.read_bytes() == src.read_bytes()
    assert (report.rows, report.images) == (4, 4)
    with open_workspace(tmp_path / "fresh.sqlite") as ws:
        import_benchmark(ws, out, name="again")
        assert _images_of(ws, "again") == before


def test_jsonl_images_lists_of_paths_and_base64_round_trip(tmp_path):
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "a.png").write_bytes(PNGS[0])
    src = tmp_path / "multi.jsonl"
    records = [
        {"index": 1, "question": "<image 1> vs <image 2>?", "options": ["a", "b"], "images": ["img/a.png", B64[1]]},
        {"index": 2, "question": "Three?", "options": ["a", "b"], "images": [DATA_URL, "img/a.png", B64[4]]},
        {"index": 3, "question": "One?", "options": ["a", "b"], "image": B64[3]},
    ]  # fmt: skip
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "out" / "multi.jsonl"
    with open_workspace(tmp_path / "w.sqlite") as ws:
        report = import_benchmark(ws, src, name="multi")
        assert report.images == 5
        before = _images_of(ws, "multi")
        assert before == {1: (SHA[0], SHA[1]), 2: (SHA[2], SHA[0], SHA[4]), 3: (SHA[3],)}
        export_benchmark(ws, catalog.benchmark_by_name(ws, "multi"), out, fmt="jsonl")
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert [len(r.get("images", [])) for r in written] == [2, 3, 0] and "image" in written[2]
    with open_workspace(tmp_path / "fresh.sqlite") as ws:
        import_benchmark(ws, out, name="again")
        assert _images_of(ws, "again") == before


def test_parquet_image_lists_as_hf_datasets_write_them(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    table = pa.table(
        {
            "index": [1, 2],
            "question": ["<image 1> <image 2>?", "<image 1>?"],
            "A": ["a", "a"],
            "B": ["b", "b"],
            "answer": ["A", "B"],
            "images": pa.array(
                [[{"bytes": PNGS[0], "path": "x.png"}, {"bytes": PNGS[1], "path": None}], [{"bytes": PNGS[0]}]],
                type=pa.list_(image),
            ),
        }
    )  # fmt: skip
    src = tmp_path / "multi.parquet"
    pq.write_table(table, src)
    with open_workspace(tmp_path / "w.sqlite") as ws:
        report = import_benchmark(ws, src, name="pq")
        assert report.images == 2
        assert _images_of(ws, "pq") == {1: (SHA[0], SHA[1]), 2: (SHA[0],)}


@pytest.mark.parametrize(
    ("cell", "what"),
    [
        ("[1, 2]", "image: element 1 is not a quoted text"),
        ("['a'] + ['b']", "image: not a Python list"),
        (str([B64[0]] * 65), "image: 65 images; at most 64 an item"),
        (str([B64[0], NOT_AN_IMAGE]), "image: element 2: not an image PIL can identify"),
        (str([B64[0], "%%%" * 30]), "image: element 2: undecodable base64"),
        ("[]", "image: an empty list of images"),
    ],
)
def test_bad_image_lists_are_one_line_naming_file_line_and_field_and_nothing_is_stored(tmp_path, cell, what):
    src = tmp_path / "bad.tsv"
    rows = _mmmu_rows()[:1] + [["5", "Bad?", "a", "b", "A", "Art", cell, "", "validation"]]
    _write(src, rows)
    with open_workspace(tmp_path / "w.sqlite") as ws:
        with pytest.raises(InputError) as caught:
            import_benchmark(ws, src, name="bad")
        message = str(caught.value)
        assert message.startswith(f"{src}:3: ") and what in message and "\n" not in message, message
        assert _counts(ws, "benchmarks", "items", "item_images", "images") == [0, 0, 0, 0]


def test_jsonl_images_that_are_not_a_list_or_come_with_image_are_refused(tmp_path):
    src = tmp_path / "bad.jsonl"
    for record, what in (
        ({"question": "q", "options": ["a", "b"], "images": B64[0]}, "images: a list of one or more images"),
        ({"question": "q", "options": ["a", "b"], "images": [B64[0]], "image": B64[1]}, "images: given with image"),
        ({"question": "q", "options": ["a", "b"], "images": [B64[0], 7]}, "images: element 2: missing"),
    ):
        src.write_text(json.dumps(record) + "\n")
        with open_workspace(tmp_path / "w.sqlite") as ws, pytest.raises(InputError) as caught:
            import_benchmark(ws, src, name="bad")
        assert str(caught.value).startswith(f"{src}:1: {what}"), str(caught.value)


def test_an_image_used_only_after_the_first_is_no_orphan_and_repair_keeps_it(tmp_path):
    src = tmp_path / "MMMU_DEV_VAL.tsv"
    _write(src, _mmmu_rows())
    path = tmp_path / "w.sqlite"
    with open_workspace(path) as ws:
        import_benchmark(ws, src, name="mmmu")
        with ws.db.atomic():  # an image no item uses: the one orphan
            catalog.put_image(ws, sha256="0" * 64, data=PNGS[4], mime="image/png", width=8, height=8)
        # SHA[2] is shown only as item 2's second image: item_images alone keeps it.
        assert ws.conn.execute("SELECT count(*) FROM items WHERE image_sha256 = ?", (SHA[2],)).fetchone()[0] == 0
    report = check_workspace(path, repair=True)
    results = {r.name: r for r in report.results}
    assert results["orphan_images"].repaired == ["deleted 1 image(s) used by no item (0.0 MB)"]
    assert results["item_images"].ok and report.healthy
    with open_workspace(path) as ws:
        stored = {r[0] for r in ws.conn.execute("SELECT sha256 FROM images")}
        assert stored == set(SHA[:4]) and _images_of(ws, "mmmu")[2] == (SHA[1], SHA[2], SHA[0])


def test_check_reports_a_gap_in_an_items_images(tmp_path):
    src = tmp_path / "MMMU_DEV_VAL.tsv"
    _write(src, _mmmu_rows())
    path = tmp_path / "w.sqlite"
    with open_workspace(path) as ws:
        import_benchmark(ws, src, name="mmmu")
        with ws.db.atomic():
            ws.conn.execute(
                "DELETE FROM item_images WHERE ord = 1 AND item_id = (SELECT id FROM items WHERE source_index = 2)"
            )
    problems = {r.name: r.problems for r in check_workspace(path).results}["item_images"]
    assert len(problems) == 1 and "ord up to 2" in problems[0], problems


def test_deleting_a_benchmark_or_an_item_takes_its_images_rows_with_it(tmp_path):
    src = tmp_path / "MMMU_DEV_VAL.tsv"
    _write(src, _mmmu_rows())
    with open_workspace(tmp_path / "w.sqlite") as ws:
        import_benchmark(ws, src, name="mmmu")
        with ws.db.atomic():
            ws.conn.execute("DELETE FROM items WHERE source_index = 2")
        assert ws.conn.execute("SELECT count(*) FROM item_images").fetchone()[0] == 2  # items 1 and 3: one each
        with ws.db.atomic():
            ws.conn.execute("DELETE FROM items")
            ws.conn.execute("DELETE FROM benchmarks")
        assert ws.conn.execute("SELECT count(*) FROM item_images").fetchone()[0] == 0


def test_a_failed_import_leaves_no_item_images_and_no_images(tmp_path):
    src = tmp_path / "half.tsv"
    rows = _mmmu_rows() + [["9", "", "a", "b", "A", "Art", B64[4], "", "validation"]]  # an empty question, last
    _write(src, rows)
    with open_workspace(tmp_path / "w.sqlite") as ws:
        with pytest.raises(InputError, match=r"half.tsv:6: question"):
            import_benchmark(ws, src, name="half")
        assert _counts(ws, "items", "item_images", "images") == [0, 0, 0]
        report = import_benchmark(ws, src, name="half", skip_bad=True)  # the good rows, each with every image
        assert report.questions == 4 and ws.conn.execute("SELECT count(*) FROM item_images").fetchone()[0] == 4
        assert ws.conn.execute("SELECT count(*) FROM images").fetchone()[0] == 4  # the skipped row's image removed


def _multi_image_benchmark(ws, name: str, n: int) -> int:
    with ws.db.atomic():
        for k, p in enumerate(PNGS):
            catalog.put_image(ws, sha256=SHA[k], data=p, mime="image/png", width=8, height=8)
        bench = catalog.insert_benchmark(
            ws, name=name, kind="mcq", format="jsonl", source=name, source_sha256=name, meta={}
        )
        rows = [
            (bench, i, i, f"q{i}", None, '["a", "b"]', "A", None, None, None, "en", SHA[0], 0, "{}") for i in range(n)
        ]
        catalog.insert_items(ws, rows)
        for (item_id,) in ws.conn.execute("SELECT id FROM items WHERE benchmark_id = ?", (bench,)).fetchall():
            catalog.insert_more_images(ws, item_id, SHA[1:4])
    return bench


@pytest.mark.parametrize("read", ["item_pages", "iter_items"])
def test_reading_a_page_of_items_with_their_images_costs_the_same_at_any_size(tmp_path, read):
    page = 25
    steps = []
    with open_workspace(tmp_path / "w.sqlite") as ws:
        for n in (100, 2_000):
            bench = _multi_image_benchmark(ws, f"b{n}", n)
            with counting_steps(ws.conn, every=10) as counted:
                if read == "item_pages":
                    items = next(run_items.item_pages(ws, bench, limit=None, page=page))
                else:
                    items = list(catalog.iter_items(ws, bench, limit=page))
            steps.append(counted.count)
            assert len(items) == page and all(i.images == tuple(SHA[:4]) for i in items)
    assert steps[1] <= 1.1 * steps[0], steps


def test_with_images_is_one_query_per_page(tmp_path):
    with open_workspace(tmp_path / "w.sqlite") as ws:
        bench = _multi_image_benchmark(ws, "b", 60)
        rows = ws.conn.execute(f"SELECT {catalog.ITEM_COLUMNS} FROM items WHERE benchmark_id = ?", (bench,))
        plain = [catalog.item_from_row(r) for r in rows]
        statements: list[str] = []
        ws.conn.set_trace_callback(statements.append)
        try:
            filled = catalog.with_images(ws, plain)
        finally:
            ws.conn.set_trace_callback(None)
        assert len(statements) == 1 and all(i.more_images == tuple(SHA[1:4]) for i in filled)


def test_a_benchmarks_image_count_is_every_distinct_image(tmp_path):
    src = tmp_path / "MMMU_DEV_VAL.tsv"
    _write(src, _mmmu_rows())
    with open_workspace(tmp_path / "w.sqlite") as ws:
        report = import_benchmark(ws, src, name="mmmu")
        assert catalog.benchmark_by_name(ws, "mmmu").images == report.images == 4


def test_an_older_workspace_without_item_images_reads_as_before(tmp_path):
    # Items written with no item_images rows (as every workspace before migration 0025) read with images = (first,).
    with open_workspace(tmp_path / "w.sqlite") as ws:
        bench = _multi_image_benchmark(ws, "b", 3)
        with ws.db.atomic():
            ws.conn.execute("DELETE FROM item_images")
        assert [i.images for i in catalog.list_items(ws, bench)] == [(SHA[0],)] * 3
        with pytest.raises(sqlite3.IntegrityError):  # an item's more images are stored images
            with ws.db.atomic():
                catalog.insert_more_images(ws, catalog.list_items(ws, bench)[0].id, ["f" * 64])


def test_the_image_count_never_drifts_as_items_of_several_images_come_and_go(tmp_path):
    import random

    from db import schema

    rng = random.Random(37)

    def distinct(ws, bench: int) -> int:
        return ws.conn.execute(
            "SELECT count(*) FROM (SELECT image_sha256 FROM items WHERE benchmark_id = ? AND image_sha256 IS NOT NULL "
            "UNION SELECT x.sha256 FROM item_images x JOIN items i ON i.id = x.item_id WHERE i.benchmark_id = ?)",
            (bench, bench),
        ).fetchone()[0]

    def kept(ws, bench: int) -> int:
        return catalog.benchmark_by_name(ws, "b").images

    with open_workspace(tmp_path / "w.sqlite") as ws:
        with ws.db.atomic():
            for k, p in enumerate(PNGS):
                catalog.put_image(ws, sha256=SHA[k], data=p, mime="image/png", width=8, height=8)
            bench = catalog.insert_benchmark(
                ws, name="b", kind="mcq", format="jsonl", source="b", source_sha256="b", meta={}
            )
        for step in range(40):
            with ws.db.atomic():
                if step % 3 == 2:
                    ids = [r[0] for r in ws.conn.execute("SELECT id FROM items WHERE benchmark_id = ?", (bench,))]
                    if ids:
                        ws.conn.execute("DELETE FROM items WHERE id = ?", (rng.choice(ids),))
                else:
                    first = rng.choice([None, *SHA])
                    catalog.insert_items(
                        ws,
                        [
                            (
                                bench,
                                1000 + step,
                                step,
                                f"q{step}",
                                None,
                                '["a", "b"]',
                                "A",
                                None,
                                None,
                                None,
                                "en",
                                first,
                                0,
                                "{}",
                            )
                        ],
                    )
                    (item_id,) = ws.conn.execute("SELECT max(id) FROM items").fetchone()
                    if first is not None:
                        catalog.insert_more_images(ws, item_id, rng.sample(SHA, rng.randint(0, len(SHA))))
            assert kept(ws, bench) == distinct(ws, bench), step
        expected = distinct(ws, bench)
        with ws.db.atomic():
            ws.conn.execute("UPDATE benchmark_counts SET images = 0")
        with ws.db.atomic():
            schema.rebuild_counts(ws.db)
        assert kept(ws, bench) == expected > 0
