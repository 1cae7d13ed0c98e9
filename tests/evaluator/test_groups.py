"""Capability groups: the tag on a benchmark (round trip, names checked at the door, POPE's default, the catalog's),
`vlmdesk report --groups` against figures computed here from the stored predictions, and the radar file."""

from __future__ import annotations

import json
import statistics

import pytest
from PIL import Image

from db import catalog, open_workspace
from db.errors import InvalidInput, NotFound
from evaluator.analysis.groups import GROUPS, benchmark_groups, groups_report, tag_benchmark
from evaluator.analysis.plots import groups_radar_figure
from evaluator.formats.importers import import_benchmark
from evaluator.formats.importers.catalog import BUILTIN, entry_from_json
from tests.evaluator.desiderata_runs import mcq_bench
from vlmdesk.cli import main as cli_main
from vlmdesk.demo import ensure_demo


def _cli(path, *args) -> int:
    return cli_main(["--workspace", str(path), *args])


@pytest.fixture
def demo_path(tmp_path):
    path = tmp_path / "w.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    return path


# --- the tag ---------------------------------------------------------------------------------------------------


def test_tag_round_trip_keeps_the_rest_of_meta_and_order(demo_path):
    with open_workspace(demo_path) as ws:
        before = catalog.benchmark_by_name(ws, "demo-pope").meta
        assert benchmark_groups(catalog.benchmark_by_name(ws, "demo-pope")) == ("hallucination",)  # POPE default
        assert benchmark_groups(catalog.benchmark_by_name(ws, "demo")) == ()
        stored = tag_benchmark(ws, "demo", [" Reasoning", "perception", "reasoning"])
        assert stored == ("perception", "reasoning")  # GROUPS order, each once, case and spaces ignored
        assert benchmark_groups(catalog.benchmark_by_name(ws, "demo")) == stored
        assert tag_benchmark(ws, "demo-pope", []) == ()  # cleared: an empty list is a choice, not the default
        after = catalog.benchmark_by_name(ws, "demo-pope")
        assert benchmark_groups(after) == () and after.meta == {**before, "groups": []}
    with open_workspace(demo_path) as ws:  # stored, not kept in memory
        assert benchmark_groups(catalog.benchmark_by_name(ws, "demo")) == ("perception", "reasoning")


@pytest.mark.parametrize("bad", ["vision", "", "perception;", "hallucinations"])
def test_unknown_group_is_refused_and_nothing_is_written(demo_path, bad):
    with open_workspace(demo_path) as ws:
        tag_benchmark(ws, "demo", ["perception"])
        with pytest.raises(InvalidInput, match="is not a capability group"):
            tag_benchmark(ws, "demo", ["knowledge", bad])
        with pytest.raises(NotFound):
            tag_benchmark(ws, "no-such", ["knowledge"])
        assert benchmark_groups(catalog.benchmark_by_name(ws, "demo")) == ("perception",)


def test_cli_tag_lists_and_refuses_in_one_line(demo_path, capsys):
    assert _cli(demo_path, "benchmarks", "tag", "demo", "--group", "commonsense", "--json") == 0
    assert json.loads(capsys.readouterr().out) == {"name": "demo", "groups": ["commonsense"]}
    assert _cli(demo_path, "benchmarks", "--json") == 0
    listed = {b["name"]: b["groups"] for b in json.loads(capsys.readouterr().out)}
    assert listed == {"demo": ["commonsense"], "demo-pope": ["hallucination"], "demo-open": []}
    assert _cli(demo_path, "benchmarks", "tag", "demo", "--group", "vision") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--group: 'vision' is not a capability group (perception, knowledge" in err
    assert _cli(demo_path, "benchmarks", "tag", "demo") == 2  # neither --group nor --clear
    assert _cli(demo_path, "benchmarks", "tag", "demo", "--clear") == 0
    with open_workspace(demo_path) as ws:
        assert benchmark_groups(catalog.benchmark_by_name(ws, "demo")) == ()


def test_import_stores_given_groups_and_the_catalog_carries_them(tmp_path):
    with open_workspace(tmp_path / "w.sqlite") as ws:
        mcq_bench(ws, tmp_path, name="plain")
        (tmp_path / "sub").mkdir()
        from tests.factories import png_bytes

        (tmp_path / "sub" / "img.png").write_bytes(png_bytes())
        (tmp_path / "sub" / "x.jsonl").write_text(
            json.dumps({"index": 1, "question": "q?", "options": ["a", "b"], "answer": "A", "image": "img.png"}) + "\n"
        )
        import_benchmark(ws, tmp_path / "sub" / "x.jsonl", fmt="jsonl", name="tagged", groups=("reasoning",))
        assert benchmark_groups(catalog.benchmark_by_name(ws, "tagged")) == ("reasoning",)
        assert benchmark_groups(catalog.benchmark_by_name(ws, "plain")) == ()
    by_name = {e.name: e.groups for e in BUILTIN}
    assert by_name["ScienceQA_TEST"] == ("reasoning",) and by_name["POPE"] == ("hallucination",)
    assert by_name["pope_adv"] == ("hallucination",)
    assert by_name["MMBench_DEV_EN"] == () and by_name["SEEDBench_IMG"] == ()  # not in LVLM-eHub: left untagged
    base = {"name": "Mine", "url": "https://example.org/mine.tsv", "checksum": "md5:" + "0" * 32}
    assert entry_from_json({**base, "groups": ["embodied"]}, "cat.json entry 1").groups == ("embodied",)
    with pytest.raises(InvalidInput, match=r"cat.json entry 1: groups: 'robots' is not a capability group"):
        entry_from_json({**base, "groups": ["robots"]}, "cat.json entry 1")
    with pytest.raises(InvalidInput, match="entry 1: groups: a list"):
        entry_from_json({**base, "groups": "embodied"}, "cat.json entry 1")


# --- the report ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """demo (perception, reasoning), b2 (perception), demo-pope (hallucination by default), demo-open (untagged):
    runs of two baselines, with runs that must not count (limited, text-only, vanilla, older)."""
    folder = tmp_path_factory.mktemp("groups")
    path = folder / "w.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
        mcq_bench(ws, folder, n=12, name="b2")
        tag_benchmark(ws, "demo", ["perception", "reasoning"])
        tag_benchmark(ws, "b2", ["perception"])
    runs = [
        ("demo", "baseline:first"),  # 1
        ("demo", "baseline:random"),  # 2: superseded by 8
        ("b2", "baseline:first"),  # 3
        ("demo-pope", "baseline:first"),  # 4
        ("demo-pope", "baseline:random"),  # 5
        ("demo-open", "baseline:first"),  # 6
    ]
    for bench, model in runs:
        assert _cli(path, "run", "--bench", bench, "--model", model) == 0
    assert _cli(path, "run", "--bench", "b2", "--model", "baseline:random", "--limit", "5") == 0  # 7: limited
    assert _cli(path, "run", "--bench", "demo", "--model", "baseline:random", "--seed", "3") == 0  # 8: the latest
    assert _cli(path, "run", "--bench", "b2", "--model", "baseline:random", "--text-only") == 0  # 9: text-only
    assert _cli(path, "run", "--bench", "b2", "--model", "baseline:random", "--strategy", "vanilla") == 0  # 10
    return path


def _circular(ws, run_id: int) -> float:
    """CircularEval accuracy from the stored passes: an item is right when every one of its N rotations is."""
    rows = ws.conn.execute(
        "SELECT i.options, sum(p.correct = 1) FROM items i LEFT JOIN predictions p "
        "ON p.item_id = i.id AND p.run_id = ? WHERE i.benchmark_id = (SELECT benchmark_id FROM runs WHERE id = ?) "
        "GROUP BY i.id",
        (run_id, run_id),
    ).fetchall()
    return sum(1 for options, right in rows if right == len(json.loads(options))) / len(rows)


def _vanilla(ws, run_id: int) -> float:
    rows = ws.conn.execute("SELECT correct FROM predictions WHERE run_id = ? AND pass = 0", (run_id,)).fetchall()
    return sum(1 for (c,) in rows if c == 1) / len(rows)


def _pope(ws, run_id: int) -> tuple[float, float]:
    """F1 (yes positive) and accuracy from the stored choices and the items' answers."""
    rows = ws.conn.execute(
        "SELECT p.choice, i.answer FROM predictions p JOIN items i ON i.id = p.item_id WHERE p.run_id = ?", (run_id,)
    ).fetchall()
    tp = sum(1 for c, a in rows if c == "yes" and a == "yes")
    fp = sum(1 for c, a in rows if c == "yes" and a == "no")
    fn = sum(1 for c, a in rows if c != "yes" and a == "yes")
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    return 2 * precision * recall / (precision + recall), sum(1 for c, a in rows if c == a) / len(rows)


def test_report_groups_equals_the_figures_computed_from_the_passes(study, capsys):
    with open_workspace(study) as ws:
        first_demo, first_b2, rand_demo = _circular(ws, 1), _circular(ws, 3), _circular(ws, 8)
        f1_first, acc_first = _pope(ws, 4)
        f1_rand, _ = _pope(ws, 5)
        vanilla = {r: _vanilla(ws, r) for r in (1, 3, 8, 10)}
    assert _cli(study, "report", "--groups", "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["figures"] == {"mcq": "circular", "yesno": "pope_f1", "open": "word_match"}
    got = {m["model"]: {g["group"]: g for g in m["groups"]} for m in out["models"]}
    first, rand = got["baseline:first"], got["baseline:random"]
    assert first["perception"]["value"] == pytest.approx(statistics.mean([first_demo, first_b2]))
    assert first["perception"]["benchmarks"] == 2
    assert [(e["benchmark"], e["run_id"]) for e in first["perception"]["entries"]] == [("b2", 3), ("demo", 1)]
    assert first["reasoning"]["value"] == pytest.approx(first_demo) and first["reasoning"]["benchmarks"] == 1
    assert first["hallucination"]["value"] == pytest.approx(f1_first)
    assert first["knowledge"] == {"group": "knowledge", "title": GROUPS["knowledge"], "value": None,
                                  "benchmarks": 0, "entries": []}  # fmt: skip
    # baseline:random: demo's latest run (8), not 2; b2's limited (7), text-only (9) and vanilla (10) runs left out
    assert [(e["benchmark"], e["run_id"]) for e in rand["perception"]["entries"]] == [("demo", 8)]
    assert rand["perception"]["value"] == pytest.approx(rand_demo)
    assert rand["hallucination"]["value"] == pytest.approx(f1_rand)
    assert out["untagged_benchmarks"] == ["demo-open"]
    left = {(x["benchmark"], x["model"]): x["why"] for x in out["left_out"]}
    assert "is vanilla" in left[("b2", "baseline:random")]  # the newest of its uncounted runs says why
    # VanillaEval and POPE accuracy instead: run 10 now counts for b2 (the latest finished of 7-10 that counts)
    assert _cli(study, "report", "--groups", "--json", "--mcq-figure", "vanilla", "--pope-figure", "accuracy") == 0
    out = json.loads(capsys.readouterr().out)
    got = {m["model"]: {g["group"]: g for g in m["groups"]} for m in out["models"]}
    assert got["baseline:first"]["perception"]["value"] == pytest.approx(statistics.mean([vanilla[1], vanilla[3]]))
    assert got["baseline:first"]["hallucination"]["value"] == pytest.approx(acc_first)
    rand_b2 = next(e for e in got["baseline:random"]["perception"]["entries"] if e["benchmark"] == "b2")
    assert rand_b2["run_id"] == 10 and rand_b2["value"] == pytest.approx(vanilla[10])


def test_report_groups_of_one_model_text_and_errors(study, capsys):
    assert _cli(study, "report", "--groups", "--model", "baseline:first") == 0
    text = capsys.readouterr().out
    assert "model baseline:first" in text and "baseline:random" not in text
    assert "n=2" in text and "b2 (run 3), demo (run 1)" in text
    assert _cli(study, "report", "--groups", "--model", "hf:nobody") == 2
    assert "no run of model 'hf:nobody'" in capsys.readouterr().err
    assert _cli(study, "report", "--groups", "1") == 2
    assert _cli(study, "report") == 2
    assert "report needs RUN_ID" in capsys.readouterr().err


def test_radar_file_has_the_six_groups(study, tmp_path, capsys):
    out = tmp_path / "radar.png"
    assert _cli(study, "report", "--groups", "--model", "baseline:first", "--plot", str(out)) == 0
    with Image.open(out) as img:
        img.verify()
        assert img.format == "PNG"
    with open_workspace(study) as ws:
        report = groups_report(ws, model="baseline:first")
    fig = groups_radar_figure(report)
    (ax,) = fig.axes
    assert ax.name == "polar"
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert [label.split("\n(n=")[0].replace("\n", " ") for label in labels] == list(GROUPS.values())
    assert labels[0].endswith("(n=2)") and labels[2].endswith("(n=1)")  # perception: demo and b2; reasoning: demo
    (line,) = ax.get_lines()
    radii = list(line.get_ydata())[:6]
    expected = [0.0 if g.value is None else 100 * g.value for g in report.models[0].groups]
    assert radii == pytest.approx(expected)
    assert "n/a: visual knowledge acquisition, visual commonsense, embodied intelligence" in " ".join(
        t.get_text().replace("\n", " ") for t in ax.get_legend().get_texts()
    )
    assert _cli(study, "report", "--groups", "--plot", str(tmp_path / "radar.txt")) == 2  # bounded output names
    assert not (tmp_path / "radar.txt").exists()


def test_open_benchmark_figure_is_an_open_metrics_run_value(tmp_path, monkeypatch, capsys):
    """A parrot (tests/open_plugins.py) answers 3 of demo-open's 8 questions with their reference word for word and
    the rest "no idea": exact match is 3/8, whatever else the metrics do."""
    from evaluator.registry import PLUGINS_ENV

    monkeypatch.setenv(PLUGINS_ENV, "tests.open_plugins")
    rows = [json.loads(line) for line in open("assets/demo/demo_open.jsonl", encoding="utf-8")]
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({r["question"]: r["answer"] for r in rows[:3]}))
    path = tmp_path / "w.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
        tag_benchmark(ws, "demo-open", ["knowledge"])
    assert _cli(path, "run", "--bench", "demo-open", "--model", f"parrot:{answers}") == 0
    capsys.readouterr()
    assert _cli(path, "report", "--groups", "--json", "--open-figure", "exact_match") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["figures"]["open"] == "exact_match"
    (model,) = out["models"]
    knowledge = next(g for g in model["groups"] if g["group"] == "knowledge")
    assert knowledge["value"] == pytest.approx(3 / 8) and knowledge["entries"][0]["metric"] == "exact_match"
    assert _cli(path, "report", "--groups", "--open-figure", "cider") == 2  # its own scale: not averaged
    assert "not an open metric scored as a fraction" in capsys.readouterr().err
