"""Suites of runs from a plan file: `vlmdesk run --plan`, `vlmdesk report --plan` (docs/guide/suites.md)."""

from __future__ import annotations

import collections
import csv
import json
import signal
import sqlite3
import subprocess
import sys
import threading

import pytest

from db import open_workspace, runs
from evaluator.analysis.report import run_report
from evaluator.formats import plan_file
from evaluator.formats.importers.common import InputError
from evaluator.formats.plan_file import parse_plan
from tests.servers import FaultServer
from vlmdesk.cli import main
from vlmdesk.demo import ensure_demo

BENCHES = ("demo", "demo-pope", "demo-open")


def cli(capsys, *args) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def demo_path(tmp_path):
    path = tmp_path / "w.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    return path


def stored(path) -> tuple[int, int]:
    """(runs, passes) in the workspace."""
    con = sqlite3.connect(path)
    try:
        return con.execute("SELECT count(*) FROM runs").fetchone()[0], con.execute(
            "SELECT count(*) FROM predictions"
        ).fetchone()[0]
    finally:
        con.close()


GOOD_TOML = """\
# a suite
[settings]
max-new-tokens = 16

[[model]]
spec = "baseline:first"
name = "First"

[[model]]
spec = "baseline:random"
[model.settings]
seed = 3

[[benchmark]]
name = "demo"
[benchmark.settings]
strategy = "vanilla"

[[benchmark]]
name = "demo-pope"
"""

GOOD_YAML = """\
settings:
  max_new_tokens: 16
models:
  - spec: baseline:first
    name: First
  - spec: baseline:random
    settings:
      seed: 3
benchmarks:
  - name: demo
    settings:
      strategy: vanilla
  - demo-pope
"""


def test_a_plan_expands_to_each_model_on_each_benchmark_with_settings_plan_then_benchmark_then_model(demo_path):
    from vlmdesk.cmd_plan import check_plan

    for name, text in (("s.toml", GOOD_TOML), ("s.yaml", GOOD_YAML)):
        plan = parse_plan(text, name)
        with open_workspace(demo_path) as ws:
            planned = check_plan(ws, plan)
        assert [p.argv for p in planned] == [
            ("--bench", "demo", "--model", "baseline:first", "--max-new-tokens", "16", "--strategy", "vanilla"),
            ("--bench", "demo-pope", "--model", "baseline:first", "--max-new-tokens", "16"),
            ("--bench", "demo", "--model", "baseline:random", "--max-new-tokens", "16", "--strategy", "vanilla",
             "--seed", "3"),
            ("--bench", "demo-pope", "--model", "baseline:random", "--max-new-tokens", "16", "--seed", "3"),
        ], name  # fmt: skip
        assert [p.entry.model.label for p in planned] == ["First", "First", "baseline:random", "baseline:random"]
        assert planned[2].asked.settings.seed == 3 and planned[0].asked.settings.strategy == "vanilla"


def test_overrides_lists_and_switches_become_flags(demo_path):
    from vlmdesk.cmd_plan import check_plan

    text = """\
[settings]
strategy = "vanilla"
text_only = true
full-passes = false
corrupt = ["image:gaussian_noise:3", "text:mild_mix"]

[[model]]
spec = "baseline:first"
[model.settings]
strategy = "circular"

[[benchmark]]
name = "demo"
[benchmark.settings]
strategy = "vanilla"
limit = 5
"""
    with open_workspace(demo_path) as ws:
        [p] = check_plan(ws, parse_plan(text, "p.toml"))
    # The model's strategy wins over the benchmark's, which wins over the plan's; false leaves the flag out.
    assert p.argv == (
        "--bench", "demo", "--model", "baseline:first", "--strategy", "circular", "--text-only",
        "--corrupt", "image:gaussian_noise:3", "--corrupt", "text:mild_mix", "--limit", "5",
    )  # fmt: skip
    assert p.args.strategy == "circular" and p.args.limit == 5 and p.asked.settings.text_only


BAD_TOML = [
    # (what is wrong, the text, the line, the field, words of the message)
    (
        "unknown key",
        GOOD_TOML.replace("seed = 3", "temprature = 3"),
        12,
        "model[2].settings.temprature",
        "not a vlmdesk run option",
    ),
    ("a close key", GOOD_TOML.replace("seed = 3", "sed = 3"), 12, "model[2].settings.sed", "did you mean seed?"),
    (
        "wrong type",
        GOOD_TOML.replace("max-new-tokens = 16", 'max-new-tokens = "lots"'),
        3,
        "settings.max-new-tokens",
        "--max-new-tokens",
    ),
    ("a switch given a value", GOOD_TOML.replace("seed = 3", "cot = 3"), 12, "model[2].settings.cot", "a switch"),
    ("a value given true", GOOD_TOML.replace("seed = 3", "seed = true"), 12, "model[2].settings.seed", "a value"),
    (
        "a choice out of its list",
        GOOD_TOML.replace('strategy = "vanilla"', 'strategy = "spiral"'),
        17,
        "benchmark[1].settings.strategy",
        "not one of circular, vanilla",
    ),
    (
        "unknown benchmark",
        GOOD_TOML.replace('name = "demo-pope"', 'name = "nope"'),
        20,
        "benchmark[2].name",
        "no benchmark named 'nope'",
    ),
    (
        "bad model spec",
        GOOD_TOML.replace('spec = "baseline:random"', 'spec = "baseline:psychic"'),
        10,
        "model[2].spec",
        "psychic",
    ),
    (
        "a command option",
        GOOD_TOML.replace("seed = 3", "resume = 3"),
        12,
        "model[2].settings.resume",
        "say what to run",
    ),
    ("TOML syntax", GOOD_TOML.replace("seed = 3", "seed = = 3"), 12, "syntax", "not TOML"),
    ("no benchmarks", GOOD_TOML.split("[[benchmark]]")[0], 0, "benchmark", "names no benchmark"),
    ("a model without spec", GOOD_TOML.replace('spec = "baseline:first"\n', ""), 5, "model[1]", "needs spec"),
    ("a model named twice", GOOD_TOML.replace('spec = "baseline:random"', 'spec = "First"'), 9, "model[2]", "twice"),
    (
        "settings that do not go together",
        GOOD_TOML.replace("seed = 3", "rounds = 2"),
        12,
        "model[2].settings.rounds",
        "--rounds needs --multi-turn",
    ),
]

BAD_TOML.append(
    ("samples without sampling", GOOD_TOML.replace("seed = 3", "samples = 4"), 12, "model[2].settings.samples",
     "--samples 4 needs sampling")
)  # fmt: skip

BAD_YAML = [
    ("unknown key", GOOD_YAML.replace("seed: 3", "temprature: 3"), 8, "models[2].settings.temprature", "not a vlmdesk"),
    (
        "wrong type",
        GOOD_YAML.replace("max_new_tokens: 16", "max_new_tokens: lots"),
        2,
        "settings.max_new_tokens",
        "not a number",
    ),
    ("unknown benchmark", GOOD_YAML.replace("- demo-pope", "- nope"), 13, "benchmarks[2]", "no benchmark named"),
    ("bad model spec", GOOD_YAML.replace("spec: baseline:random", "spec: 'zz:1'"), 6, "models[2].spec", "zz"),
    ("YAML syntax", GOOD_YAML.replace("seed: 3", "seed: [3"), 9, "syntax", "not YAML"),
    (
        "an alias",
        "settings: &s {max_new_tokens: 16}\nmodels: [baseline:first]\nbenchmarks: [{name: demo, settings: *s}]\n",
        3,
        "benchmarks[1].settings",
        "aliases are not allowed",
    ),
    ("a list as a value", GOOD_YAML.replace("seed: 3", "seed: [1, 2]"), 8, "models[2].settings.seed", "not a list"),
]


@pytest.mark.parametrize(
    ("suffix", "what", "text", "line", "field", "words"),
    [(".toml", *case) for case in BAD_TOML] + [(".yaml", *case) for case in BAD_YAML],
    ids=[f"toml-{c[0]}" for c in BAD_TOML] + [f"yaml-{c[0]}" for c in BAD_YAML],
)
def test_a_bad_plan_is_one_line_naming_file_line_and_field_and_stores_nothing(
    demo_path, tmp_path, capsys, suffix, what, text, line, field, words
):
    plan = tmp_path / f"suite{suffix}"
    plan.write_text(text)
    before = stored(demo_path)
    for command in ("run", "report"):
        code, out, err = cli(capsys, "--workspace", str(demo_path), command, "--plan", str(plan))
        assert code == 2 and out == "", (what, err)
        [message] = err.splitlines()
        where = f"{plan}:{line}: {field}: " if line else f"{plan}: {field}: "
        assert message.startswith(f"error: {where}"), (what, message)
        assert words in message, (what, message)
    assert stored(demo_path) == before


def test_the_line_of_a_key_is_found_within_its_own_table():
    # `strategy` is in [settings] (line 2) and in the second benchmark's table (line 11): the error is at line 11.
    text = """[settings]
strategy = "vanilla"
[[model]]
spec = "baseline:first"
[[benchmark]]
name = "demo"
[benchmark.settings]
limit = 3
[[benchmark]]
name = "demo-pope"
settings = { strategy = "spiral" }
"""
    lines = plan_file._toml_lines(text)
    assert lines[("settings", "strategy")] == 2
    assert lines[("benchmark", 0, "settings", "limit")] == 8
    assert lines[("benchmark", 1, "settings")] == 11
    assert lines[("benchmark", 1, "name")] == 10
    plan = parse_plan(text, "s.toml")
    assert [(s.field, s.line) for s in plan.benchmarks[1].settings] == [("benchmark[2].settings.strategy", 11)]
    assert [(s.field, s.line) for s in plan.benchmarks[0].settings] == [("benchmark[1].settings.limit", 8)]


def test_bounds_on_the_file_and_on_the_runs_it_expands_to(tmp_path, demo_path, capsys):
    big = tmp_path / "big.toml"
    big.write_text(GOOD_TOML + "# " + "x" * plan_file.MAX_BYTES + "\n")
    code, _, err = cli(capsys, "--workspace", str(demo_path), "run", "--plan", str(big))
    assert code == 2 and "limit for a plan file" in err and len(err.splitlines()) == 1
    many = tmp_path / "many.yaml"
    many.write_text(
        "models: [" + ", ".join(f"'baseline:random?x={i}'" for i in range(30)) + "]\n"
        "benchmarks: [" + ", ".join(f"b{i}" for i in range(17)) + "]\n"
    )
    with pytest.raises(InputError, match=r"30 models × 17 benchmarks are 510 runs, over the 500"):
        plan_file.read_plan(many)
    other = tmp_path / "suite.json"
    other.write_text("{}")
    code, _, err = cli(capsys, "--workspace", str(demo_path), "run", "--plan", str(other))
    assert code == 2 and ".toml, .yaml or .yml" in err
    assert stored(demo_path) == (0, 0)


def test_plan_comes_alone(demo_path, tmp_path, capsys):
    plan = tmp_path / "s.toml"
    plan.write_text(GOOD_TOML)
    code, _, err = cli(capsys, "--workspace", str(demo_path), "run", "--plan", str(plan), "--limit", "3")
    assert code == 2 and "leave out --limit" in err


def test_a_rerun_skips_finished_runs_and_report_plan_gives_each_runs_own_figure(demo_path, tmp_path, capsys):
    plan = tmp_path / "s.toml"
    plan.write_text(GOOD_TOML)
    code, _, err = cli(capsys, "--workspace", str(demo_path), "run", "--plan", str(plan))
    assert code == 0, err
    assert stored(demo_path)[0] == 4
    code, out, err = cli(capsys, "--workspace", str(demo_path), "run", "--plan", str(plan), "--json")
    assert code == 0 and stored(demo_path)[0] == 4
    assert [r["outcome"] for r in json.loads(out)["runs"]] == ["skipped"] * 4
    assert "run 1 already finished" in err
    code, out, _ = cli(capsys, "--workspace", str(demo_path), "report", "--plan", str(plan), "--json")
    table = json.loads(out)
    with open_workspace(demo_path) as ws:
        for row in table["rows"]:
            for cell in row["cells"]:
                r = run_report(ws, cell["run_id"])
                own = r.mcq.overall.vanilla if r.mcq is not None else r.pope.pope["official"].f1
                assert cell["score"] == pytest.approx(100 * own)
            assert row["average"] == pytest.approx(sum(c["score"] for c in row["cells"]) / 2)


# ---- end to end: two scripted servers, SIGTERM, rerun --------------------------------------------------------------


class Scripted:
    """A model's answers: a letter for multiple choice, yes (or "some": yes for odd-length prompts) for POPE, words for
    open questions. Each request waits
    for a token of `budget` (a semaphore: the test lets a number through, then holds the rest); `answered` keeps the
    prompt of each request answered, by generation (a request held when its client was killed is not one)."""

    def __init__(self, letter: str, yes: str, words: str, budget: threading.Semaphore, answered: dict):
        self.letter, self.yes, self.words, self.budget, self.answered = letter, yes, words, budget, answered

    def __call__(self, text: str) -> str:
        generation = self.answered["generation"]
        self.budget.acquire()
        if generation == self.answered["generation"]:
            self.answered.setdefault(generation, []).append(text)
        if "Options:" in text:
            return self.letter
        if text.startswith("Is there"):
            return self.yes if self.yes != "some" else ("yes" if len(text) % 2 else "no")
        return self.words


def prompts(path) -> collections.Counter:
    con = sqlite3.connect(path)
    try:
        return collections.Counter(r[0] for r in con.execute("SELECT prompt FROM predictions"))
    finally:
        con.close()


def wait_for(condition, what: str, proc) -> None:
    """Poll until `condition()` (a child that ended first fails the test with its output)."""
    import time

    for _ in range(6000):  # 60 s at most: a bound on a hang, not a timed assertion
        if condition():
            return
        if proc.poll() is not None:
            pytest.fail(f"the plan ended before {what}: {proc.communicate()}")
        time.sleep(0.01)
    pytest.fail(f"never: {what}")


def test_a_plan_of_two_models_on_three_benchmarks_interrupted_and_rerun_asks_only_the_missing_passes(
    demo_path, tmp_path, capsys
):
    budget = threading.Semaphore(60)  # model A's demo run (38 passes) and part of its POPE run, then held
    answered: dict = {"generation": 0}
    a = FaultServer(respond=Scripted("A", "yes", "a cat on a mat", budget, answered))
    b = FaultServer(respond=Scripted("B", "some", "a red sign", budget, answered))
    try:
        plan = tmp_path / "suite.yaml"
        plan.write_text(
            "settings:\n  max_new_tokens: 16\n"
            f"models:\n  - spec: 'openai:m@{a.url}?concurrency=2'\n    name: Model A\n"
            f"  - spec: 'openai:m@{b.url}?concurrency=2'\n    name: Model B\n"
            "benchmarks: [demo, demo-pope, demo-open]\n"
        )
        cmd = [sys.executable, "-m", "vlmdesk", "--workspace", str(demo_path), "run", "--plan", str(plan)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: len(answered.get(0, [])) == 60, "60 answers", proc)
        wait_for(lambda: stored(demo_path)[1] >= 40, "40 stored passes", proc)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert f"continue with: vlmdesk run --plan {plan}" in err
        before = prompts(demo_path)
        asked_first = len(answered[0])
        assert 0 < sum(before.values()) <= asked_first  # answers in flight at the signal may be lost, never more

        code, out, _ = cli(capsys, "--workspace", str(demo_path), "report", "--plan", str(plan), "--json")
        half = json.loads(out)
        statuses = [[c["status"] for c in row["cells"]] for row in half["rows"]]
        assert statuses[0][0] == "finished" and statuses[0][1] == "interrupted" and statuses[1] == ["not run"] * 3
        assert 0 < half["rows"][0]["cells"][1]["progress"] < 1
        assert [row["average"] for row in half["rows"]] == [None, None]  # only over every benchmark finished

        answered["generation"] = 1  # requests held since the kill are answered to nobody: not counted
        budget.release(100_000)
        code, _, err = cli(capsys, "--workspace", str(demo_path), "run", "--plan", str(plan))
        assert code == 0, err
        assert "run 1 already finished" in err
        after = prompts(demo_path)
        # The rerun asked exactly the passes that were missing: per prompt (item, pass and rotation), none twice.
        assert collections.Counter(answered[1]) == after - before
        assert len(answered[1]) == sum(after.values()) - sum(before.values())
        with open_workspace(demo_path) as ws:
            all_runs = runs.list_runs(ws)
            assert [r.status for r in all_runs] == ["finished"] * 6
            assert sum(r.predictions for r in all_runs) == sum(after.values())
    finally:
        budget.release(100_000)
        a.close()
        b.close()

    code, out, _ = cli(capsys, "--workspace", str(demo_path), "report", "--plan", str(plan), "--json")
    table = json.loads(out)
    assert table["benchmarks"] == list(BENCHES) and [r["model"] for r in table["rows"]] == ["Model A", "Model B"]
    with open_workspace(demo_path) as ws:
        for row in table["rows"]:
            for cell in row["cells"]:
                r = run_report(ws, cell["run_id"])
                # The run's own report figure: CircularEval accuracy, POPE F1 (official parser), word match.
                if cell["benchmark"] == "demo":
                    own, ci = r.mcq.overall.circular, r.mcq.overall.circular_ci
                elif cell["benchmark"] == "demo-pope":
                    own, ci = r.pope.pope["official"].f1, r.pope.intervals["official"].f1
                else:
                    own, ci = r.open.metrics["word_match"], r.open.intervals["word_match"]
                assert cell["score"] == pytest.approx(100 * own) and cell["value"] == pytest.approx(own)
                assert cell["interval"]["low"] == pytest.approx(100 * ci.low)
                assert cell["interval"]["high"] == pytest.approx(100 * ci.high)
            scores = [c["score"] for c in row["cells"]]
            assert row["average"] == pytest.approx(sum(scores) / 3)
    # Text and CSV carry the same figures.
    csv_path = tmp_path / "suite.csv"
    code, out, _ = cli(capsys, "--workspace", str(demo_path), "report", "--plan", str(plan), "--csv", str(csv_path))
    assert code == 0
    for row in table["rows"]:
        line = next(x for x in out.splitlines() if x.startswith(row["model"]))
        assert [c["text"] for c in row["cells"]] == [c["text"] for c in row["cells"] if c["text"] in line]
        assert line.rstrip().endswith(f"{row['average']:.1f}")
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * 4
    for row in table["rows"]:
        for cell in row["cells"]:
            [got] = [r for r in rows if r["model"] == row["model"] and r["benchmark"] == cell["benchmark"]]
            assert float(got["score"]) == pytest.approx(cell["score"]) and int(got["run_id"]) == cell["run_id"]
        [avg] = [r for r in rows if r["model"] == row["model"] and r["benchmark"] == "Average"]
        assert float(avg["score"]) == pytest.approx(row["average"])


def test_an_official_figure_goes_on_the_leaderboards_0_to_100_scale():
    # OpenVLM's gen_table.py: OCRBench's score out of 1000 is divided by 10, a percent figure is ×100, points stay.
    from types import SimpleNamespace

    from evaluator.analysis.intervals import Interval
    from evaluator.analysis.report import OfficialFigure
    from evaluator.analysis.suite import _figure

    def official(metric, value, low, high):
        return SimpleNamespace(official=OfficialFigure("B", metric, "score", value, "", {}, Interval(low, high, "x")))

    for metric, value, factor in (("ocrbench_score", 812.0, 0.1), ("mmmu_accuracy", 0.412, 100.0)):
        got_metric, _, is_official, got, interval, got_factor = _figure(official(metric, value, value * 0.9, value))
        assert (got_metric, is_official, got, got_factor) == (metric, True, value, factor)
        assert interval.scaled(got_factor).high == pytest.approx(value * factor)
