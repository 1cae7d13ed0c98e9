"""The evaluation engine on real workspaces, with baselines whose scores are known exactly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from db import catalog, open_workspace, runs
from evaluator.analysis.report import run_report
from evaluator.backends.baseline import BaselineBackend
from evaluator.engine.prompts import default_template
from evaluator.engine.runner import Engine, RunSettings, new_run
from evaluator.formats.importers import import_benchmark
from tests.backend_plugins import slow_backend  # noqa: F401 (fixture)
from tests.factories import png_bytes
from vlmdesk.cli import main

LETTERS = "ABCD"


def write_jsonl_bench(path: Path, n: int, *, seed: int = 0, n_options=(2, 3, 4), with_answers=True) -> Path:
    """n items sharing one image (stored once), answers spread over the letters, options counts cycling."""
    (path.parent / "img.png").write_bytes(png_bytes())
    with open(path, "w") as f:
        for i in range(n):
            k = n_options[i % len(n_options)]
            rec = {
                "index": i,
                "question": f"Which is item {i}?",
                "options": [f"thing {i} {j}" for j in range(k)],
                "image": "img.png",
                "category": f"cat{i % 3}",
                "l2_category": f"l2_{i % 2}",
                "split": "dev" if i % 5 else "test",
            }
            if with_answers:
                rec["answer"] = LETTERS[(i * 7 + seed) % k]
            f.write(json.dumps(rec) + "\n")
    return path


@pytest.fixture
def bench_ws(tmp_path):
    ws_path = tmp_path / "ws.sqlite"
    src = write_jsonl_bench(tmp_path / "b.jsonl", 60)
    with open_workspace(ws_path) as ws:
        import_benchmark(ws, src, fmt="jsonl", name="b")
    return ws_path


def run_cli(capsys, *args) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def report_json(capsys, ws_path, run_id) -> dict:
    code, out, _ = run_cli(capsys, "--workspace", str(ws_path), "report", str(run_id), "--json")
    assert code == 0
    return json.loads(out)


def test_baseline_first_scores_base_rate_vanilla_and_zero_circular(bench_ws, capsys):
    code, out, _ = run_cli(
        capsys, "--workspace", str(bench_ws), "run", "--bench", "b", "--model", "baseline:first", "--json"
    )
    assert code == 0
    run_id = json.loads(out)["run_id"]
    rep = report_json(capsys, bench_ws, run_id)
    with open_workspace(bench_ws) as ws:
        items = catalog.list_items(ws, catalog.benchmark_by_name(ws, "b").id)
    answered_a = sum(1 for i in items if i.answer == "A")
    assert answered_a > 0
    assert rep["overall"]["vanilla"] == pytest.approx(answered_a / len(items))
    assert rep["overall"]["circular"] == 0.0
    assert rep["model_calls"] == len(items) + answered_a
    assert rep["questions"] == len(items) and rep["undecided"] == 0
    # Per-group figures add up to the overall ones.
    assert sum(g["questions"] for g in rep["by_l2"].values()) == len(items)
    assert sum(g["vanilla"] * g["questions"] for g in rep["by_category"].values()) == pytest.approx(answered_a)


def test_passes_rotate_options_and_remap_the_answer(bench_ws, capsys):
    code, out, _ = run_cli(
        capsys,
        "--workspace",
        str(bench_ws),
        "run",
        "--bench",
        "b",
        "--model",
        "baseline:first",
        "--full-passes",
        "--json",
    )
    run_id = json.loads(out)["run_id"]
    with open_workspace(bench_ws) as ws:
        items = {i.id: i for i in catalog.list_items(ws, catalog.benchmark_by_name(ws, "b").id)}
        preds = runs.predictions_of(ws, run_id)
    assert len(preds) == sum(len(i.options) for i in items.values())  # every pass of every item
    for p in preds:
        item = items[p.item_id]
        n = len(item.options)
        assert p.option_order == tuple((j + p.pass_) % n for j in range(n))
        shown = [item.options[j] for j in p.option_order]
        assert f"A. {shown[0]}" in p.prompt and f"{LETTERS[n - 1]}. {shown[-1]}" in p.prompt
        # The displayed answer letter points at the original answer's text.
        assert shown[LETTERS.index(p.answer)] == item.options[LETTERS.index(item.answer)]
        assert p.correct == (p.answer == "A")
    rep = report_json(capsys, bench_ws, run_id)
    assert rep["consistency"] == 0.0  # always "A" means a different option every pass
    # Without --full-passes only items right so far are asked to the end: no consistency figure.
    _, out, _ = run_cli(
        capsys, "--workspace", str(bench_ws), "run", "--bench", "b", "--model", "baseline:first", "--json"
    )
    assert report_json(capsys, bench_ws, json.loads(out)["run_id"])["consistency"] is None


def test_seeded_random_baseline_circular_near_one_in_256(tmp_path, capsys):
    src = write_jsonl_bench(tmp_path / "four.jsonl", 4096, n_options=(4,))
    ws_path = tmp_path / "ws.sqlite"
    with open_workspace(ws_path) as ws:
        import_benchmark(ws, src, fmt="jsonl", name="four")
    _, out, _ = run_cli(
        capsys,
        "--workspace",
        str(ws_path),
        "run",
        "--bench",
        "four",
        "--model",
        "baseline:random",
        "--seed",
        "7",
        "--batch-size",
        "64",
        "--json",
    )
    rep = report_json(capsys, ws_path, json.loads(out)["run_id"])
    # 4096 items: expected 16 circular hits (sd 4), vanilla 1/4 (sd 0.7 %).
    assert 4 <= rep["overall"]["circular"] * 4096 <= 32
    assert rep["overall"]["vanilla"] == pytest.approx(0.25, abs=0.03)
    # Waves stop early: about 4096 * (1 + 1/4 + 1/16 + 1/64) calls instead of 4 * 4096.
    assert 5000 < rep["model_calls"] < 5650
    # Same seed, same answers; another seed, other answers.
    _, out2, _ = run_cli(
        capsys,
        "--workspace",
        str(ws_path),
        "run",
        "--bench",
        "four",
        "--model",
        "baseline:random",
        "--seed",
        "7",
        "--batch-size",
        "64",
        "--new",
        "--json",
    )
    assert report_json(capsys, ws_path, json.loads(out2)["run_id"])["overall"] == rep["overall"]


def test_vanilla_strategy_asks_pass_zero_only(bench_ws, capsys):
    _, out, _ = run_cli(
        capsys,
        "--workspace",
        str(bench_ws),
        "run",
        "--bench",
        "b",
        "--model",
        "baseline:random",
        "--strategy",
        "vanilla",
        "--json",
    )
    rep = report_json(capsys, bench_ws, json.loads(out)["run_id"])
    assert rep["model_calls"] == 60 and rep["overall"]["circular"] is None and rep["strategy"] == "vanilla"


def test_same_command_twice_does_not_run_again(bench_ws, capsys):
    args = ["--workspace", str(bench_ws), "run", "--bench", "b", "--model", "baseline:random", "--json"]
    first = json.loads(run_cli(capsys, *args)[1])["run_id"]
    code, out, err = run_cli(capsys, *args)
    assert code == 0 and json.loads(out)["run_id"] == first and "already finished" in err
    with open_workspace(bench_ws) as ws:
        assert len(runs.list_runs(ws)) == 1


class RecordingBackend(BaselineBackend):
    def __init__(self, reply=None):
        super().__init__("first")
        self.reply, self.seen = reply, []

    def generate(self, queries, max_new_tokens):
        self.seen.extend(queries)
        return [self.reply] * len(queries) if self.reply is not None else super().generate(queries, max_new_tokens)


def _engine(ws, settings, backend, batch_size=4):
    bench = catalog.benchmark_by_name(ws, "b")
    template = default_template(bench.kind)
    run = new_run(ws, bench, backend.spec, settings, template, batch_size=batch_size, backend_info={})
    return Engine(ws, run, backend, batch_size=batch_size)


def test_text_only_withholds_images_and_batches_hold_batch_size(bench_ws):
    with open_workspace(bench_ws) as ws:
        backend = RecordingBackend()
        _engine(ws, RunSettings(strategy="vanilla", text_only=True), backend, batch_size=7).execute()
        assert backend.seen and all(q.images == () for q in backend.seen)
        backend = RecordingBackend()
        _engine(ws, RunSettings(strategy="vanilla", seed=1), backend).execute()
        assert all(len(q.images) == 1 and q.images[0].startswith(b"\x89PNG") for q in backend.seen)


def test_undecided_answers_count_as_wrong_and_are_reported(bench_ws):
    with open_workspace(bench_ws) as ws:
        engine = _engine(ws, RunSettings(), RecordingBackend(reply="Hmm, hard to say."))
        engine.execute()
        rep = run_report(ws, engine.run.id)
        preds = runs.predictions_of(ws, engine.run.id)
    assert all(p.choice is None and p.stage == "none" and p.correct is False for p in preds)
    assert rep.undecided == 60 == rep.mcq.undecided_vanilla and rep.mcq.overall.vanilla == 0.0


def test_items_without_answer_run_every_pass_and_are_not_scored(tmp_path, capsys):
    src = write_jsonl_bench(tmp_path / "t.jsonl", 9, with_answers=False)
    ws_path = tmp_path / "ws.sqlite"
    with open_workspace(ws_path) as ws:
        import_benchmark(ws, src, fmt="jsonl", name="t")
    _, out, _ = run_cli(
        capsys, "--workspace", str(ws_path), "run", "--bench", "t", "--model", "baseline:first", "--json"
    )
    rep = report_json(capsys, ws_path, json.loads(out)["run_id"])
    assert rep["model_calls"] == 3 * (2 + 3 + 4)  # no early termination without an answer key
    assert rep["unscored_questions"] == 9 and rep["overall"]["vanilla"] is None


def test_custom_prompt_template_is_used_and_stored(bench_ws, tmp_path, capsys):
    tpl = tmp_path / "tpl.txt"
    tpl.write_text("Q: {question}\n{options}\nPick one of {letters}.")
    _, out, _ = run_cli(
        capsys,
        "--workspace",
        str(bench_ws),
        "run",
        "--bench",
        "b",
        "--model",
        "baseline:first",
        "--prompt-template",
        str(tpl),
        "--limit",
        "3",
        "--json",
    )
    run_id = json.loads(out)["run_id"]
    with open_workspace(bench_ws) as ws:
        run = runs.get_run(ws, run_id)
        first = runs.predictions_of(ws, run_id)[0]
    assert json.loads(run.prompt_template)["en"] == tpl.read_text()
    assert first.prompt.startswith("Q: Which is item") and first.prompt.endswith("Pick one of A, B.")
    bad = tmp_path / "bad.txt"
    bad.write_text("Q: {question} {nonsense}")
    code, _, err = run_cli(
        capsys,
        "--workspace",
        str(bench_ws),
        "run",
        "--bench",
        "b",
        "--model",
        "baseline:first",
        "--prompt-template",
        str(bad),
    )
    assert code == 2 and "nonsense" in err


def test_bad_model_spec_and_unknown_benchmark_are_one_line_errors(bench_ws, capsys):
    code, _, err = run_cli(capsys, "--workspace", str(bench_ws), "run", "--bench", "b", "--model", "nope:x")
    assert code == 2 and err.startswith("error: unknown model spec scheme") and err.count("\n") == 1
    code, _, err = run_cli(capsys, "--workspace", str(bench_ws), "run", "--bench", "zzz", "--model", "baseline:first")
    assert code == 2 and "no benchmark named 'zzz'" in err


def test_pope_benchmark_runs_one_pass_scored_by_both_parsers(tmp_path, capsys):
    img_dir = tmp_path / "imgs"
    img_dir.mkdir()
    (img_dir / "a.png").write_bytes(png_bytes())
    q = tmp_path / "coco_pope_popular.json"
    q.write_text(
        "".join(
            json.dumps(
                {
                    "question_id": i,
                    "image": "a.png",
                    "text": f"Is there a thing {i}?",
                    "label": "yes" if i % 3 else "no",
                }
            )
            + "\n"
            for i in range(1, 31)
        )
    )
    ws_path = tmp_path / "ws.sqlite"
    assert run_cli(capsys, "--workspace", str(ws_path), "import", str(q), "--images", str(img_dir))[0] == 0
    _, out, _ = run_cli(
        capsys,
        "--workspace",
        str(ws_path),
        "run",
        "--bench",
        "coco-pope-popular",
        "--model",
        "baseline:first",
        "--json",
    )
    rep = report_json(capsys, ws_path, json.loads(out)["run_id"])
    assert rep["strategy"] == "pope" and rep["setting"] == "popular" and rep["model_calls"] == 30
    for parser in ("official", "strict"):  # "Yes" to everything
        m = rep["pope"][parser]
        assert (m["tp"], m["fp"], m["tn"], m["fn"]) == (20, 10, 0, 0)
        assert m["yes_ratio"] == 1.0 and m["recall"] == 1.0 and m["accuracy"] == pytest.approx(20 / 30)


def _cli_env(ws_path):
    return {**os.environ, "VLMDESK_WORKSPACE": str(ws_path)}


@pytest.mark.usefixtures("slow_backend")
@pytest.mark.parametrize("kill_after_lines", [2, 5, 10])
def test_sigkill_at_any_moment_resumes_to_the_uninterrupted_scores(tmp_path, capsys, kill_after_lines):
    src = write_jsonl_bench(tmp_path / "k.jsonl", 80)
    killed, clean = tmp_path / "killed.sqlite", tmp_path / "clean.sqlite"
    for ws_path in (killed, clean):
        with open_workspace(ws_path) as ws:
            import_benchmark(ws, src, fmt="jsonl", name="k")
    cmd = [
        sys.executable,
        "-m",
        "vlmdesk",
        "run",
        "--bench",
        "k",
        "--model",
        "slow:random?delay_ms=15",
        "--seed",
        "3",
        "--batch-size",
        "4",
        "--json-progress",
    ]
    proc = subprocess.Popen(cmd, env=_cli_env(killed), stdout=subprocess.PIPE, text=True)
    for _ in range(kill_after_lines):
        assert proc.stdout.readline()
    time.sleep(0.005 * kill_after_lines)  # land the kill at varying points inside a batch
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with open_workspace(killed) as ws:
        [run] = runs.list_runs(ws)
        stored_before = run.predictions
    # Stored as running, but its owner is dead: shown (and resumable) as interrupted.
    assert run.stored_status == "running" and run.status == "interrupted" and 0 < stored_before
    resumed = subprocess.run(cmd, env=_cli_env(killed), capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    events = [json.loads(line) for line in resumed.stdout.splitlines()]
    assert events[0]["event"] == "start" and events[0]["resumed"] and events[0]["passes_done"] == stored_before
    subprocess.run(cmd, env=_cli_env(clean), capture_output=True, text=True, timeout=120, check=True)
    a, b = report_json(capsys, killed, 1), report_json(capsys, clean, 1)
    for key in ("overall", "by_l2", "by_category", "by_split", "model_calls", "undecided", "questions"):
        assert a[key] == b[key], key
    assert a["status"] == "finished"
    with open_workspace(killed) as ws1, open_workspace(clean) as ws2:
        strip = lambda ps: [(p.item_id, p.pass_, p.response, p.correct) for p in ps]  # noqa: E731
        assert strip(runs.predictions_of(ws1, 1)) == strip(runs.predictions_of(ws2, 1))


@pytest.mark.usefixtures("slow_backend")
def test_sigterm_marks_the_run_interrupted_and_resume_by_id_finishes(bench_ws, capsys):
    cmd = [
        sys.executable,
        "-m",
        "vlmdesk",
        "run",
        "--bench",
        "b",
        "--model",
        "slow:random?delay_ms=20",
        "--batch-size",
        "2",
        "--json-progress",
    ]
    proc = subprocess.Popen(cmd, env=_cli_env(bench_ws), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "vlmdesk run --resume 1" in err
    with open_workspace(bench_ws) as ws:
        assert runs.get_run(ws, 1).status == "interrupted"
    code, out, _ = run_cli(capsys, "--workspace", str(bench_ws), "run", "--resume", "1", "--json")
    assert code == 0 and json.loads(out) == {"run_id": 1}
    assert report_json(capsys, bench_ws, 1)["status"] == "finished"


def test_runs_and_report_commands(bench_ws, capsys, tmp_path):
    run_cli(capsys, "--workspace", str(bench_ws), "run", "--bench", "b", "--model", "baseline:first", "--json")
    run_cli(capsys, "--workspace", str(bench_ws), "run", "--bench", "b", "--model", "baseline:frequent", "--json")
    code, out, _ = run_cli(capsys, "--workspace", str(bench_ws), "runs", "--json")
    listed = json.loads(out)
    assert [r["model"] for r in listed] == ["baseline:first", "baseline:frequent"]
    assert all(r["status"] == "finished" for r in listed)
    code, out, _ = run_cli(capsys, "--workspace", str(bench_ws), "report", "1", "2", "--plot", str(tmp_path / "c.png"))
    assert code == 0 and "Overall" in out and (tmp_path / "c.png").stat().st_size > 10_000
    code, out, _ = run_cli(capsys, "--workspace", str(bench_ws), "report", "1", "2", "--json")
    assert [r["run_id"] for r in json.loads(out)] == [1, 2]


def test_frequent_baseline_answers_the_most_common_label_on_pope(tmp_path, capsys):
    img_dir = tmp_path / "imgs"
    img_dir.mkdir()
    (img_dir / "a.png").write_bytes(png_bytes())
    q = tmp_path / "pope_random.json"
    q.write_text(
        "".join(
            json.dumps(
                {
                    "question_id": i,
                    "image": "a.png",
                    "text": f"Is there a thing {i}?",
                    "label": "no" if i % 4 else "yes",
                }
            )
            + "\n"
            for i in range(1, 21)
        )
    )
    ws_path = tmp_path / "ws.sqlite"
    run_cli(capsys, "--workspace", str(ws_path), "import", str(q), "--images", str(img_dir))
    _, out, _ = run_cli(
        capsys, "--workspace", str(ws_path), "run", "--bench", "pope-random", "--model", "baseline:frequent", "--json"
    )
    m = report_json(capsys, ws_path, json.loads(out)["run_id"])["pope"]["strict"]
    assert m["yes_ratio"] == 0.0 and m["accuracy"] == 15 / 20  # always "No", the majority label


def test_hf_backend_batches_by_the_runs_batch_size(tiny_llava_dir):
    from evaluator.backends import load_backend

    assert load_backend(f"hf:{tiny_llava_dir}", batch_size=3).max_batch_size == 3
    assert load_backend(f"hf:{tiny_llava_dir}?batch_size=5", batch_size=3).max_batch_size == 5


def test_likelihood_on_a_backend_that_cannot_score_is_refused_before_a_run_is_stored(bench_ws, capsys, tmp_path):
    # The openai backend generates but cannot score likelihoods: nothing was asked, so nothing is stored.
    code, _, err = run_cli(
        capsys,
        "--workspace",
        str(bench_ws),
        "run",
        "--bench",
        "b",
        "--model",
        "openai:m@http://127.0.0.1:9/v1",
        "--likelihood",
    )
    assert code == 2 and err.startswith("error: ") and "cannot score likelihoods" in err
    assert err.count("\n") == 1
    with open_workspace(bench_ws) as ws:
        assert runs.list_runs(ws) == []


def test_counts_must_be_positive_and_output_folders_must_exist(bench_ws, capsys, tmp_path):
    for flag in ("--limit", "--batch-size", "--max-new-tokens"):
        with pytest.raises(SystemExit) as exc:
            main(["--workspace", str(bench_ws), "run", "--bench", "b", "--model", "baseline:first", flag, "0"])
        assert exc.value.code == 2 and "must be at least 1" in capsys.readouterr().err
    run_cli(capsys, "--workspace", str(bench_ws), "run", "--bench", "b", "--model", "baseline:first")
    missing = tmp_path / "no-such-folder"
    for args in (
        ["report", "1", "--plot", str(missing / "c.png")],
        ["show", "b", "1", "--image-out", str(missing / "i.png")],
        ["export-predictions", "1", "--out", str(missing / "p.tsv")],
    ):
        code, _, err = run_cli(capsys, "--workspace", str(bench_ws), *args)
        assert code == 2 and err == f"error: {missing}: no such directory\n", args
    assert not missing.exists()


@pytest.mark.usefixtures("slow_backend")
def test_a_closed_progress_pipe_interrupts_the_run(bench_ws):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vlmdesk",
            "run",
            "--bench",
            "b",
            "--model",
            "slow:random?delay_ms=20",
            "--batch-size",
            "2",
            "--json-progress",
        ],
        env=_cli_env(bench_ws),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    proc.stdout.readline()
    proc.stdout.close()  # like `| head -1`
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "output was closed" in err
    with open_workspace(bench_ws) as ws:
        assert runs.get_run(ws, 1).status == "interrupted"


def test_a_run_that_fails_before_asking_anything_is_not_stored(bench_ws, capsys):
    # The extractor model cannot be loaded: the run was claimed but nothing was asked, so nothing stays behind.
    code, _, err = run_cli(
        capsys,
        "--workspace",
        str(bench_ws),
        "run",
        "--bench",
        "b",
        "--model",
        "baseline:first",
        "--extractor",
        "llm:hf:/nonexistent-model-dir",
    )
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1 and "nonexistent-model-dir" in err
    with open_workspace(bench_ws) as ws:
        assert runs.list_runs(ws) == []
