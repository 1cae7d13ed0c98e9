"""Verdicts on open answers (right / partly / wrong): append-only, corrected, withdrawn, blind, merged between copies;
and the statistics of `vlmdesk align open`, each recomputed here independently (scikit-learn, scipy, krippendorff,
the Wilson formula written out)."""

import json
import math
import shutil
import sqlite3

import krippendorff
import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from annotation import open_alignment as oa
from annotation import open_verdicts as ov
from annotation import sync
from db import catalog, runs
from db.workspace import open_workspace
from tests.annotation.test_arena import cli, open_ws  # noqa: F401 (a fixture)

RUNS = [1, 2, 3]


def _bench(ws):
    return catalog.benchmark_by_name(ws, "o")


def test_a_verdict_is_appended_corrected_and_withdrawn_and_never_edited(open_ws):  # noqa: F811
    with open_workspace(open_ws) as ws:
        first = ov.next_task(ws, RUNS, "ana")
        assert first is not None and (first.done, first.total) == (0, 18)
        run_id, item_id = first.unit
        ov.add_verdict(ws, run_id, item_id, "ana", "wrong", seconds=2.5)
        ov.add_verdict(ws, run_id, item_id, "ana", "partly")  # a correction
        assert ov.standing_verdicts(ws, RUNS) == {(run_id, item_id): {"ana": "partly"}}
        withdrawn = ov.undo_verdict(ws, run_id, item_id, "ana")
        assert withdrawn is not None and withdrawn.verdict == "partly"
        # An undo withdraws what stood, so the verdict before the correction stands again (annotation/standing.py);
        # a second undo leaves the answer to judge again.
        assert ov.standing_verdicts(ws, RUNS) == {(run_id, item_id): {"ana": "wrong"}}
        assert ov.undo_verdict(ws, run_id, item_id, "ana").verdict == "wrong"
        assert ov.standing_verdicts(ws, RUNS) == {}
        assert (run_id, item_id) in ov.left_for(ws, RUNS, "ana")
        log = ov.history(ws, run_id, item_id, "ana")
        assert [v.verdict for v in log] == ["wrong", "partly", "undo", "undo"]
        assert log[2].withdraws == withdrawn.uuid
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            ws.conn.execute("UPDATE open_verdicts SET verdict = 'right'")
        ov.add_verdict(ws, run_id, item_id, "ana", "right")
        with pytest.raises(sqlite3.DatabaseError, match="verdicts are kept"):
            ws.conn.execute("DELETE FROM runs WHERE id = ?", (run_id,))
        with pytest.raises(ov.InvalidInput, match="unknown verdict"):
            ov.add_verdict(ws, run_id, item_id, "ana", "maybe")
        with pytest.raises(ov.NotFound, match="no answer"):
            ov.add_verdict(ws, run_id, 10_000, "ana", "right")
        assert len(ov.history(ws, run_id, item_id, "ana")) == 5


def test_the_task_is_blind_and_the_model_shows_only_after_my_verdict(open_ws):  # noqa: F811
    with open_workspace(open_ws) as ws:
        t = ov.next_task(ws, RUNS, "ana")
        assert t is not None
        shown = json.dumps([t.answer, t.item.to_json(), t.done, t.total, t.run_id])
        assert "baseline" not in shown and not hasattr(t, "model")
        ov.add_verdict(ws, *t.unit, "bo", "right")  # another annotator's verdict unlocks nothing for ana
        with pytest.raises(ov.NotJudgedYet):
            ov.reveal_model(ws, *t.unit, "ana")
        ov.add_verdict(ws, *t.unit, "ana", "wrong")
        assert ov.reveal_model(ws, *t.unit, "ana").startswith("baseline:")
        # The next answer is never another answer to the item just judged while other items are left.
        nxt = ov.next_task(ws, RUNS, "ana", after_item=t.item.id)
        assert nxt is not None and nxt.item.id != t.item.id and nxt.done == 1


def test_the_human_label_is_the_adjudication_else_the_majority_and_a_tie_has_none(open_ws):  # noqa: F811
    with open_workspace(open_ws) as ws:
        (a, b, c, d) = ov.queue(ws, RUNS)[:4]
        for who, v in (("ana", "right"), ("bo", "right"), ("cy", "wrong")):
            ov.add_verdict(ws, *a, who, v)
        ov.add_verdict(ws, *b, "ana", "right")
        ov.add_verdict(ws, *b, "bo", "partly")
        ov.add_verdict(ws, *c, "ana", "wrong")
        ov.add_verdict(ws, *c, "bo", "partly")
        ov.add_verdict(ws, *c, "lead", "partly", role="adjudication")
        ov.add_verdict(ws, *d, "bo", "wrong")
        labels = ov.human_labels(ws, RUNS)
        assert labels[a] == ov.HumanLabel("right", "majority")
        assert labels[b] == ov.HumanLabel(None, "tie")
        assert labels[c] == ov.HumanLabel("partly", "adjudicated")
        assert labels[d] == ov.HumanLabel("wrong", "majority")
        ov.undo_verdict(ws, *c, "lead", role="adjudication")
        assert ov.human_labels(ws, RUNS)[c] == ov.HumanLabel(None, "tie")


def test_verdicts_made_on_a_copy_merge_back_once(open_ws, tmp_path, capsys):  # noqa: F811
    copy = tmp_path / "ana.sqlite"
    shutil.copy(open_ws, copy)
    with open_workspace(copy) as ws:
        units = ov.queue(ws, RUNS)[:5]
        for u in units:
            ov.add_verdict(ws, *u, "ana", "right", note="fine")
        ov.undo_verdict(ws, *units[0], "ana")
        ov.add_verdict(ws, *units[0], "ana", "wrong")
    out_file = tmp_path / "ana-open.jsonl"
    code, _, err = cli(capsys, copy, "align", "export-open", "--bench", "o", "--out", str(out_file))
    assert code == 0, err
    lines = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert len(lines) == 7 and set(lines[0]) == {
        "id",
        "benchmark",
        "index",
        "run",
        "answer",
        "role",
        "annotator",
        "verdict",
        "note",
        "seconds",
        "at",
        "withdraws",
    }
    with open_workspace(open_ws) as ws:
        ov.add_verdict(ws, *units[1], "bo", "partly")  # bo worked here meanwhile
    code, out, err = cli(capsys, open_ws, "align", "import-open", str(out_file), "--json")
    assert code == 0, err
    assert json.loads(out)["added"] == 7
    code, out, _ = cli(capsys, open_ws, "align", "import-open", str(out_file), "--json")
    assert json.loads(out)["added"] == 0 and json.loads(out)["present"] == 7
    with open_workspace(open_ws) as ws, open_workspace(copy) as there:
        assert ov.standing_verdicts(ws, RUNS, annotator="ana") == ov.standing_verdicts(there, RUNS)
        assert ov.standing_verdicts(ws, RUNS)[units[1]] == {"ana": "right", "bo": "partly"}
    # A verdict on an answer this copy's runs never gave is one line of error, and nothing is written.
    stranger = dict(lines[1], id="00000000-0000-4000-8000-000000000000", answer="0" * 64)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(stranger) + "\n")
    code, _, err = cli(capsys, open_ws, "align", "import-open", str(bad))
    assert code == 2 and err.startswith(f"error: {bad}:1: answer: no run of config")
    assert "open" in sync.KINDS


# ------------------------------------------------------------------------------------------------ statistics
def _wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def _data(seed: int, n: int = 60):
    rng = np.random.default_rng(seed)
    human = {u: ["wrong", "partly", "right"][int(rng.integers(0, 3))] for u in range(n)}
    scores = {u: float(np.clip(oa.RANK[h] / 2 + rng.normal(0, 0.3), 0, 1)) for u, h in human.items()}
    return human, {u: round(s, 2) for u, s in scores.items()}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_metrics_agreement_equals_sklearn_scipy_and_the_wilson_formula(seed):
    human, scores = _data(seed)
    m = oa.metric_agreement(human, scores, resamples=300, seed=seed)
    units = list(human)
    truth = [human[u] == "right" for u in units]
    values = [scores[u] for u in units]
    # The threshold: brute force over every distinct score, the lowest of the best.
    candidates = [*sorted(set(values)), math.inf]  # inf: no answer counts as right
    accuracy = {t: np.mean([(v >= t) == r for v, r in zip(values, truth)]) for t in candidates}
    best = max(accuracy.values())
    chosen = min(t for t, a in accuracy.items() if a == best)
    assert m.threshold == (None if chosen == math.inf else chosen)
    assert m.n == len(units) and m.accuracy == pytest.approx(best, abs=1e-12)
    said = [v >= chosen for v in values]
    assert m.cohen_kappa == pytest.approx(cohen_kappa_score(truth, said), abs=1e-12)
    k = round(best * len(units))
    assert m.wilson_95 == pytest.approx(_wilson(k, len(units)), abs=1e-9)
    ranks = [{"wrong": 0, "partly": 1, "right": 2}[human[u]] for u in units]
    assert m.spearman == pytest.approx(spearmanr(values, ranks).statistic, abs=1e-12)
    # The bootstrap, recomputed: the same seeded draws, κ of each resample by scikit-learn.
    idx = np.random.default_rng(seed).integers(0, len(units), size=(300, len(units)))
    kappas = []
    for row in idx:
        a, b = [truth[i] for i in row], [said[i] for i in row]
        if len(set(a) | set(b)) > 1:
            kappas.append(cohen_kappa_score(a, b))
    assert m.kappa_95 == pytest.approx(tuple(np.percentile(kappas, [2.5, 97.5])), abs=1e-9)
    assert m.bootstrap_undefined == 300 - len(kappas)


def test_the_annotators_own_kappa_and_alpha_equal_sklearn_and_krippendorff():
    rng = np.random.default_rng(5)
    verdicts: dict[int, dict[str, str]] = {}
    for u in range(40):
        v = ["right", "partly", "wrong"][int(rng.integers(0, 3))]
        other = v if rng.random() < 0.7 else ["right", "partly", "wrong"][int(rng.integers(0, 3))]
        verdicts[u] = {"ana": v, "bo": other} if u < 35 else {"ana": v}
    got = oa.annotator_agreement(verdicts)
    both = [u for u in verdicts if len(verdicts[u]) == 2]
    assert got.cohen_kappa == pytest.approx(
        cohen_kappa_score([verdicts[u]["ana"] for u in both], [verdicts[u]["bo"] for u in both]), abs=1e-12
    )
    code = {"partly": 0, "right": 1, "wrong": 2}
    data = np.array(
        [[code[verdicts[u][a]] if a in verdicts[u] else np.nan for u in verdicts] for a in ("ana", "bo")], dtype=float
    )
    assert got.krippendorff_alpha == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"), abs=1e-12
    )
    assert got.answers_with_two_or_more == 35


def test_undefined_figures_are_none():
    m = oa.metric_agreement({1: "right", 2: "right"}, {1: 0.5, 2: 0.5}, resamples=50)
    assert (m.n, m.threshold, m.accuracy, m.cohen_kappa, m.spearman) == (2, 0.5, 1.0, None, None)
    assert m.kappa_95 is None and m.bootstrap_undefined == 50
    # Every answer wrong and one score everywhere: the best rule is that no answer counts as right (threshold None).
    never = oa.metric_agreement({1: "wrong", 2: "partly"}, {1: 0.0, 2: 0.0}, resamples=50)
    assert (never.threshold, never.accuracy) == (None, 1.0)
    empty = oa.metric_agreement({1: "right"}, {}, resamples=50)
    assert (empty.n, empty.threshold, empty.accuracy, empty.wilson_95, empty.kappa_95) == (0, None, None, None, None)


def test_align_open_reports_each_metric_against_the_human_labels(open_ws, capsys, tmp_path):  # noqa: F811
    with open_workspace(open_ws) as ws:
        bench = _bench(ws)
        for u in ov.queue(ws, RUNS):
            answer = ov.task(ws, RUNS, u, "ana").answer
            good = u[0] == 1 or u[1] % 2 == 0
            ov.add_verdict(ws, *u, "ana", "right" if good else "wrong")
            ov.add_verdict(ws, *u, "bo", "right" if good or len(answer) % 3 == 0 else "partly")

        def scores_of(ws, run_id):
            items = [i.id for i in runs.items_of(ws, runs.get_run(ws, run_id))]
            return {
                "word_match": {i: float(run_id == 1 or i % 2 == 0) for i in items},
                "cider": {i: 0.1 for i in items},
            }

        report = oa.open_alignment(ws, bench, RUNS, scores_of, resamples=200, seed=3)
    assert report.answers == 18 and report.judged == 18 and report.progress == {"ana": 18, "bo": 18}
    wm = report.metrics["word_match"]
    decided = report.labels["right"] + report.labels["partly"] + report.labels["wrong"]
    assert wm.n == decided and report.ties == 18 - decided
    assert report.metrics["cider"].cohen_kappa is None  # one score everywhere: κ undefined, never NaN
    split = [(run, item) for run, item, v, adjudicated in report.disagreements]
    assert len(split) == report.ties and all(v["ana"] != v["bo"] for _, _, v, _ in report.disagreements)
    assert json.loads(json.dumps(report.to_json()))["metrics"]["word_match"]["threshold"] == wm.threshold


def test_align_open_reads_the_stored_metric_scores(open_ws, capsys):  # noqa: F811
    from evaluator.scoring.open_metrics import item_scores

    with open_workspace(open_ws) as ws:
        for u in ov.queue(ws, RUNS):
            t = ov.task(ws, RUNS, u, "ana")
            good = bool(t.item.references) and t.item.references[0].lower() in t.answer.lower()
            ov.add_verdict(ws, *u, "ana", "right" if good else ("partly" if u[0] == 2 else "wrong"))
        expected = {
            name: oa.metric_agreement(
                {u: h.verdict for u, h in sorted(ov.human_labels(ws, RUNS).items())},
                {(r, i): s for r in RUNS for i, s in item_scores(ws, r).get(name, {}).items()},
                resamples=100,
                seed=4,
            ).to_json()
            for name in ("exact_match", "word_match", "anls", "cider")  # no item has 4 references: no vqa_accuracy
        }
    code, out, err = cli(
        capsys,
        open_ws,
        "align",
        "open",
        "--bench",
        "o",
        "--runs",
        "1,2,3",
        "--bootstrap",
        "100",
        "--seed",
        "4",
        "--json",
    )
    assert code == 0, err
    found = json.loads(out)
    assert found["metrics"] == expected and found["progress"] == {"ana": 18}
    assert found["metrics"]["word_match"]["n"] == 9  # answers to the three items with a reference
    code, out, _ = cli(capsys, open_ws, "align", "open", "--bench", "o", "--runs", "1,2,3")
    assert code == 0 and "word_match" in out and "threshold" in out and "rule: human label" in out
    assert found["disagreements"] == [] and "to adjudicate" not in out  # one annotator: nothing to settle
    code, _, err = cli(capsys, open_ws, "align", "open", "--bench", "o", "--runs", "1,99")
    assert code == 2 and "no run 99" in err


def test_check_names_verdicts_whose_answer_is_gone(open_ws):  # noqa: F811
    from db.check import check_workspace

    with open_workspace(open_ws) as ws:
        unit = ov.queue(ws, RUNS)[0]
        ov.add_verdict(ws, *unit, "ana", "right")
        ov.add_verdict(ws, *unit, "bo", "wrong")
    assert all(r.ok for r in check_workspace(open_ws).results)
    with open_workspace(open_ws) as ws, ws.db.atomic():
        ws.conn.execute("DELETE FROM predictions WHERE run_id = ? AND item_id = ?", unit)
    found = {r.name: r for r in check_workspace(open_ws).results}
    assert found["open_verdicts"].problems == [
        f"run {unit[0]} item {unit[1]}: 2 verdict(s) on an answer that is not stored"
    ]


@pytest.mark.parametrize(
    ("change", "field", "what"),
    [
        ({"verdict": "maybe"}, "verdict", "unknown verdict 'maybe'"),
        ({"role": "boss"}, "role", "unknown role 'boss'"),
        ({"verdict": "undo"}, "withdraws", "an undo names the record it withdraws"),
        ({"run": "no-such-config"}, "answer", "no run of config 'no-such-config'"),
        ({"index": 999}, "index", "has no item with index 999"),
        ({"annotator": "a\u202eb"}, "annotator", ""),
        ({"extra": 1}, "extra", "unknown field"),
    ],
)
def test_a_bad_open_verdict_line_is_one_error_and_nothing_is_written(open_ws, tmp_path, change, field, what):  # noqa: F811
    with open_workspace(open_ws) as ws:
        ov.add_verdict(ws, *ov.queue(ws, RUNS)[0], "ana", "right")
        (good,) = list(sync.export_records(ws, "open"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps(good) + "\n" + json.dumps({**good, "id": "00000000-0000-4000-8000-000000000001", **change}) + "\n"
    )
    with open_workspace(open_ws) as ws:
        with pytest.raises(sync.InputError) as caught:
            sync.import_records(ws, bad, "open")
        assert (caught.value.line, caught.value.field) == (2, field) and what in caught.value.what
        assert ws.conn.execute("SELECT count(*) FROM open_verdicts").fetchone()[0] == 1


def test_migration_0018_upgrades_an_older_workspace(tmp_path):
    from sqlite_utils import Database

    from db import schema

    path = tmp_path / "old.sqlite"
    db = Database(str(path))
    schema.migrations.apply(db, stop_before="0018_open_verdicts")
    db.execute(f"PRAGMA user_version = {schema.migration_names().index('0018_open_verdicts')}")
    db.conn.commit()
    db.close()
    with open_workspace(path) as ws:
        assert ws.schema_version() == schema.latest_version()
        assert ws.conn.execute("SELECT count(*) FROM open_verdicts").fetchone()[0] == 0


def test_open_verdict_records_withdraws_and_adjudicates_from_the_command_line(open_ws, capsys):  # noqa: F811
    with open_workspace(open_ws) as ws:
        run_id, item_id = ov.queue(ws, RUNS)[0]
    base = ["align", "open-verdict", "--run", str(run_id), "--item", str(item_id)]
    assert cli(capsys, open_ws, *base, "--verdict", "right", "--annotator", "ana")[0] == 0
    assert cli(capsys, open_ws, *base, "--verdict", "wrong", "--annotator", "bo", "--note", "no")[0] == 0
    code, out, _ = cli(capsys, open_ws, "align", "open", "--bench", "o", "--runs", "1,2,3", "--bootstrap", "100")
    assert code == 0 and "1 disagreement(s) to adjudicate" in out
    code, out, _ = cli(capsys, open_ws, *base, "--verdict", "partly", "--annotator", "lead", "--adjudicate")
    assert code == 0 and "partly saved" in out
    code, out, _ = cli(capsys, open_ws, "align", "open", "--bench", "o", "--runs", "1,2,3", "--json")
    found = json.loads(out)
    assert found["adjudicated"] == 1 and found["labels"]["partly"] == 1 and found["ties"] == 0
    assert found["disagreements"] == [
        {"run": run_id, "item_id": item_id, "verdicts": {"ana": "right", "bo": "wrong"}, "adjudicated": "partly"}
    ]
    code, out, _ = cli(capsys, open_ws, *base, "--verdict", "undo", "--annotator", "lead", "--adjudicate")
    assert code == 0 and out.startswith("withdrew partly")
    code, out, _ = cli(capsys, open_ws, *base, "--verdict", "undo", "--annotator", "lead", "--adjudicate")
    assert code == 0 and out.startswith("nothing of yours")
    code, _, err = cli(capsys, open_ws, "align", "open-verdict", "--run", str(run_id), "--item", "99999",
                       "--verdict", "right", "--annotator", "ana")  # fmt: skip
    assert code == 2 and "has no answer to item 99999" in err
