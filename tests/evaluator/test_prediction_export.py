"""`vlmdesk export-predictions` (VLMEvalKit's prediction layout), `vlmdesk run-items`, `vlmdesk models`,
`vlmdesk runs --scores`: the commands behind the app's Results and Models tabs."""

import csv
import json

import pytest

from db import catalog, open_workspace, runs
from evaluator.analysis.report import run_report
from evaluator.formats.importers.common import CIRCULAR_STRIDE
from evaluator.scoring.choices import LETTERS
from vlmdesk.cli import main
from vlmdesk.demo import ensure_demo


@pytest.fixture
def ws_path(tmp_path):
    path = tmp_path / "w.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    for args in (
        ["--bench", "demo", "--model", "baseline:random"],
        ["--bench", "demo", "--model", "baseline:first", "--strategy", "vanilla"],
        ["--bench", "demo-pope", "--model", "baseline:random"],
    ):
        assert main(["--workspace", str(path), "run", *args]) == 0
    return path


def _read(path, sep="\t"):
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter=sep))


def test_circular_run_exports_every_rotation_with_its_pass(ws_path, tmp_path, capsys):
    out = tmp_path / "random_demo.tsv"
    assert main(["--workspace", str(ws_path), "export-predictions", "1", "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    rows = _read(out)
    with open_workspace(ws_path) as ws:
        items = catalog.list_items(ws, 1)
        done = {(p.item_id, p.pass_): p for p in runs.predictions_of(ws, 1)}
    assert list(rows[0])[:3] == ["index", "question", "hint"] and list(rows[0])[-1] == "prediction"
    assert summary["rows"] == len(rows) == sum(len(i.options) for i in items)
    assert summary["predicted"] == len(done)
    by_index = {r["index"]: r for r in rows}
    assert [r["index"] for r in rows[: len(items)]] == [str(i.index) for i in items]  # originals first
    for item in items:
        n = len(item.options)
        for k in range(n):
            row = by_index[str(int(item.index) + k * CIRCULAR_STRIDE)]
            shown = [row[letter] for letter in LETTERS[:n]]
            assert shown == [item.options[(i + k) % n] for i in range(n)]  # the options as pass k showed them
            assert shown[LETTERS.index(row["answer"])] == item.options[LETTERS.index(item.answer)]
            p = done.get((item.id, k))
            assert row["prediction"] == (p.response if p else "")  # never-asked passes stay empty
            if p:
                assert p.answer == row["answer"] and list(p.option_order) == [(i + k) % n for i in range(n)]


def test_vanilla_pope_and_bad_requests(ws_path, tmp_path, capsys):
    out = tmp_path / "first_demo.csv"
    assert (
        main(["--workspace", str(ws_path), "export-predictions", "2", "--out", str(out), "--prediction", "choice"]) == 0
    )
    rows = _read(out, ",")
    assert len(rows) == 30 and {r["prediction"] for r in rows} == {"A"}
    pope = tmp_path / "pope.tsv"
    assert main(["--workspace", str(ws_path), "export-predictions", "3", "--out", str(pope)]) == 0
    rows = _read(pope)
    assert list(rows[0]) == ["index", "question", "answer", "category", "prediction"] and len(rows) == 48
    assert {r["category"] for r in rows} == {"random"} and all(r["prediction"] for r in rows)
    capsys.readouterr()
    assert main(["--workspace", str(ws_path), "export-predictions", "1", "--out", str(tmp_path / "x.txt")]) == 2
    assert main(["--workspace", str(ws_path), "export-predictions", "99", "--out", str(tmp_path / "x.tsv")]) == 2
    err = capsys.readouterr().err
    assert err.count("error: ") == 2 and ".xlsx, .tsv or .csv" in err and "no run 99" in err
    assert not (tmp_path / "x.txt").exists() and not (tmp_path / "x.tsv").exists()


def test_run_items_are_what_the_report_counts(ws_path, capsys):
    with open_workspace(ws_path) as ws:
        report = run_report(ws, 1)
    for name, scores in report.mcq.by_l2.items():
        assert main(["--workspace", str(ws_path), "run-items", "1", "--level", "l2", "--group", name, "--json"]) == 0
        found = json.loads(capsys.readouterr().out)
        assert len(found) == scores.questions
        assert sum(r["circular"] for r in found) == round(scores.circular * scores.questions)
        assert sum(r["vanilla"] for r in found) == round(scores.vanilla * scores.questions)
    assert main(["--workspace", str(ws_path), "run-items", "3", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    with open_workspace(ws_path) as ws:
        pope = run_report(ws, 3).pope.pope
    assert sum(r["official"] for r in found) == round(pope["official"].accuracy * len(found))
    assert main(["--workspace", str(ws_path), "run-items", "1", "--level", "l2"]) == 2
    capsys.readouterr()
    # An unknown group is an error that lists the known ones; MMBench's short codes name L2 abilities too.
    assert main(["--workspace", str(ws_path), "run-items", "1", "--level", "l2", "--group", "nosuch"]) == 2
    assert "known: " in capsys.readouterr().err
    assert main(["--workspace", str(ws_path), "run-items", "1", "--level", "l2", "--group", "CP", "--json"]) == 0
    short = json.loads(capsys.readouterr().out)
    assert len(short) == report.mcq.by_l2["coarse_perception"].questions
    assert all(isinstance(r["index"], int) for r in short)  # integers stay integers, as in `vlmdesk items`


def test_models_commands_and_runs_scores(ws_path, capsys):
    w = ["--workspace", str(ws_path)]
    assert main([*w, "models", "add", "coin", "baseline:random"]) == 0
    assert main([*w, "models", "add", "srv", "openai:m@http://127.0.0.1:9/v1?key_env=MY_KEY"]) == 0
    capsys.readouterr()
    assert main([*w, "models", "add", "leak", "openai:m@http://127.0.0.1:9/v1?api_key=abc"]) == 2
    assert main([*w, "models", "add", "coin", "baseline:first"]) == 2
    assert main([*w, "models", "add", "bad", "nonsense"]) == 2
    assert main([*w, "models", "add", "a:b", "baseline:first"]) == 2
    err = capsys.readouterr().err
    assert err.count("error: ") == 4 and "never stored" in err and "exists already" in err
    assert main([*w, "models", "list", "--json"]) == 0
    saved = json.loads(capsys.readouterr().out)
    assert [(m["name"], m["kind"]) for m in saved] == [("coin", "baseline"), ("srv", "openai")]
    with open_workspace(ws_path) as ws:  # nothing secret-looking anywhere in the table
        assert "abc" not in json.dumps(ws.conn.execute("SELECT * FROM models").fetchall())
    assert main([*w, "models", "test", "coin", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["spec"] == "baseline:random" and result["benchmark"] == "demo" and result["response"] in "ABCD"
    assert result["correct"] == (result["choice"] == result["answer"])
    assert main([*w, "models", "test", "hf:/no/such/dir"]) == 1
    assert "model directory not found" in capsys.readouterr().err
    # A saved name works as --model; the run stores the spec.
    assert main([*w, "run", "--bench", "demo", "--model", "coin", "--strategy", "vanilla", "--json"]) == 0
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    with open_workspace(ws_path) as ws:
        assert runs.get_run(ws, run_id).model_spec == "baseline:random"
        report = run_report(ws, run_id)
    assert main([*w, "runs", "--scores", "--json"]) == 0
    listed = {r["run_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert listed[run_id]["vanilla"] == report.mcq.overall.vanilla and listed[run_id]["circular"] is None
    assert listed[3]["pope_f1"] is not None and listed[run_id]["duration_s"] >= 0
    assert main([*w, "models", "remove", "coin"]) == 0 and main([*w, "models", "remove", "coin"]) == 2


HOSTILE_CELLS = ["=cmd|' /C calc'!A0", "+1+1", "-2", "@SUM(A1)", "\tx", "\rx", "'=already", "''@twice", "'plain", "A"]


def test_csv_cells_a_spreadsheet_would_run_get_a_quote_and_come_back_on_import(ws_path, tmp_path, capsys):
    """OWASP's CSV-injection rule (evaluator/outfiles.csv_cell) in .csv; .tsv stays verbatim; the import reverses it."""
    with open_workspace(ws_path) as ws, ws.conn:
        keys = ws.conn.execute("SELECT item_id FROM predictions WHERE run_id = 2 ORDER BY item_id").fetchall()
        for (item_id,), text in zip(keys, HOSTILE_CELLS, strict=False):
            ws.conn.execute("UPDATE predictions SET response = ? WHERE run_id = 2 AND item_id = ?", (text, item_id))
    csv_out, tsv_out = tmp_path / "first_demo.csv", tmp_path / "first_demo.tsv"
    for out in (csv_out, tsv_out):
        assert main(["--workspace", str(ws_path), "export-predictions", "2", "--out", str(out)]) == 0
    written = [r["prediction"] for r in _read(csv_out, ",")][: len(HOSTILE_CELLS)]
    assert written == [
        "'=cmd|' /C calc'!A0", "'+1+1", "'-2", "'@SUM(A1)", "'\tx", "'\rx", "''=already", "'''@twice", "'plain", "A"
    ]  # fmt: skip
    assert "\t=cmd|' /C calc'!A0\n" in tsv_out.read_text(encoding="utf-8")  # VLMEvalKit's data, verbatim
    assert (
        main(["--workspace", str(ws_path), "import-predictions", str(csv_out), "--bench", "demo", "--model", "m"]) == 0
    )
    with open_workspace(ws_path) as ws:
        back = ws.conn.execute(
            "SELECT response FROM predictions WHERE run_id = (SELECT max(id) FROM runs) ORDER BY item_id"
        ).fetchall()
    assert [r for (r,) in back][: len(HOSTILE_CELLS)] == HOSTILE_CELLS
