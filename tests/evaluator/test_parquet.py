"""Hugging Face parquet benchmarks (lmms-lab's MMBench and POPE layouts, the generic shape): `vlmdesk import` of a
file, a folder of shards or one shard of several; bad rows; the curated export written back in the layout."""

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from db import catalog, open_workspace
from evaluator.formats.exporters import export_benchmark
from tests.parquet_bombs import text_bomb
from vlmdesk.cli import main

STRIDE = 1_000_000
IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])


def _png(seed: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 8), (seed * 40 % 256, 10, 200)).save(out, "PNG")
    return out.getvalue()


def mmbench_rows(n: int) -> list[dict]:
    """lmms-lab/MMBench rows: n questions of 4 options (every third with 3), each followed later by its circular
    copies, a NaN-like empty hint on odd rows."""
    originals = []
    for i in range(n):
        k = 3 if i % 3 == 0 else 4
        options = [f"option {j} of {i}" for j in range(k)]
        originals.append((i, options, "ABCD"[i % k]))
    rows = []
    for shift in range(4):
        for i, options, answer in originals:
            k = len(options)
            if shift >= k:
                continue
            shown = [options[(j + shift) % k] for j in range(k)]
            rows.append(
                {
                    "index": i + shift * STRIDE,
                    "question": f"What is shown in picture {i}?",
                    "hint": None if i % 2 else f"hint {i}",
                    **{letter: shown[j] if j < k else None for j, letter in enumerate("ABCD")},
                    "answer": "ABCD"[shown.index(options["ABCD".index(answer)])],
                    "category": f"cat{i % 5}",
                    "image": {"bytes": _png(i % 7), "path": f"{i}.png"},
                    "source": "MMBench",
                    "L2-category": f"l2-{i % 2}",
                    "comment": None,
                    "split": "dev",
                }
            )
    return rows


def write(path, rows, row_group_size=16, schema=None):
    table = pa.Table.from_pylist(rows, schema=schema)
    pq.write_table(table, path, row_group_size=row_group_size)


def _cli(capsys, ws, *args):
    capsys.readouterr()
    code = main(["--workspace", str(ws), *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_mmbench_shards_import_as_one_benchmark_with_copies_folded(tmp_path, capsys):
    rows = mmbench_rows(40)
    folder = tmp_path / "en"
    folder.mkdir()
    third = len(rows) // 3
    for n, part in enumerate((rows[:third], rows[third : 2 * third], rows[2 * third :])):
        write(folder / f"dev-{n:05d}-of-00003.parquet", part)
    ws = tmp_path / "w.sqlite"
    code, out, err = _cli(capsys, ws, "import", folder, "--name", "mmb", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["format"] == "parquet" and report["kind"] == "mcq"
    assert (report["rows_read"], report["questions"], report["rows_folded"]) == (len(rows), 40, len(rows) - 40)
    assert report["images"] == 7
    with open_workspace(ws) as w:
        bench = catalog.benchmark_by_name(w, "mmb")
        items = catalog.list_items(w, bench.id)
    first = items[1]
    assert first.options == ("option 0 of 1", "option 1 of 1", "option 2 of 1", "option 3 of 1") and first.answer == "B"
    assert first.hint is None and items[0].hint == "hint 0" and first.l2_category == "l2-1"
    assert first.meta["source"] == "MMBench" and "comment" not in first.meta and first.circular_copies == 3
    # One shard's name brings its siblings: the same content, so the same benchmark.
    code, out, _ = _cli(capsys, ws, "import", folder / "dev-00001-of-00003.parquet", "--json")
    assert code == 0 and json.loads(out)["already_imported"] is True


def test_curated_export_writes_the_layout_back(tmp_path, capsys):
    rows = mmbench_rows(10)
    src = tmp_path / "mmb.parquet"
    write(src, rows)
    ws = tmp_path / "w.sqlite"
    assert _cli(capsys, ws, "import", src)[0] == 0
    out = tmp_path / "curated.parquet"
    with open_workspace(ws) as w:
        bench = catalog.benchmark_by_name(w, "mmb")
        items = catalog.list_items(w, bench.id)
        report = export_benchmark(w, bench, out, exclude=frozenset({items[0].id}), answers={items[1].id: "D"})
    table = pq.read_table(out)
    assert report.format == "parquet" and table.num_rows == report.rows == len(rows) - 3  # item 0 had 3 rows
    assert table.column_names[:9] == ["index", "question", "hint", "A", "B", "C", "D", "answer", "category"]
    assert {"image", "source", "L2-category", "split"} <= set(table.column_names)
    written = {r["index"]: r for r in table.to_pylist()}
    original = {r["index"]: r for r in rows}
    for index, row in written.items():
        assert [row[c] for c in "ABCD"] == [original[index][c] for c in "ABCD"]
        assert row["image"]["bytes"] == original[index]["image"]["bytes"]
        if index % STRIDE != 1:
            assert row["answer"] == original[index]["answer"]
    assert written[1]["answer"] == "D" and written[1 + STRIDE]["answer"] == "C"  # the correction, rotated
    assert _cli(capsys, tmp_path / "again.sqlite", "import", out, "--json")[0] == 0


def test_pope_layout_and_generic_shape(tmp_path, capsys):
    ws = tmp_path / "w.sqlite"
    pope = [
        {
            "id": str(n),
            "question_id": str(n + 1),
            "question": f"Is there a thing {n} in the image?",
            "answer": "yes" if n % 2 else "no",
            "image_source": f"COCO_{n // 2}",
            "image": {"bytes": _png(n // 2), "path": None},
            "category": "adversarial",
        }
        for n in range(12)
    ]
    folder = tmp_path / "Full"
    folder.mkdir()
    write(folder / "adversarial-00000-of-00001.parquet", pope)
    code, out, err = _cli(capsys, ws, "import", folder / "adversarial-00000-of-00001.parquet", "--json")
    assert code == 0, err
    assert json.loads(out)["kind"] == "yesno" and json.loads(out)["format"] == "pope-parquet"
    code, out, _ = _cli(capsys, ws, "benchmarks", "--json")
    bench = next(b for b in json.loads(out) if b["kind"] == "yesno")
    assert bench["setting"] == "adversarial" and bench["questions"] == 12
    with open_workspace(ws) as w:
        item = catalog.list_items(w, catalog.benchmark_by_name(w, bench["name"]).id)[3]
    assert (item.index, item.answer, item.options, item.meta["image_source"]) == (4, "yes", (), "COCO_1")
    mixed = tmp_path / "test.parquet"
    write(mixed, pope[:6] + [{**r, "category": "random"} for r in pope[6:]])
    code, _, err = _cli(capsys, ws, "import", mixed)
    assert code == 2 and err.startswith(f"error: {mixed}:7: category: 'random' after 'adversarial'")

    generic = [
        {"index": f"q{n}", "question": f"question {n}", "options": ["x", "y", "z"][: 2 + n % 2], "answer": n % 2,
         "image": _png(n), "l2_category": "L"}
        for n in range(5)
    ]  # fmt: skip
    path = tmp_path / "generic.parquet"
    write(path, generic)
    code, out, err = _cli(capsys, ws, "import", path, "--json")
    assert code == 0 and json.loads(out)["questions"] == 5, err
    with open_workspace(ws) as w:
        items = catalog.list_items(w, catalog.benchmark_by_name(w, "generic").id)
    assert [(i.index, i.answer, len(i.options), i.l2_category) for i in items[:2]] == [
        ("q0", "A", 2, "L"),
        ("q1", "B", 3, "L"),
    ]


def test_bad_rows_and_bad_files(tmp_path, capsys):
    ws = tmp_path / "w.sqlite"
    good = mmbench_rows(6)[:6]
    cases = [
        ("question", {"question": ""}, "question: empty"),
        ("answer", {"answer": "Q"}, "answer: 'Q' is not one of the options"),
        ("options", {"B": None, "C": None, "D": None}, "A: needs at least two options"),
        ("image", {"image": {"bytes": b"not an image", "path": None}}, "image: not an image"),
        ("index", {"index": None}, "index: not a valid index"),
    ]
    for name, change, message in cases:
        rows = [dict(r) for r in good]
        rows[4] = {**rows[4], **change}
        path = tmp_path / f"{name}.parquet"
        write(path, rows, schema=pa.Table.from_pylist(good).schema)
        code, _, err = _cli(capsys, ws, "import", path)
        assert code == 2 and err.startswith(f"error: {path}:5: {message}"), err
        code, out, err = _cli(capsys, ws, "import", path, "--skip-bad", "--json")
        assert code == 0 and json.loads(out)["rows_skipped"] == 1 and json.loads(out)["questions"] == 5
    code, out, _ = _cli(capsys, ws, "benchmarks", "--json")
    assert len(json.loads(out)) == len(cases)

    folder = tmp_path / "two"
    folder.mkdir()
    write(folder / "dev-00000-of-00001.parquet", good)
    write(folder / "test-00000-of-00001.parquet", good)
    code, _, err = _cli(capsys, ws, "import", folder)
    assert code == 2 and "shards of several splits (dev, test)" in err
    write(tmp_path / "dev-00000-of-00002.parquet", good)
    code, _, err = _cli(capsys, ws, "import", tmp_path / "dev-00000-of-00002.parquet")
    assert code == 2 and "shard dev-00001-of-00002.parquet of this split is missing" in err
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1" + b"\0" * 100)
    code, _, err = _cli(capsys, ws, "import", broken)
    assert code == 2 and err.startswith(f"error: {broken}: path: not a readable parquet file")
    code, out, _ = _cli(capsys, ws, "benchmarks", "--json")
    assert len(json.loads(out)) == len(cases)


# A child process importing under a 3 GB address-space cap: the file below once took 5.4 GB (MemoryError).
_CAPPED = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))
from vlmdesk.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _repeated_through_a_dictionary(path, column, rows=500, size=8 * 2**20):
    """One `size`-byte value standing for every row through a dictionary page, in one row group (a 30 KB file);
    built from indices and the dictionary, so the test never holds the expanded column."""
    big = pa.array(["x" * size])
    value = pa.DictionaryArray.from_arrays(pa.array([0] * rows, pa.int32()), big)
    image = pa.StructArray.from_arrays(
        [pa.array([_png(1)] * rows, pa.binary()), pa.array(["a.png"] * rows)], names=["bytes", "path"]
    )
    columns = {
        "index": pa.array(range(rows)),
        "question": pa.array(["q"] * rows),
        "A": pa.array(["a"] * rows),
        "B": pa.array(["b"] * rows),
        "answer": pa.array(["A"] * rows),
        "image": image,
    }
    columns[column] = value
    pq.write_table(pa.table(columns), path, row_group_size=rows, dictionary_pagesize_limit=2 * size, compression="zstd")
    return path


def test_a_value_repeated_through_a_dictionary_is_bounded_as_it_is_decoded(tmp_path):
    """Issue 22: the 1 GB row-group guard reads metadata (8 MB here); the decoded size of every column is counted
    batch by batch before any row is turned into Python values, so the import stops at once, in little memory."""
    from tests.test_errors import one_line_error, vlmdesk

    for column in ("question", "hint"):
        path = _repeated_through_a_dictionary(tmp_path / f"{column}.parquet", column)
        assert path.stat().st_size < 100_000
        assert pq.ParquetFile(path).metadata.row_group(0).total_byte_size < 2**30  # the metadata guard passes
        ws = tmp_path / "ws.sqlite"
        proc = vlmdesk("--workspace", str(ws), "import", str(path), code=_CAPPED, timeout=60)
        assert proc.returncode == 2, proc.stderr
        assert one_line_error(proc).startswith(f"error: {path}:1: {column}: row group 0: column '{column}' decodes to")
        with open_workspace(ws) as opened:
            assert catalog.list_benchmarks(opened) == []
    # The same file with the value within bounds (a short text repeated) imports.
    fine = _repeated_through_a_dictionary(tmp_path / "fine.parquet", "hint", rows=50, size=1000)
    assert main(["--workspace", str(tmp_path / "ok.sqlite"), "import", str(fine)]) == 0


# ------------------------------------------------------------------------------------------- text bounds (issue 40)


@pytest.mark.parametrize(
    "layout, column", [("vqa", "answers"), ("vqa", "question"), ("mcq", "hint"), ("pope", "question")]
)
def test_a_compression_bomb_of_text_is_refused_from_its_pages_sizes_before_decoding(tmp_path, layout, column):
    """Issue 40 §4: 62 KB of zstd held 30 answers of 60 MB (no dictionary, under the row-group guard) and imported at
    5.3 GB. The same shape, smaller: each row group's text pages are checked against what its rows may hold (1 MB of
    text a row) from the metadata, before anything is decompressed; under a 3 GB address-space cap."""
    from tests.test_errors import one_line_error, vlmdesk

    path = text_bomb(tmp_path / "bomb.parquet", layout=layout, column=column, rows=20, size=8 * 2**20, row_group=10)
    assert path.stat().st_size < 100_000
    ws = tmp_path / "ws.sqlite"
    proc = vlmdesk("--workspace", str(ws), "import", str(path), code=_CAPPED, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert one_line_error(proc) == (
        f"error: {path}:1: {column}: row group 0: column {column!r} unpacks to 80.0 MB for 10 rows; at most 1 MB a row "
        "(a compression bomb?)"
    )
    with open_workspace(ws) as opened:
        assert catalog.list_benchmarks(opened) == []


def test_one_long_text_is_refused_at_its_row_before_it_becomes_python_text(tmp_path, capsys):
    """A text over 1 MB in a row group whose other rows are short passes the pages' check; its length is read from the
    Arrow array (nested ones too: a list's element, an image's path) and the import stops at its row."""
    long = "y" * (2**20 + 1)
    rows = mmbench_rows(4)
    cases = [
        ("question", {"question": long}, None),
        ("image", {"image": {"bytes": _png(1), "path": long}}, None),
        ("options", {"options": ["a", long]}, pa.schema([("index", pa.int64()), ("question", pa.string()),
                                                          ("options", pa.list_(pa.string())), ("answer", pa.string()),
                                                          ("image", IMAGE)])),
    ]  # fmt: skip
    for field, change, schema in cases:
        changed = [dict(r) for r in rows]
        if schema is not None:
            changed = [{"index": r["index"], "question": r["question"], "options": [r["A"], r["B"]], "answer": "A",
                        "image": r["image"]} for r in changed]  # fmt: skip
        changed[2] = {**changed[2], **change}
        path = tmp_path / f"{field}.parquet"
        write(path, changed, row_group_size=64, schema=schema or pa.Table.from_pylist(rows).schema)
        code, _, err = _cli(capsys, tmp_path / "w.sqlite", "import", path)
        assert code == 2, err
        assert err.strip() == f"error: {path}:3: {field}: a text of 1,048,577 bytes; at most 1,048,576", err
    code, out, _ = _cli(capsys, tmp_path / "w.sqlite", "benchmarks", "--json")
    assert json.loads(out) == []
    # A text of exactly the bound imports.
    fine = [dict(r) for r in rows]
    fine[2]["comment"] = "y" * 2**20
    write(tmp_path / "fine.parquet", fine, row_group_size=64)
    assert main(["--workspace", str(tmp_path / "ok.sqlite"), "import", str(tmp_path / "fine.parquet")]) == 0


def test_open_answers_are_texts_within_the_tsv_bound(tmp_path, capsys):
    """One rule, one home (common.reference_answers) for every layout: a number among the answers is refused (a TSV
    refuses `[1, 2]`; the parquet path stored '1'), and an answer cell holds at most 64 KB of references."""
    image = {"bytes": _png(1), "path": None}
    cases = [
        ("answers", pa.list_(pa.int64()), [7, 8], "answers: element 1 is a int; a reference answer is a text"),
        ("answer", pa.int64(), 14, "answer: an open question's answer is a reference text or a list of them"),
        ("answers", pa.list_(pa.string()), ["z" * 40_000] * 2,
         "answers: reference answers of 80,000 characters; at most 65,536"),
        ("answer", pa.string(), "z" * 70_000, "answer: reference answers of 70,000 characters; at most 65,536"),
    ]  # fmt: skip
    for n, (field, kind, value, says) in enumerate(cases):
        schema = pa.schema([("question_id", pa.int64()), ("question", pa.string()), ("image", IMAGE), (field, kind)])
        path = tmp_path / f"answers{n}.parquet"
        write(path, [{"question_id": 1, "question": "q?", "image": image, field: value}], schema=schema)
        code, _, err = _cli(capsys, tmp_path / "w.sqlite", "import", path, "--format", "vqa-parquet")
        assert code == 2 and err.strip() == f"error: {path}:1: {says}", err
    tsv = tmp_path / "long.tsv"
    tsv.write_text(f"index\tquestion\tanswer\timage_path\n1\tq?\t{'z' * 70_000}\ta.png\n")
    (tmp_path / "a.png").write_bytes(_png(2))
    code, _, err = _cli(capsys, tmp_path / "w.sqlite", "import", tsv, "--format", "vqa-tsv")
    assert (
        code == 2 and err.strip() == f"error: {tsv}:2: answer: reference answers of 70,000 characters; at most 65,536"
    )
