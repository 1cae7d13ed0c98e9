"""`vlmdesk import-predictions`: VLMEvalKit (.xlsx/.tsv/.csv) and lmms-eval (samples .jsonl) prediction files as
stored runs — round trips with `export-predictions`, VLMEvalKit's exact-matching scores, bad rows of every kind."""

import csv
import json
import os
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from openpyxl import Workbook

from db import catalog, open_workspace, runs
from evaluator.analysis.report import run_report
from evaluator.scoring.choices import LETTERS
from vlmdesk.cli import main
from vlmdesk.demo import ensure_demo

STRIDE = 1_000_000
DIFFERS = {"run_id", "model", "created_at", "finished_at", "config"}  # what must differ between the two runs


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory):
    """A demo workspace with a circular, a --full-passes, a vanilla, a --limit and a POPE run."""
    path = tmp_path_factory.mktemp("pi") / "w.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    for args in (
        ["--bench", "demo", "--model", "baseline:random"],
        ["--bench", "demo", "--model", "baseline:random", "--full-passes", "--seed", "3"],
        ["--bench", "demo", "--model", "baseline:first", "--strategy", "vanilla"],
        ["--bench", "demo", "--model", "baseline:random", "--limit", "7", "--seed", "5"],
        ["--bench", "demo-pope", "--model", "baseline:random"],
    ):
        assert main(["--workspace", str(path), "run", *args]) == 0
    return path


@pytest.fixture
def ws_path(demo_runs, tmp_path):
    copy = tmp_path / "w.sqlite"
    with sqlite3.connect(demo_runs) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    return copy


def _cli(capsys, ws_path, *args):
    capsys.readouterr()
    code = main(["--workspace", str(ws_path), *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def _report(ws_path, run_id):
    with open_workspace(ws_path) as ws:
        return run_report(ws, run_id).to_json()


def _run_count(ws_path):
    with open_workspace(ws_path) as ws:
        return len(runs.list_runs(ws))


@pytest.mark.parametrize(
    ("layout", "suffix"), [("vlmevalkit", ".tsv"), ("vlmevalkit", ".xlsx"), ("lmms-eval", ".jsonl")]
)
def test_export_then_import_gives_the_same_report(ws_path, tmp_path, capsys, layout, suffix):
    for run_id, bench in ((1, "demo"), (2, "demo"), (3, "demo"), (4, "demo"), (5, "demo-pope")):
        out = tmp_path / f"run{run_id}{suffix}"
        assert _cli(capsys, ws_path, "export-predictions", run_id, "--out", out, "--layout", layout)[0] == 0
        code, stdout, err = _cli(
            capsys, ws_path, "import-predictions", out, "--bench", bench, "--model", f"elsewhere-{run_id}", "--json"
        )
        assert code == 0, err
        new_id = json.loads(stdout)["run_id"]
        original, imported = _report(ws_path, run_id), _report(ws_path, new_id)
        assert {k: v for k, v in original.items() if k not in DIFFERS} == {
            k: v for k, v in imported.items() if k not in DIFFERS
        }
        assert imported["model"] == f"elsewhere-{run_id}" and imported["status"] == "finished"
        origin = imported["config"]["origin"]
        assert origin["format"] == layout and origin["file"] == out.name and len(origin["sha256"]) == 64
        assert origin["rows"] == imported["model_calls"] + json.loads(stdout)["unasked"]
        assert "/" not in json.dumps(origin)  # the file's name only, no path of this machine
        for key in ("strategy", "full_passes", "limit"):
            assert imported["config"][key] == original["config"][key]
        # The same file again: the run is found, nothing is added.
        code, stdout, _ = _cli(
            capsys, ws_path, "import-predictions", out, "--bench", bench, "--model", f"elsewhere-{run_id}"
        )
        assert code == 0 and f"already imported as run {new_id}" in stdout
    assert _run_count(ws_path) == 10


def _vlmevalkit_rows(items, rng, *, copies=True):
    """VLMEvalKit-style rows for every item (the originals, then each copy), with a random letter as the prediction.
    Copies rotate the other way round than vlmdesk's passes do, so only the shown order can place them."""
    rows = []
    knows = {
        item.index: rng.random() < 0.5 for item in items
    }  # a model that knows half the questions, guesses the rest
    ks = range(max(len(i.options) for i in items)) if copies else [0]
    for k in ks:
        for item in items:
            n = len(item.options)
            if k >= n:
                continue
            order = [(j - k) % n for j in range(n)]
            shown = [item.options[j] for j in order]
            answer = LETTERS[order.index(LETTERS.index(item.answer))]
            prediction = answer if knows[item.index] and rng.random() < 0.9 else rng.choice(LETTERS[:n])
            rows.append(
                {
                    "index": int(item.index) + k * STRIDE,
                    "question": item.question,
                    "hint": item.hint or "",
                    **dict(zip(LETTERS, shown)),
                    "answer": answer,
                    "category": item.category,
                    "prediction": prediction,
                }
            )
    return rows


def _expected_scores(rows):
    """VLMEvalKit's exact matching, from its rules: a row is a hit when its predicted letter is its answer; VanillaEval
    is the share of original rows that hit, CircularEval the share of questions whose every row hits."""
    originals = [r for r in rows if r["index"] < STRIDE]
    groups = {}
    for r in rows:
        groups.setdefault(r["index"] % STRIDE, []).append(r["prediction"] == r["answer"])
    vanilla = sum(r["prediction"] == r["answer"] for r in originals) / len(originals)
    return vanilla, sum(all(g) for g in groups.values()) / len(groups)


def _write(path, rows):
    columns = list(dict.fromkeys(k for r in rows for k in r))
    if path.suffix == ".xlsx":
        book = Workbook()
        sheet = book.active
        sheet.append(columns)
        for r in rows:
            sheet.append([r.get(c) for c in columns])
        book.save(path)
    else:
        with open(path, "w", newline="", encoding="utf-8") as f:
            out = csv.DictWriter(f, columns, delimiter="," if path.suffix == ".csv" else "\t")
            out.writeheader()
            out.writerows(rows)


@pytest.mark.parametrize("suffix", [".xlsx", ".tsv", ".csv"])
def test_vlmevalkit_letters_reproduce_its_exact_matching_scores(ws_path, tmp_path, capsys, suffix):
    with open_workspace(ws_path) as ws:
        items = catalog.list_items(ws, catalog.benchmark_by_name(ws, "demo").id)
    rng = random.Random(suffix)
    for copies in (True, False):
        rows = _vlmevalkit_rows(items, rng, copies=copies)
        path = tmp_path / f"model_demo_{copies}{suffix}"
        _write(path, rows)
        code, stdout, err = _cli(
            capsys, ws_path, "import-predictions", path, "--bench", "demo", "--model", "m", "--json"
        )
        assert code == 0, err
        report = _report(ws_path, json.loads(stdout)["run_id"])
        vanilla, circular = _expected_scores(rows)
        assert report["overall"]["vanilla"] == pytest.approx(vanilla)
        if copies:
            assert report["strategy"] == "circular" and report["overall"]["circular"] == pytest.approx(circular)
            assert report["model_calls"] == len(rows) == sum(len(i.options) for i in items)
            assert 0 < circular < vanilla < 1  # the draw tells the two apart
        else:
            assert report["strategy"] == "vanilla" and report["overall"]["circular"] is None


def test_lmms_eval_samples_for_mmbench_and_pope(ws_path, tmp_path, capsys):
    with open_workspace(ws_path) as ws:
        items = catalog.list_items(ws, catalog.benchmark_by_name(ws, "demo").id)
        pope = catalog.list_items(ws, catalog.benchmark_by_name(ws, "demo-pope").id)
    rows = _vlmevalkit_rows(items, random.Random(1))
    mmb = tmp_path / "samples_mmbench_en_dev.jsonl"
    with open(mmb, "w") as f:
        for n, r in enumerate(rows):
            doc = {k: v for k, v in r.items() if k != "prediction"}
            sample = {"doc_id": n, "doc": doc, "target": r["answer"], "resps": [[r["prediction"] + "."]]}
            sample["filtered_resps"] = [r["prediction"]]
            f.write(json.dumps(sample) + "\n")
    code, stdout, err = _cli(capsys, ws_path, "import-predictions", mmb, "--bench", "demo", "--model", "m", "--json")
    assert code == 0, err
    report = _report(ws_path, json.loads(stdout)["run_id"])
    assert (report["overall"]["vanilla"], report["overall"]["circular"]) == pytest.approx(_expected_scores(rows))

    said = {i.index: random.Random(str(i.index)).choice(["Yes", "No, there is not.", "maybe"]) for i in pope}
    path = tmp_path / "samples_pope_pop.jsonl"
    with open(path, "w") as f:
        for n, i in enumerate(pope):
            doc = {"question_id": str(i.index), "question": i.question, "answer": i.answer, "category": "random"}
            f.write(json.dumps({"doc_id": n, "doc": doc, "target": i.answer, "filtered_resps": [said[i.index]]}) + "\n")
    code, stdout, err = _cli(
        capsys, ws_path, "import-predictions", path, "--bench", "demo-pope", "--model", "m", "--json"
    )
    assert code == 0, err
    strict = _report(ws_path, json.loads(stdout)["run_id"])["pope"]["strict"]
    reading = {"Yes": "yes", "No, there is not.": "no", "maybe": None}
    assert strict["unknown"] == sum(reading[s] is None for s in said.values())
    assert strict["tp"] == sum(reading[said[i.index]] == "yes" == i.answer for i in pope)
    assert strict["tn"] == sum(reading[said[i.index]] == "no" == i.answer for i in pope)


def _good_tsv(ws_path, tmp_path):
    with open_workspace(ws_path) as ws:
        items = catalog.list_items(ws, catalog.benchmark_by_name(ws, "demo").id)
    return _vlmevalkit_rows(items, random.Random(2))


def _bad_cases(rows):
    """(what is wrong, rows with that defect at position 3, the field the error names)."""
    four = next(r for r in rows[3:] if "D" in r and r["D"])
    at = rows.index(four)

    def with_row(change):
        out = [dict(r) for r in rows]
        out[at] = change(dict(four))
        return out

    def swap(r):  # a permutation, but not a rotation
        r["A"], r["B"] = r["B"], r["A"]
        return r

    return [
        ("missing item", with_row(lambda r: {**r, "index": 987654}), "index"),
        ("not a permutation", with_row(lambda r: {**r, "A": "a different option"}), "A"),
        ("shuffled", with_row(swap), "A"),
        ("answer", with_row(lambda r: {**r, "answer": "D" if r["answer"] != "D" else "A"}), "answer"),
        ("duplicate", [*rows, rows[at]], "index"),
        ("bad index", with_row(lambda r: {**r, "index": "1.5"}), "index"),
    ], at + 2  # the line of that row (the header is line 1)


@pytest.mark.parametrize("suffix", [".tsv", ".xlsx"])
def test_bad_rows_are_one_line_errors_and_nothing_is_stored(ws_path, tmp_path, capsys, suffix):
    rows = _good_tsv(ws_path, tmp_path)
    cases, line = _bad_cases(rows)
    before = _run_count(ws_path)
    for n, (what, bad, field) in enumerate(cases):
        path = tmp_path / f"bad_{what.replace(' ', '_')}{suffix}"
        _write(path, bad)
        code, _, err = _cli(capsys, ws_path, "import-predictions", path, "--bench", "demo", "--model", "m")
        expected_line = len(rows) + 2 if what == "duplicate" else line
        assert code == 2 and err.startswith(f"error: {path}:{expected_line}: {field}: "), (what, err)
        assert err.count("\n") == 1
        assert _run_count(ws_path) == before + n
        code, stdout, err = _cli(
            capsys, ws_path, "import-predictions", path, "--bench", "demo", "--model", what, "--skip-bad", "--json"
        )
        done = json.loads(stdout)
        assert code == 0 and done["rows_skipped"] == 1 and err.startswith("skipped: ")
        assert done["rows_read"] == len(bad) and done["passes"] == len(bad) - 1
    assert _run_count(ws_path) == before + len(cases)


def test_bad_files_and_names(ws_path, tmp_path, capsys):
    path = tmp_path / "p.tsv"
    path.write_text("index\tquestion\tA\tB\n1\tq\ta\tb\n")
    code, _, err = _cli(capsys, ws_path, "import-predictions", path, "--bench", "demo", "--model", "m")
    assert (
        code == 2 and err == f"error: {path}:1: header: missing column(s): prediction (a VLMEvalKit prediction file)\n"
    )
    samples = tmp_path / "s.jsonl"
    samples.write_text(
        '{"doc_id": 0, "doc": {"index": 1, "A": "x"}, "filtered_resps": ["A"]}\nnot json\n{"doc_id": 2}\n'
    )
    code, _, err = _cli(capsys, ws_path, "import-predictions", samples, "--bench", "demo", "--model", "m")
    assert code == 2 and err.startswith(f"error: {samples}:1: A: item 1: the options ['x'] are not a permutation")
    code, stdout, err = _cli(
        capsys, ws_path, "import-predictions", samples, "--bench", "demo", "--model", "m", "--skip-bad", "--json"
    )
    assert code == 2 and "no prediction could be matched" in err
    assert "(3 skipped, the first: " in err and err.count("\n") == 1
    for model, problem in (("sk-" + "a" * 30, "API key"), ("two\nlines", "unprintable"), ("", "empty")):
        code, _, err = _cli(capsys, ws_path, "import-predictions", path, "--bench", "demo", "--model", model)
        assert code == 2 and "--model: " in err and problem in err and "a" * 30 not in err
    code, _, err = _cli(capsys, ws_path, "import-predictions", tmp_path / "p.txt", "--bench", "demo", "--model", "m")
    assert code == 2 and "no such file" in err
    garbage = tmp_path / "p.xlsx"
    garbage.write_bytes(b"PK\x03\x04 not a workbook")
    code, _, err = _cli(capsys, ws_path, "import-predictions", garbage, "--bench", "demo", "--model", "m")
    assert code == 2 and err.startswith(f"error: {garbage}: path: not a readable .xlsx workbook")
    code, _, err = _cli(
        capsys, ws_path, "import-predictions", path, "--bench", "demo", "--model", "m", "--extractor", "x"
    )
    assert code == 2 and "--extractor: " in err
    code, _, err = _cli(capsys, ws_path, "import-predictions", path, "--bench", "nope", "--model", "m")
    assert code == 2 and "no benchmark named 'nope'" in err
    assert _run_count(ws_path) == 5


def test_imported_run_is_an_ordinary_run(ws_path, tmp_path, capsys):
    """Re-scoring, run-items and `vlmdesk run` on the same model name treat it as any run (never as its own)."""
    out = tmp_path / "p.tsv"
    assert _cli(capsys, ws_path, "export-predictions", 1, "--out", out)[0] == 0
    root = Path(__file__).resolve().parents[2]
    args = ["import-predictions", str(out), "--bench", "demo", "--model", "baseline:random", "--json"]
    proc = subprocess.run(  # the real command, as the app runs it
        [sys.executable, "-m", "vlmdesk", "--workspace", str(ws_path), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert proc.returncode == 0, proc.stderr
    run_id = json.loads(proc.stdout)["run_id"]
    assert _cli(capsys, ws_path, "rescore", run_id, "--extractor", "rules")[0] == 0
    assert _cli(capsys, ws_path, "run-items", run_id, "--json")[0] == 0
    # The same model spec run for real finds run 1, not the imported one.
    code, stdout, _ = _cli(capsys, ws_path, "run", "--bench", "demo", "--model", "baseline:random", "--json")
    assert code == 0 and json.loads(stdout)["run_id"] == 1
    with open_workspace(ws_path) as ws:
        preds = runs.predictions_of(ws, run_id)
    assert preds and all(p.prompt == "" and p.latency_ms is None and p.stage == "rules" for p in preds)


def _rewrite_member(path, name, change):
    import zipfile

    with zipfile.ZipFile(path) as src:
        parts = {i.filename: src.read(i) for i in src.infolist()}
    parts[name] = change(parts[name])
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as dst:
        for member, data in parts.items():
            dst.writestr(member, data)


LAUGHS = (
    b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    + b"".join(b'<!ENTITY lol%d "%s">' % (n, (b"&lol%d;" % (n - 1) if n > 1 else b"&lol;") * 10) for n in range(1, 10))
    + b"]>"
)


@pytest.mark.parametrize("defect", ["cut", "billion laughs", "cut workbook"])
def test_an_xlsx_with_cut_or_exploding_xml_is_bad_input(ws_path, tmp_path, capsys, defect):
    out = tmp_path / f"run3_{defect.replace(' ', '_')}.xlsx"
    assert _cli(capsys, ws_path, "export-predictions", 3, "--out", out)[0] == 0
    if defect == "cut":
        _rewrite_member(out, "xl/worksheets/sheet1.xml", lambda xml: xml[: len(xml) // 2])
    elif defect == "billion laughs":
        _rewrite_member(
            out,
            "xl/worksheets/sheet1.xml",
            lambda xml: LAUGHS + xml.replace(b"<t>", b"<t>&lol9;", 1) if b"<t>" in xml else None,
        )
    else:
        _rewrite_member(out, "xl/workbook.xml", lambda xml: xml[: len(xml) // 2])
    before = _run_count(ws_path)
    code, _, err = _cli(capsys, ws_path, "import-predictions", out, "--bench", "demo", "--model", "m")
    assert code == 2 and err.startswith(f"error: {out}") and err.count("\n") == 1, err
    assert "internal error" not in err and ("sheet XML" in err or "workbook" in err), err
    assert _run_count(ws_path) == before


@pytest.mark.parametrize("suffix", [".tsv", ".csv"])
def test_a_delimited_file_cut_mid_row_is_bad_input(ws_path, tmp_path, capsys, suffix):
    """The last row with fewer cells than the header and no final newline: an error naming its line and the first
    missing column, not a silently padded row (which read as a pass never asked)."""
    out = tmp_path / f"run3{suffix}"
    assert _cli(capsys, ws_path, "export-predictions", 3, "--out", out)[0] == 0
    text = out.read_text(encoding="utf-8")
    lines = text.splitlines()
    sep = "\t" if suffix == ".tsv" else ","
    last = lines[-1].split(sep)
    header = lines[0].split(sep)
    assert len(last) == len(header) == 12
    out.write_text(text[: text.rindex(lines[-1])] + sep.join(last[:9]), encoding="utf-8")
    before = _run_count(ws_path)
    code, _, err = _cli(capsys, ws_path, "import-predictions", out, "--bench", "demo", "--model", "m")
    assert code == 2 and err == (
        f"error: {out}:{len(lines)}: {header[9]}: fewer cells (9) than header columns (12) — truncated line?\n"
    )
    assert _run_count(ws_path) == before
    out.write_text(text.replace(lines[-1], lines[-1] + sep + "surplus"), encoding="utf-8")
    code, _, err = _cli(capsys, ws_path, "import-predictions", out, "--bench", "demo", "--model", "m")
    assert code == 2 and err.startswith(f"error: {out}:{len(lines)}: row: more cells (13)")


def test_a_file_that_contradicts_the_benchmark_is_refused(ws_path, tmp_path, capsys):
    """A vanilla multiple-choice file onto the POPE benchmark, a POPE file with other questions, a POPE file whose
    answer column contradicts the keys, a multiple-choice file whose questions are another benchmark's: each is
    `error: FILE:LINE: field: …` naming the first row, and no run is stored."""
    mcq, pope = tmp_path / "first_demo.tsv", tmp_path / "pope.tsv"
    assert _cli(capsys, ws_path, "export-predictions", 3, "--out", mcq)[0] == 0
    assert _cli(capsys, ws_path, "export-predictions", 5, "--out", pope)[0] == 0

    def changed(path, column, change):
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
        rows[0][column] = change(rows[0][column])
        out = path.with_name(f"{column}-{path.name}")
        _write(out, rows)
        return out

    before = _run_count(ws_path)
    cases = [
        (mcq, "demo-pope", "A", "the item has none (a yes/no or open benchmark"),
        (changed(pope, "question", lambda q: "What colour is the cat?"), "demo-pope", "question", "not the item's"),
        (changed(pope, "answer", lambda a: "no" if a.lower() == "yes" else "yes"), "demo-pope", "answer", "not the"),
        (changed(mcq, "question", lambda q: q + " (another benchmark)"), "demo", "question", "not the item's"),
        (pope, "demo", "A", "the row shows no options"),
    ]
    for path, bench, field, what in cases:
        code, _, err = _cli(capsys, ws_path, "import-predictions", path, "--bench", bench, "--model", "m")
        assert code == 2 and err.startswith(f"error: {path}:2: {field}: ") and what in err, (path.name, bench, err)
        assert err.count("\n") == 1
    assert _run_count(ws_path) == before
    spaced = changed(mcq, "question", lambda q: "  " + q.replace(" ", "\n", 1) + " ")  # white space differs only
    code, _, err = _cli(capsys, ws_path, "import-predictions", spaced, "--bench", "demo", "--model", "m")
    assert code == 0, err


def test_an_lmms_eval_sample_giving_a_key_twice_is_refused(ws_path, tmp_path, capsys):
    samples = tmp_path / "samples_mmbench.jsonl"
    assert _cli(capsys, ws_path, "export-predictions", 3, "--out", samples, "--layout", "lmms-eval")[0] == 0
    first, *rest = samples.read_text().splitlines()
    samples.write_text("\n".join([first[:-1] + ', "filtered_resps": ["Z"]}', *rest]) + "\n")
    code, _, err = _cli(capsys, ws_path, "import-predictions", samples, "--bench", "demo", "--model", "m")
    assert code == 2 and err.startswith(f"error: {samples}:1: json: ") and "'filtered_resps' given twice" in err
