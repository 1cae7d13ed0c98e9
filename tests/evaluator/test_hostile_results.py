"""Hostile files for the inputs of issues 15-17 (import-predictions, parquet benchmarks, `desiderata ece`): each bad
file is one line `error: FILE:LINE: field: what`, exit 2, nothing stored; each file that only looks odd imports whole.
Files are generated here; the big ones are cheap to build (an .xlsx zip bomb is one highly compressible member)."""

import json
import re
import sqlite3
import zipfile

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from openpyxl import Workbook, load_workbook

from db import catalog, open_workspace, runs
from vlmdesk.cli import main
from vlmdesk.demo import ensure_demo

ERROR = re.compile(r"^error: [^\n]+?(:\d+)?: [\w-]+: [^\n]+\n$")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """A demo workspace with a CircularEval run and a POPE run, and their exports."""
    root = tmp_path_factory.mktemp("hostile")
    path = root / "w.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    for args in (["--bench", "demo"], ["--bench", "demo-pope"]):
        assert main(["--workspace", str(path), "run", *args, "--model", "baseline:random", "--full-passes"]) == 0
    tsv, jsonl = root / "r1.tsv", root / "r2.jsonl"
    assert main(["--workspace", str(path), "export-predictions", "1", "--out", str(tsv)]) == 0
    args = ["--workspace", str(path), "export-predictions", "2", "--out", str(jsonl), "--layout", "lmms-eval"]
    assert main(args) == 0
    return path, tsv.read_text(encoding="utf-8").splitlines(), jsonl.read_text(encoding="utf-8").splitlines()


@pytest.fixture
def ws_path(demo, tmp_path):
    copy = tmp_path / "w.sqlite"
    with sqlite3.connect(demo[0]) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    return copy


def _cli(capsys, ws_path, *args):
    capsys.readouterr()
    code = main(["--workspace", str(ws_path), *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def _counts(ws_path):
    with open_workspace(ws_path) as ws:
        return len(runs.list_runs(ws)), len(catalog.list_benchmarks(ws))


def _refused(capsys, ws_path, args, field, what):
    before = _counts(ws_path)
    code, out, err = _cli(capsys, ws_path, *args)
    assert code == 2 and out == "", (code, out, err)
    assert ERROR.match(err), err
    assert f": {field}: " in err and what in err, err
    assert _counts(ws_path) == before
    return err


def _import(capsys, ws_path, path, bench="demo", model="elsewhere"):
    code, out, err = _cli(capsys, ws_path, "import-predictions", path, "--bench", bench, "--model", model, "--json")
    assert code == 0, err
    return json.loads(out)


def _table(lines):
    head, *rows = (line.split("\t") for line in lines)
    return head, [[int(c) if c.isdigit() else c for c in row] for row in rows]


def _xlsx(path, head, rows):
    book = Workbook()  # not write-only: like pandas, it writes a string starting with "=" as a formula
    book.active.append(head)
    for row in rows:
        book.active.append(row)
    book.save(path)
    return path


def test_xlsx_zip_bomb_is_refused_before_it_is_unpacked(ws_path, demo, tmp_path, capsys):
    head, rows = _table(demo[1])
    bomb = _xlsx(tmp_path / "bomb.xlsx", head, rows)
    with zipfile.ZipFile(bomb, "a", zipfile.ZIP_DEFLATED, compresslevel=1) as z, z.open("xl/junk.xml", "w") as f:
        block = b"<r/>" * 2**18
        for _ in range(257):  # 257 MB of XML in well under 1 MB of zip
            f.write(block)
    assert bomb.stat().st_size < 2 * 2**20
    _refused(capsys, ws_path, ["import-predictions", bomb, "--bench", "demo", "--model", "m"], "path", "zip bomb")


def test_xlsx_rows_past_a_stale_dimension_and_formula_texts_are_read(ws_path, demo, tmp_path, capsys):
    head, rows = _table(demo[1])
    said = head.index("prediction")
    asked = [i for i, row in enumerate(rows) if row[said]]
    formula = '=HYPERLINK("http://example.com","A")'
    rows[asked[0]][said] = formula  # pandas writes this as a formula with no cached value
    path = _xlsx(tmp_path / "m.xlsx", head, rows)
    with zipfile.ZipFile(path) as z:
        members = {name: z.read(name) for name in z.namelist()}
    sheet = "xl/worksheets/sheet1.xml"
    members[sheet] = re.sub(rb'<dimension ref="[^"]*"', b'<dimension ref="A1:B3"', members[sheet])
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    done = _import(capsys, ws_path, path)
    assert done["rows_read"] == len(rows) and done["passes"] == len(asked), done
    with open_workspace(ws_path) as ws:
        responses = {p.response for p in runs.predictions_of(ws, done["run_id"])}
    assert formula in responses
    # Exported again, the response stays text: no formula that Excel would run, and it reads back the same.
    out = tmp_path / "again.xlsx"
    assert _cli(capsys, ws_path, "export-predictions", done["run_id"], "--out", out)[0] == 0
    cells = [c for row in load_workbook(out, read_only=True).worksheets[0].iter_rows() for c in row]
    assert [c.data_type for c in cells if c.value == formula] == ["s"]
    assert _import(capsys, ws_path, out, model="again")["passes"] == len(asked)


def test_bad_prediction_rows(ws_path, demo, tmp_path, capsys):
    head, rows = _table(demo[1])
    index = head.index("index")
    beyond = [list(r) for r in rows]
    beyond[0][index] = 7 * 1_000_000 + rows[0][index]  # copy 7 of a four-option item
    path = tmp_path / "k7.tsv"
    path.write_text("\n".join("\t".join(map(str, r)) for r in [head, *beyond]), encoding="utf-8")
    args = ["import-predictions", path, "--bench", "demo", "--model", "m"]
    assert ":2: index: " in _refused(capsys, ws_path, args, "index", "circular copy 7 of an item with 4 options")
    twice = tmp_path / "twice.tsv"
    twice.write_text("\n".join([demo[1][0] + "\tprediction", *(line + "\tA" for line in demo[1][1:])]), "utf-8")
    args = ["import-predictions", twice, "--bench", "demo", "--model", "m"]
    _refused(capsys, ws_path, args, "header", "column(s) given twice: prediction")
    sample = json.loads(demo[2][0])
    sample["filtered_resps"], sample["resps"] = [[1, 2]], [[{"text": "yes"}]]
    bad = tmp_path / "samples.jsonl"
    bad.write_text("\n".join([*demo[2][1:], json.dumps(sample)]), encoding="utf-8")
    args = ["import-predictions", bad, "--bench", "demo-pope", "--model", "m"]
    _refused(capsys, ws_path, args, "resps", "no text response")


def _png_row(i):
    return {"index": i, "question": f"q{i}", "A": "a", "B": "b", "answer": "A"}


def test_parquet_nested_text_columns_and_an_incomplete_folder_of_shards(ws_path, tmp_path, capsys):
    rows = [_png_row(1), _png_row(2)]
    for column, value, kind in (("question", {"x": 1}, "struct"), ("A", ["a"], "list")):
        path = tmp_path / f"{column}.parquet"
        pq.write_table(pa.Table.from_pylist([{**rows[0], column: value}, {**rows[1], column: value}]), path)
        err = _refused(capsys, ws_path, ["import", path, "--name", "p"], column, f"expected text, got a {kind}")
        assert f"{path}:1:" in err
    folder = tmp_path / "shards"
    folder.mkdir()
    pq.write_table(pa.Table.from_pylist(rows), folder / "test-00000-of-00002.parquet")
    _refused(capsys, ws_path, ["import", folder, "--name", "p"], "path", "test-00001-of-00002.parquet")
    pq.write_table(pa.Table.from_pylist([_png_row(3)]), folder / "test-00001-of-00002.parquet")
    pq.write_table(pa.Table.from_pylist([_png_row(4)]), folder / "test-00002-of-00003.parquet")
    _refused(capsys, ws_path, ["import", folder, "--name", "p"], "path", "not one set")
    (folder / "test-00002-of-00003.parquet").unlink()
    assert _cli(capsys, ws_path, "import", folder, "--name", "p")[0] == 0


def test_desiderata_ece_reads_past_a_bom(ws_path, tmp_path, capsys):
    bom = tmp_path / "bom.jsonl"
    bom.write_text('\ufeff{"confidence": 0.25, "correct": false}\n', encoding="utf-8")
    code, out, err = _cli(capsys, ws_path, "desiderata", "ece", "--input", bom, "--json")
    assert code == 0, err
    assert json.loads(out)["ece"] == pytest.approx(0.25)


def test_skipped_rows_are_counted_not_all_kept(ws_path, demo, tmp_path, capsys):
    """A file of millions of bad rows with --skip-bad must not hold them all: 100 are kept to show, the rest
    counted, and rows are streamed: 1M bad rows peak at 67 MB (1.2 GB when all were kept)."""
    head, rows = _table(demo[1])
    extra = [[10_000 + i, *rows[0][1:]] for i in range(150)]
    path = tmp_path / "many.tsv"
    path.write_text("\n".join("\t".join(map(str, r)) for r in [head, *rows, *extra]), encoding="utf-8")
    code, out, err = _cli(capsys, ws_path, "import-predictions", path, "--bench", "demo", "--model", "m", "--skip-bad")
    assert code == 0, err
    assert "(0 never asked, 150 skipped)" in out
    lines = err.splitlines()
    assert len(lines) == 101 and lines[-1] == "skipped: … and 50 more row(s)"
    assert lines[0] == f"skipped: {path}:{len(rows) + 2}: index: no item 10000 in benchmark 'demo'"


@pytest.mark.parametrize("suffix", [".tsv", ".csv"])
def test_a_bare_carriage_return_in_a_cell_is_kept(ws_path, demo, tmp_path, capsys, suffix):
    """pandas' to_csv (VLMEvalKit) and our own export leave a "\\r" inside a cell unquoted; csv.reader stopped there."""
    import csv

    head, rows = _table(demo[1])
    said = head.index("prediction")
    rows[0][said] = "line one\rthe answer is B"
    path = tmp_path / f"cr{suffix}"
    sep = "\t" if suffix == ".tsv" else ","
    with path.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f, delimiter=sep, lineterminator="\n").writerows([head, *rows])
    assert f"{sep}line one\rthe answer is B\n".encode() in path.read_bytes()  # unquoted, as pandas writes it
    done = _import(capsys, ws_path, path)
    assert done["passes"] == len(rows)
    with open_workspace(ws_path) as ws:
        assert "line one\rthe answer is B" in {p.response for p in runs.predictions_of(ws, done["run_id"])}


def test_a_parquet_row_group_too_big_to_decode_is_refused_before_reading(ws_path, tmp_path, capsys, monkeypatch):
    from evaluator.formats.importers import parquet

    path = tmp_path / "groups.parquet"
    pq.write_table(pa.Table.from_pylist([_png_row(i) for i in range(1, 7)]), path, row_group_size=3)
    size = pq.ParquetFile(path).metadata.row_group(1).total_byte_size
    monkeypatch.setattr(parquet, "MAX_ROW_GROUP_BYTES", size - 1)  # instead of writing a gigabyte here
    err = _refused(capsys, ws_path, ["import", path, "--name", "p"], "row_group", "(write it with smaller row groups)")
    assert err.startswith(f"error: {path}:1: row_group: row group 0 unpacks to ")
