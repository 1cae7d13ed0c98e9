"""`vlmdesk qc …` end to end: stages from the command line (baselines and tiny hf models), decisions, export."""

from __future__ import annotations

import json

import pytest

from db import catalog, open_workspace, runs
from vlmdesk.cli import main
from vlmdesk.demo import ensure_demo


@pytest.fixture
def demo_ws(tmp_path):
    path = tmp_path / "ws.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    return path


def cli(capsys, ws_path, *args) -> tuple[int, str, str]:
    code = main(["--workspace", str(ws_path), *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def right_in_every_pass(ws, run_id: int) -> set:
    """Item indexes a run got right in all its passes, read straight from the stored predictions."""
    passes: dict[int, list[bool]] = {}
    for p in runs.predictions_of(ws, run_id):
        passes.setdefault(p.item_id, []).append(bool(p.correct))
    items = {i.id: i for b in catalog.list_benchmarks(ws) for i in catalog.list_items(ws, b.id)}
    return {items[i].index for i, ok in passes.items() if all(ok) and len(ok) == max(1, len(items[i].options))}


def test_text_only_runs_are_ordinary_runs_and_a_second_call_reuses_them(demo_ws, capsys):
    args = [
        "qc",
        "text-only",
        "--bench",
        "demo-pope",
        "--model",
        "baseline:first",
        "--model",
        "baseline:random?seed=3",
        "--model",
        "baseline:random?seed=4",
        "--json",
    ]
    code, out, err = cli(capsys, demo_ws, *args)
    assert code == 0, err
    result = json.loads(out)
    assert result["stage"] == "text-only" and len(result["runs"]) == 3
    with open_workspace(demo_ws) as ws:
        bench = catalog.benchmark_by_name(ws, "demo-pope")
        right = [right_in_every_pass(ws, r) for r in result["runs"]]
        everyone = {i.index for i in catalog.list_items(ws, bench.id)}
        all_runs = runs.list_runs(ws)
    expected = {i for i in everyone if sum(i in r for r in right) >= 2}
    assert 0 < len(expected) < len(everyone) and set(result["candidates"]) == expected
    assert all(r.config["text_only"] and r.status == "finished" for r in all_runs)
    code, out, _ = cli(capsys, demo_ws, "report", str(result["runs"][0]), "--json")
    assert code == 0 and json.loads(out)["model"] == "baseline:first"
    # Again: the finished runs are reused (no new run), the stage is recomputed to the same candidates.
    code, out, err = cli(capsys, demo_ws, *args)
    assert code == 0 and "reused" in err and json.loads(out)["candidates"] == result["candidates"]
    assert json.loads(out)["added"] == [] and json.loads(out)["withdrawn"] == []
    with open_workspace(demo_ws) as ws:
        assert len(runs.list_runs(ws)) == 3


def test_decide_list_summary_and_export_from_the_command_line(demo_ws, capsys, tmp_path, monkeypatch):
    code, out, _ = cli(capsys, demo_ws, "run", "--bench", "demo", "--model", "baseline:first", "--json")
    run_id = json.loads(out)["run_id"]
    code, out, _ = cli(capsys, demo_ws, "qc", "consensus", "--bench", "demo", "--run", str(run_id), "--json")
    assert code == 0 and len(json.loads(out)["candidates"]) == 30
    monkeypatch.setenv("VLMDESK_ANNOTATOR", "alice")
    code, out, _ = cli(
        capsys,
        demo_ws,
        "qc",
        "decide",
        "demo",
        "1",
        "--confirm",
        "--reason",
        "bad-image",
        "--note",
        "blurred",
        "--json",
    )
    assert code == 0 and json.loads(out)["annotator"] == "alice" and json.loads(out)["status"] == "confirmed"
    code, out, _ = cli(capsys, demo_ws, "qc", "decide", "demo", "2", "--confirm", "--answer", "a")
    assert code == 0 and "answer B → A" in out
    code, out, _ = cli(capsys, demo_ws, "qc", "decide", "demo", "2", "--reject", "--annotator", "bob")
    assert code == 0 and "disputed" in out and "disagree" in out

    code, out, _ = cli(capsys, demo_ws, "qc", "list", "--bench", "demo", "--json")
    listed = json.loads(out)
    assert [c["status"] for c in listed[:28]] == ["pending"] * 28  # pending first
    by_index = {c["index"]: c for c in listed}
    assert by_index[1]["status"] == "confirmed" and by_index[1]["runs"] == [run_id]
    assert by_index[1]["stage"] == "consensus" and by_index[1]["category"] == "possibly flawed"
    assert [d["annotator"] for d in by_index[2]["decisions"]] == ["alice", "bob"]
    assert by_index[2]["decisions"][0]["old_answer"] == "B" and by_index[2]["decisions"][0]["new_answer"] == "A"
    code, out, _ = cli(capsys, demo_ws, "qc", "list", "--disagreements", "--json")
    assert [c["index"] for c in json.loads(out)] == [2]
    code, out, _ = cli(capsys, demo_ws, "qc", "list", "--status", "disputed")
    assert code == 0 and "alice:confirm/wrong_answer, bob:reject (disagree)" in out

    code, out, _ = cli(capsys, demo_ws, "qc", "summary", "--json")
    [s] = json.loads(out)
    assert s["stages"]["consensus"]["confirmed"] == 1 and s["stages"]["consensus"]["disputed"] == 1
    assert s["total"]["pending"] == 28
    code, out, _ = cli(capsys, demo_ws, "qc", "summary")
    assert code == 0 and "consensus (possibly flawed)" in out

    target = tmp_path / "curated.jsonl"
    code, out, _ = cli(capsys, demo_ws, "qc", "export", "demo", "--out", str(target), "--json")
    report = json.loads(out)
    assert (report["questions"], report["removed"], report["answer_corrected"]) == (29, 1, 0)
    assert (tmp_path / "curated.jsonl.changes.jsonl").read_text().count("\n") == 1


@pytest.mark.parametrize(
    "args, message",
    [
        (["qc", "consensus", "--bench", "demo", "--run", "99"], "no run 99"),
        (["qc", "consensus", "--bench", "nope", "--run", "1"], "no benchmark named 'nope'"),
        (["qc", "decide", "demo", "1", "--reject"], "not a QC candidate"),
        (["qc", "decide", "demo", "777", "--reject"], "no item with index 777"),
        (["qc", "text-only", "--bench", "demo", "--model", "nonsense"], "bad model spec"),
        (["qc", "text-only", "--bench", "demo", "--model", "baseline:first", "--model", "baseline:first"], "twice"),
        (["qc", "export", "demo-pope", "--out", "x.tsv", "--format", "mmbench-tsv"], "can be exported as pope"),
    ],
)
def test_bad_requests_are_one_line_errors(demo_ws, capsys, args, message):
    code, out, err = cli(capsys, demo_ws, *args)
    assert code == 2 and err.startswith("error: ") and message in err and err.count("\n") == 1


def test_every_qc_step_has_help_with_examples(capsys):
    for step in ("text-only", "consensus", "list", "decide", "export", "summary"):
        with pytest.raises(SystemExit):
            main(["qc", step, "--help"])
        out = capsys.readouterr().out
        assert "examples:" in out and f"vlmdesk qc {step}" in out and "--workspace" in out


def test_tiny_models_text_only_and_vlm_consensus(demo_ws, capsys, tiny_text_lm_dir, tiny_llava_dir):
    # Real hf: code paths; the expected candidates are recomputed from each run's stored passes.
    code, out, err = cli(
        capsys,
        demo_ws,
        "qc",
        "text-only",
        "--bench",
        "demo",
        "--limit",
        "6",
        "--batch-size",
        "6",
        "--model",
        f"hf:{tiny_text_lm_dir}",
        "--json",
    )
    assert code == 0, err
    text = json.loads(out)
    code, out, err = cli(
        capsys,
        demo_ws,
        "run",
        "--bench",
        "demo",
        "--model",
        f"hf:{tiny_llava_dir}",
        "--limit",
        "6",
        "--max-new-tokens",
        "4",
        "--json",
    )
    vlm_run = json.loads(out)["run_id"]
    code, out, err = cli(capsys, demo_ws, "qc", "consensus", "--bench", "demo", "--run", str(vlm_run), "--json")
    assert code == 0, err
    consensus = json.loads(out)
    with open_workspace(demo_ws) as ws:
        assert runs.get_run(ws, text["runs"][0]).versions["backend"]["kind"] == "causal-lm"
        right = [right_in_every_pass(ws, r) for r in text["runs"]]
        evaluated = {i.index for i in catalog.list_items(ws, catalog.benchmark_by_name(ws, "demo").id, limit=6)}
        vlm_right = right_in_every_pass(ws, vlm_run)
    # One run: "more than half" of one run is that run.
    assert text["candidates"] == sorted(right[0])
    assert text["items_evaluated"] == consensus["items_evaluated"] == 6
    assert set(consensus["candidates"]) == evaluated - vlm_right
