"""`desiderata_report` over stored runs: each dimension from hand-made passes, with the numbers worked out here."""

from __future__ import annotations

import math

import pytest

from db import open_workspace, runs
from evaluator.analysis.desiderata import desiderata_report
from tests.evaluator.desiderata_runs import mcq_bench, stored_run

KEYS = list("ABCDABCDAB")  # item i's key: option i mod 4


@pytest.fixture
def ws(tmp_path):
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        yield ws


def test_option_scores_are_stored_and_read_back(ws, tmp_path):
    bench = mcq_bench(ws, tmp_path, n=2)
    run_id = stored_run(ws, bench, ["A", "B"], scores=[[-0.1, -2.0, -3.0, float("-inf")], [-1.0, -0.5, -4.0, -4.0]])
    got = [p.scores for p in runs.predictions_of(ws, run_id)]
    assert got == [(-0.1, -2.0, -3.0, None), (-1.0, -0.5, -4.0, -4.0)]  # -inf is stored as null


def test_calibration_from_stored_scores(ws, tmp_path):
    bench = mcq_bench(ws, tmp_path, n=4)
    # Confidence = softmax max: item 0 and 1 confident and right, item 2 confident and wrong, item 3 unsure.
    p = [math.log(x) for x in (0.7, 0.1, 0.1, 0.1)]
    flat = [math.log(0.25)] * 4
    scores = [p, [p[1], p[0], p[2], p[3]], p, flat]
    run_id = stored_run(ws, bench, ["A", "B", "A", "A"], config={"likelihood": True}, scores=scores)
    report = desiderata_report(ws, [run_id])
    cal = report.models[0].dimensions["calibration"]
    # 4 items, 10 bins: one each. |0.25-1| (item 3: A is its key? no: key D) ...
    # item 3's key is D, chosen A -> wrong with conf .25; item 2's key is C -> wrong with conf .7.
    expected = (abs(0.25 - 0) + abs(0.7 - 1) + abs(0.7 - 1) + abs(0.7 - 0)) / 4
    assert cal.value == pytest.approx(expected)
    assert cal.runs == (run_id,) and cal.entries[0]["n"] == 4 and not cal.missing
    assert report.models[0].dimensions["calibration"].radar == pytest.approx(100 * (1 - expected))


def test_instruction_following_mr_and_accuracy(ws, tmp_path):
    bench = mcq_bench(ws, tmp_path, n=4)
    plain = stored_run(ws, bench, ["A", "B", "D", None])
    natural = stored_run(ws, bench, ["A", "C", "D", None], config={"label_map": "natural:0"})
    neutral = stored_run(ws, bench, ["A", "B", "D", "D"], config={"label_map": "neutral:1"})
    report = desiderata_report(ws, [natural, neutral])
    d = report.models[0].dimensions["instruction_following"]
    by = {e["label_map"]: e for e in d.entries}
    assert by["natural:0"]["plain_run_id"] == plain  # found in the workspace, not given
    assert by["natural:0"]["mr"] == pytest.approx(2 / 4) and by["neutral:1"]["mr"] == pytest.approx(3 / 4)
    assert by["natural:0"]["accuracy"] == pytest.approx(1 / 4) and by["neutral:1"]["accuracy"] == pytest.approx(3 / 4)
    assert d.value == pytest.approx((0.5 + 0.75) / 2) and d.extra["accuracy"] == pytest.approx(0.5)
    commands = [m.command for m in d.missing]
    assert "vlmdesk run --bench b --model hf:m --strategy vanilla --label-map natural:1" in commands
    assert "vlmdesk run --bench b --model hf:m --strategy vanilla --label-map natural:0" not in commands
    assert len(commands) == 4  # natural:1, natural:2, neutral:0, unnatural:0


def test_robustness_rrm_per_kind(ws, tmp_path):
    bench = mcq_bench(ws, tmp_path, n=8)
    plain = stored_run(ws, bench, KEYS[:6] + ["A", "A"])  # 6 of 8 right (items 6, 7 keyed C, D)
    corrupt = {"corrupt": ["image:gaussian_noise:3"]}
    image = stored_run(ws, bench, KEYS[:4] + ["B", "A", "A", "A"], config=corrupt)  # 4 of 8
    report = desiderata_report(ws, [plain, image])
    d = report.models[0].dimensions["robustness"]
    (entry,) = d.entries
    assert entry["plain_run_id"] == plain and entry["kind"] == "image" and entry["acc_random"] == 0.25
    assert entry["rrm"] == pytest.approx((0.5 - 0.25) / (0.75 - 0.25) * 100)
    assert entry["rr"] == pytest.approx(0.5 / 0.75 * 100)
    assert d.extra["by_kind"]["text"]["rrm"] is None
    assert [m.command for m in d.missing] == [
        "vlmdesk run --bench b --model hf:m --strategy vanilla --corrupt text:mild_mix",
        "vlmdesk run --bench b --model hf:m --strategy vanilla --corrupt image:gaussian_noise:3"
        " --corrupt text:mild_mix",
    ]


def test_icl_riam_over_shots(ws, tmp_path):
    bench = mcq_bench(ws, tmp_path, n=4)
    zero = stored_run(ws, bench, ["A", "B", "A", "A"])  # 2 of 4
    one = stored_run(ws, bench, ["A", "B", "C", "A"], config={"shots": 1})  # 3 of 4
    two = stored_run(ws, bench, ["A", "A", "A", "A"], config={"shots": 2})  # 1 of 4
    d = desiderata_report(ws, [zero, one, two]).models[0].dimensions["in_context_learning"]
    (entry,) = d.entries
    assert entry["acc0"] == 0.5 and entry["accuracy"] == {"1": 0.75, "2": 0.25}
    assert d.value == pytest.approx(((0.5 - 0.5) / (0.5 - 0.25)) * 50 + 50)
    assert [m.what for m in d.missing] == ["3-shot run (random) beside run 1"]


def test_nothing_to_compute_says_which_runs_to_start(ws, tmp_path):
    bench = mcq_bench(ws, tmp_path, n=2)
    plain = stored_run(ws, bench, ["A", "B"])
    report = desiderata_report(ws, [plain])
    dims = report.models[0].dimensions
    assert all(d.value is None for d in dims.values())
    assert dims["calibration"].missing[0].command == (  # ChEF's confidence is the default for calibration runs
        "vlmdesk run --bench b --model hf:m --likelihood-score chef --strategy vanilla"
    )
    assert dims["language"].missing[0].command == "vlmdesk run --bench b --model hf:m --cot --max-new-tokens 256"
    assert "pope build" in (dims["hallucination"].missing[0].command or "")
    json_ = report.to_json()
    assert json_["runs"] == [plain] and set(json_["models"][0]) >= {"model", "calibration", "hallucination"}


def test_an_older_workspace_gains_option_scores_and_check_reads_them(tmp_path, capsys):
    from sqlite_utils import Database

    from db import schema
    from vlmdesk.cli import main

    path = tmp_path / "old.sqlite"
    db = Database(str(path))
    schema.migrations.apply(db, stop_before="0011_option_scores")
    db.execute(f"PRAGMA user_version = {len(schema.migrations.applied(db))}")
    db.conn.commit()
    db.close()
    with open_workspace(path) as ws:  # upgraded on open
        assert "scores" in {c.name for c in ws.db["predictions"].columns}
        bench = mcq_bench(ws, tmp_path, n=2)
        stored_run(ws, bench, ["A", "B"], config={"likelihood": True}, scores=[[-1.0, -2, -3, -4], [-2.0, -1, -3, -4]])
        plain = stored_run(ws, bench, ["A", "B"])
        assert all(p.scores is None for p in runs.predictions_of(ws, plain))
    assert main(["--workspace", str(path), "check", "--json"]) == 0
    capsys.readouterr()
    with open_workspace(path) as ws:  # a pass whose scores do not match its options is reported
        ws.conn.execute("UPDATE predictions SET scores = '[1.0]' WHERE run_id = 1 AND pass = 0 AND item_id = 1")
        ws.conn.commit()
    assert main(["--workspace", str(path), "check"]) == 1
    assert "run 1 item 1 pass 0: 1 option scores for 4 shown" in capsys.readouterr().out


def test_figures_of_a_report(ws, tmp_path):
    from db.errors import InvalidInput
    from evaluator.analysis import plots
    from evaluator.analysis.desiderata import DIMENSIONS, TITLES, run_reliability

    bench = mcq_bench(ws, tmp_path, n=8)
    plain = stored_run(ws, bench, KEYS[:8])
    c1 = stored_run(ws, bench, KEYS[:6] + ["A", "A"], config={"corrupt": ["image:gaussian_noise:1"]})
    c5 = stored_run(ws, bench, KEYS[:4] + ["B", "A", "A", "A"], config={"corrupt": ["image:gaussian_noise:5"]})
    lik = stored_run(ws, bench, KEYS[:8], config={"likelihood": True}, scores=[[-1.0, -2.0, -3.0, -4.0]] * 8)
    report = desiderata_report(ws, [plain, c1, c5, lik])
    radar = plots.radar_figure(report)
    assert [t.get_text().replace("\n", " ") for t in radar.axes[0].get_xticklabels()] == [TITLES[d] for d in DIMENSIONS]
    robust = plots.robustness_figure(report)
    heights = sorted(round(p.get_height(), 3) for p in robust.axes[0].patches if p.get_width() > 0)
    assert heights == [round((0.5 - 0.25) / 0.75 * 100, 3), round((0.75 - 0.25) / 0.75 * 100, 3)]
    found = run_reliability(ws, lik)
    assert found is not None and found.n == 8
    for name, fig in (("radar", radar), ("robust", robust), ("rel", plots.reliability_figure(found))):
        assert plots.save_figure(fig, tmp_path / f"{name}.png").stat().st_size > 1000
    with pytest.raises(InvalidInput, match="nothing to draw"):
        plots.robustness_figure(desiderata_report(ws, [plain]))
    assert run_reliability(ws, plain) is None


def test_missing_commands_copy_the_plain_run_the_variants_compare_with(ws, tmp_path):
    bench = mcq_bench(ws, tmp_path, n=4)
    chosen = ["A", "B", "C", "D"]
    likelihood = stored_run(ws, bench, chosen, config={"likelihood": True, "limit": 4})
    plain = stored_run(ws, bench, chosen, config={"limit": 4, "max_new_tokens": 8, "seed": 3, "extractor": "llm:x"})
    mapped = stored_run(
        ws,
        bench,
        chosen,
        config={"limit": 4, "max_new_tokens": 8, "seed": 3, "extractor": "llm:x", "label_map": "natural:0"},
    )
    dims = desiderata_report(ws, [likelihood, plain, mapped]).models[0].dimensions
    same = "--strategy vanilla --limit 4 --max-new-tokens 8 --seed 3 --extractor llm:x"
    commands = [m.command for m in dims["instruction_following"].missing]
    assert commands[0] == f"vlmdesk run --bench b --model hf:m {same} --label-map natural:1"
    assert all(same in c for c in commands + [m.command for m in dims["robustness"].missing])
    # A variant without its plain run: the command starts that plain run, the variant's settings but the variant.
    alone = stored_run(ws, bench, chosen, config={"likelihood": True, "limit": 3, "max_new_tokens": 5, "shots": 2})
    (miss,) = [
        m
        for m in desiderata_report(ws, [alone]).models[0].dimensions["in_context_learning"].missing
        if "plain" in m.what
    ]
    assert (
        miss.command
        == "vlmdesk run --bench b --model hf:m --strategy vanilla --limit 3 --max-new-tokens 5" + " --likelihood"
    )


def test_open_runs_are_left_out_of_the_desiderata(tmp_path):
    from vlmdesk.cli import main as cli_main

    path = tmp_path / "demo.sqlite"
    assert cli_main(["--workspace", str(path), "demo"]) == 0
    for bench in ("demo", "demo-open"):
        assert cli_main(["--workspace", str(path), "run", "--bench", bench, "--model", "baseline:first"]) == 0
    with open_workspace(path) as ws:
        ids = [r.id for r in runs.list_runs(ws)]
        report = desiderata_report(ws, ids)
        text = repr(report)
    assert len(ids) == 2 and "demo-open" not in text  # no suggestion of a likelihood run on an open benchmark
    assert [m.model for m in report.models] == ["baseline:first"]


def test_shot_runs_without_their_plain_run_ask_for_it_and_not_for_themselves(ws, tmp_path):
    bench = mcq_bench(ws, tmp_path, n=2)
    one = stored_run(ws, bench, ["A", "B"], config={"shots": 1})
    d = desiderata_report(ws, [one]).models[0].dimensions["in_context_learning"]
    asked = [m.what for m in d.missing]
    assert not any("1-shot" in w for w in asked), asked  # run 1 exists: it waits for its plain run
    assert any("2-shot" in w for w in asked) and any("3-shot" in w for w in asked)


def test_instruction_following_averages_as_chefs_eval_insfollow(ws, tmp_path):
    """ChEF's six settings over 12 items, its MR and averages computed by tests/chef_reference on ChEF's layout:
    vlmdesk's MR and accuracy are the plain means over the settings, and the mean of type means stands beside."""
    import random

    from tests.chef_reference import insfollow_averages, insfollow_mr

    rng = random.Random(7)
    n = 12
    bench = mcq_bench(ws, tmp_path, n=n)
    options = [[f"thing {i} {j}" for j in range(4)] for i in range(n)]
    plain_chosen = [rng.choice("ABCD") for _ in range(n)]
    plain = stored_run(ws, bench, plain_chosen)

    def layout(chosen):  # ChEF's result JSON: id, options, the chosen option's text
        return [{"id": i, "options": options[i], "answer": options[i]["ABCD".index(c)]} for i, c in enumerate(chosen)]

    settings = {}
    mapped = []
    for (kind, index), keep in {
        ("natural", 0): 0.9,
        ("natural", 1): 0.8,
        ("natural", 2): 0.7,
        ("neutral", 0): 0.3,
        ("neutral", 1): 0.2,
        ("unnatural", 0): 0.1,
    }.items():
        chosen = [c if rng.random() < keep else rng.choice("ABCD") for c in plain_chosen]
        mapped.append(stored_run(ws, bench, chosen, config={"label_map": f"{kind}:{index}"}))
        acc = sum(c == KEYS[i % 4] for i, c in enumerate(chosen)) / n * 100
        settings[(kind, index)] = (acc, insfollow_mr(layout(plain_chosen), layout(chosen)))
    chef_mr, chef_acc = insfollow_averages(settings)

    d = desiderata_report(ws, [plain, *mapped]).models[0].dimensions["instruction_following"]
    assert 100 * d.value == pytest.approx(chef_mr, abs=1e-9)
    assert 100 * d.extra["accuracy"] == pytest.approx(chef_acc, abs=1e-9)
    by_type = {k: [mr for (t, _), (_, mr) in settings.items() if t == k] for k in ("natural", "neutral", "unnatural")}
    type_mean = sum(sum(v) / len(v) for v in by_type.values()) / 3
    assert 100 * d.extra["mr_mean_of_types"] == pytest.approx(type_mean, abs=1e-9)
    assert abs(chef_mr - type_mean) > 1  # the data tells the two averages apart
    assert not d.missing
