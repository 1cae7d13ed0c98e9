"""The alignment study: set building, blind labelling (API and terminal loop), final labels, figures, statistics."""

from __future__ import annotations

import io
import json
import math
import sqlite3
import sys

import pytest

from annotation import agreement
from annotation.alignment import (
    FinalCounts,
    LabelTask,
    NotLabelledYet,
    add_label,
    adjudicate,
    alignment_report,
    build_set,
    disagreements,
    final_labels,
    next_for,
    reveal,
    standing_labels,
)
from db import open_workspace, runs
from db.catalog import benchmark_by_name, list_items
from evaluator.formats.importers import import_benchmark
from evaluator.scoring.extraction import Extraction
from tests.factories import png_bytes
from vlmdesk.cli import main

OPTIONS = ["cat", "dog", "bird"]
# Pass-0 responses of run 1 per item, and what the rules read in them.
RESPONSES = ["B", "It is a dog.", "hmm", "A or B", "C", "A", "The answer is A", "bird", "(C)", "cat"]
RULES = ["B", "B", None, None, "C", "A", "A", "C", "C", "A"]


class SaysA:
    """A stand-in for a second extractor: always A."""

    name = "says-a"

    def extract_many(self, inputs):
        return [Extraction("A", "llm", "always A") for _ in inputs]


def _run(ws, bench_id, responses, extractor="rules") -> int:
    run_id = runs.create_run(
        ws,
        benchmark_id=bench_id,
        model_spec="test:model",
        strategy="vanilla",
        prompt_template="{}",
        extractor=extractor,
        config={},
        config_key=f"k{len(responses)}" + str(responses[1]),
        versions={},
        git_revision=None,
        seed=0,
    )
    items = list_items(ws, bench_id)
    runs.add_predictions(
        ws,
        [
            runs.Prediction(run_id, item.id, 0, (0, 1, 2), "prompt", r, item.answer, None, "none", None, None, 1.0)
            for item, r in zip(items, responses)
        ],
    )
    return run_id


@pytest.fixture
def study(tmp_path):
    (tmp_path / "img.png").write_bytes(png_bytes())
    with open(tmp_path / "b.jsonl", "w") as f:
        for i in range(len(RESPONSES)):
            f.write(
                json.dumps({"index": i, "question": f"Q{i}?", "image": "img.png", "options": OPTIONS, "answer": "A"})
                + "\n"
            )
    ws_path = tmp_path / "ws.sqlite"
    with open_workspace(ws_path) as ws:
        import_benchmark(ws, tmp_path / "b.jsonl", fmt="jsonl", name="b")
        bench_id = benchmark_by_name(ws, "b").id
        first = _run(ws, bench_id, RESPONSES)
        second = _run(ws, bench_id, RESPONSES[:1] + ["dog"] + RESPONSES[2:])  # item 1 answered differently
        yield ws, ws_path, (first, second)


# ---- building a set -------------------------------------------------------------------------------------


def test_set_holds_disagreements_undecided_and_a_seeded_sample_deduplicated(study):
    ws, _, (first, second) = study
    s = build_set(ws, "s1", [first, second], [SaysA()], size=2, seed=7)
    rows = ws.conn.execute("SELECT response, why, sources FROM adjudication_items ORDER BY position").fetchall()
    by_response = {r[0]: (r[1], json.loads(r[2])) for r in rows}
    # 11 distinct responses (10 of run 1, plus "dog"); rules undecided on 2; rules ≠ "A" on 6 more; 3 agree.
    assert {r for r, (why, _) in by_response.items() if why == "undecided"} == {"hmm", "A or B"}
    assert {r for r, (why, _) in by_response.items() if why == "disagree"} == {
        "B",
        "It is a dog.",
        "C",
        "bird",
        "(C)",
        "dog",
    }
    sampled = {r for r, (why, _) in by_response.items() if why == "sample"}
    assert len(sampled) == 2 and sampled <= {"A", "The answer is A", "cat"}
    assert s.items == 10 and s.by_why == {"undecided": 2, "disagree": 6, "sample": 2}
    assert s.extractors == ("rules", "says-a")
    # The same (question, options, response) in both runs is one item with two sources.
    assert sorted(src[0] for src in by_response["hmm"][1]) == [first, second]
    # Same seed, same selection and order; the hard cases are not all first.
    again = build_set(ws, "s2", [first, second], [SaysA()], size=2, seed=7)
    rows2 = ws.conn.execute(
        "SELECT response, why FROM adjudication_items WHERE set_id = ? ORDER BY position", (again.id,)
    ).fetchall()
    assert rows2 == [(r[0], r[1]) for r in rows]
    with pytest.raises(ValueError, match="exists already"):
        build_set(ws, "s1", [first], [], size=0, seed=0)


# ---- blindness ------------------------------------------------------------------------------------------


def test_labelling_api_never_exposes_extractor_output_before_the_label(study):
    ws, _, (first, _) = study
    build_set(ws, "s", [first], [SaysA()], size=10, seed=0)
    task = next_for(ws, "s", "ana")
    assert set(LabelTask.__dataclass_fields__) == {
        "item_id",
        "set_name",
        "position",
        "question",
        "options",
        "response",
        "done",
        "total",
    }
    assert (task.done, task.total, task.position) == (0, 10, 0)
    with pytest.raises(NotLabelledYet):
        reveal(ws, task.item_id, "ana")
    add_label(ws, task.item_id, "ana", "b", seconds=2.5)
    outputs = reveal(ws, task.item_id, "ana")
    assert set(outputs) == {"rules", "says-a"} and outputs["says-a"].choice == "A"
    with pytest.raises(NotLabelledYet):
        reveal(ws, task.item_id, "bob")  # another annotator's label does not unlock it for bob
    assert next_for(ws, "s", "ana").position == 1 and next_for(ws, "s", "bob").position == 0
    for bad in ("D", "AB", "", "none"):
        with pytest.raises(ValueError):
            add_label(ws, task.item_id, "ana", bad)
    with pytest.raises(ValueError):
        add_label(ws, task.item_id, " ", "A")


class SnapshotStdin(io.TextIOBase):
    """Feeds lines; at each read records what had been printed so far."""

    def __init__(self, lines, stdout):
        self.lines, self.stdout, self.snapshots = list(lines), stdout, []

    def readline(self, *args):
        self.snapshots.append(self.stdout.getvalue())
        return self.lines.pop(0) if self.lines else ""


def test_terminal_loop_commits_first_and_only_then_shows_extractors(study, monkeypatch):
    ws, ws_path, (first, _) = study
    build_set(ws, "s", [first], [SaysA()], size=10, seed=3)
    items = ws.conn.execute("SELECT id, response FROM adjudication_items ORDER BY position").fetchall()
    out = io.StringIO()
    stdin = SnapshotStdin(["x\n", "B\n", "unclear\n", "q\n"], out)
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stdin", stdin)
    assert main(["--workspace", str(ws_path), "align", "label", "--set", "s", "--annotator", "ana"]) == 0
    text = out.getvalue()
    # Before each read, nothing an extractor said about the item on screen had been printed.
    for snap in stdin.snapshots:
        current = snap[snap.rfind("] item ") :]
        assert "rules:" not in current and "says-a:" not in current and "always A" not in current
    assert "not saved" in text
    first_block = text[text.find("] item") : text.find("] item", text.find("] item") + 1)]
    assert first_block.index("saved: B") < first_block.index("says-a: A (always A)")
    labels = ws.conn.execute("SELECT item_id, annotator, choice, seconds FROM labels ORDER BY id").fetchall()
    assert [(row[0], row[2]) for row in labels] == [(items[0][0], "B"), (items[1][0], "unclear")]
    assert all(row[3] is not None and row[3] >= 0 for row in labels)


def test_labels_and_adjudications_are_append_only(study):
    ws, _, (first, _) = study
    build_set(ws, "s", [first], [], size=0, seed=0)
    task = next_for(ws, "s", "ana")
    add_label(ws, task.item_id, "ana", "A")
    adjudicate(ws, task.item_id, "lead", "A")
    for table in ("labels", "adjudications"):
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            ws.conn.execute(f"UPDATE {table} SET choice = 'B'")


# ---- final labels and figures ---------------------------------------------------------------------------


def _label_all(ws, name, annotator, choose):
    while (task := next_for(ws, name, annotator)) is not None:
        add_label(ws, task.item_id, annotator, choose(task))


def test_final_labels_disagreements_adjudication_and_report(study):
    ws, _, (first, _) = study
    build_set(ws, "s", [first], [SaysA()], size=10, seed=1)  # all 10 responses of run 1
    truth = {
        "B": "B",
        "It is a dog.": "B",
        "hmm": "unclear",
        "A or B": "Z",
        "C": "C",
        "A": "A",
        "The answer is A": "A",
        "bird": "C",
        "(C)": "C",
        "cat": "A",
    }
    _label_all(ws, "s", "ana", lambda t: truth[t.response])
    # bob differs on two responses
    _label_all(ws, "s", "bob", lambda t: {"cat": "B", "A or B": "unclear"}.get(t.response, truth[t.response]))
    ids = {r: i for i, r in ws.conn.execute("SELECT id, response FROM adjudication_items")}
    found = disagreements(ws, "s")
    assert {d.item_id for d in found} == {ids["cat"], ids["A or B"]} and all(d.adjudicated is None for d in found)
    finals = final_labels(ws, "s")
    assert finals[ids["cat"]].source == "tie" and finals[ids["cat"]].choice is None
    adjudicate(ws, ids["cat"], "lead", "A", note="the response names the cat")
    _label_all(ws, "s", "cyd", lambda t: truth[t.response])  # a third annotator: majority decides "A or B"
    finals = final_labels(ws, "s")
    assert (finals[ids["cat"]].choice, finals[ids["cat"]].source) == ("A", "adjudicated")
    assert (finals[ids["A or B"]].choice, finals[ids["A or B"]].source) == ("Z", "majority")
    assert finals[ids["hmm"]].choice == "unclear"
    assert standing_labels(ws, "s")[ids["cat"]] == {"ana": "A", "bob": "B", "cyd": "A"}

    rep = alignment_report(ws, "s")
    assert rep.final == FinalCounts(decided=9, unclear=1, ties=0, adjudicated=1)
    rules = rep.extractors["rules"]
    # Rules agree with people on 8 of the 9 readable responses; "A or B" (people: Z) is undecided for the rules.
    assert (rules.overall.n, rules.overall.agreed) == (9, 8)
    assert rules.overall.wilson_95 == pytest.approx(agreement.wilson_interval(8, 9))
    assert rules.confusion.labels == ("A", "B", "C", "Z", "undecided")
    assert rules.confusion.matrix == (
        (3, 0, 0, 0, 0),
        (0, 2, 0, 0, 0),
        (0, 0, 3, 0, 0),
        (0, 0, 0, 0, 1),
        (0, 0, 0, 0, 0),
    )
    says_a = rep.extractors["says-a"]
    assert (says_a.overall.n, says_a.overall.agreed) == (9, 3)
    assert rep.by_why == {"undecided": 2, "disagree": 5, "sample": 3}
    inter = rep.inter_annotator
    assert inter.annotators == ("ana", "bob", "cyd") and inter.items_with_two_or_more == 10
    assert inter.percent_agreement == pytest.approx(0.8) and inter.cohen_kappa is None
    assert inter.krippendorff_alpha == pytest.approx(
        agreement.krippendorff_alpha(list(standing_labels(ws, "s").values()))
    )
    assert {d.item_id for d in rep.disagreements} == {ids["cat"], ids["A or B"]}
    # The JSON users read: the keys in their documented order, the interval a list, the matrix lists of lists.
    out = json.loads(json.dumps(rep.to_json()))
    assert list(out) == [
        "set",
        "runs",
        "seed",
        "sample_size",
        "items",
        "by_why",
        "labelled",
        "progress",
        "final",
        "extractors",
        "inter_annotator",
        "disagreements",
    ]
    assert list(out["extractors"]["rules"]) == [
        "n",
        "agreed",
        "rate",
        "wilson_95",
        "cohen_kappa",
        "confusion",
        "by_why",
    ]
    assert out["extractors"]["rules"]["confusion"]["matrix"][0] == [3, 0, 0, 0, 0]
    assert out["inter_annotator"]["annotators"] == ["ana", "bob", "cyd"]
    assert list(out["disagreements"][0]) == ["item_id", "position", "labels", "adjudicated"]


def test_align_commands(study, capsys):
    ws, ws_path, (first, second) = study
    w = ["--workspace", str(ws_path)]
    assert (
        main(
            [
                *w,
                "align",
                "sample",
                "--run",
                str(first),
                "--run",
                str(second),
                "--size",
                "1",
                "--seed",
                "2",
                "--name",
                "s",
                "--json",
            ]
        )
        == 0
    )
    made = json.loads(capsys.readouterr().out)
    # 11 distinct responses; the rules (the only extractor) leave 2 undecided; 1 of the other 9 sampled.
    assert made["items"] == 3 and made["by_why"] == {"undecided": 2, "disagree": 0, "sample": 1}
    _label_all(ws, "s", "ana", lambda t: "A")
    _label_all(ws, "s", "bob", lambda t: "A" if t.position else "B")
    assert main([*w, "align", "adjudicate", "--set", "s", "--json"]) == 0
    (open_,) = json.loads(capsys.readouterr().out)
    assert open_["labels"] == {"ana": "A", "bob": "B"} and open_["adjudicated"] is None
    assert (
        main(
            [
                *w,
                "align",
                "adjudicate",
                "--set",
                "s",
                "--item",
                str(open_["item_id"]),
                "--label",
                "a",
                "--adjudicator",
                "lead",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main([*w, "align", "report", "--set", "s", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["set"] == "s" and rep["final"]["adjudicated"] == 1 and rep["disagreements"][0]["adjudicated"] == "A"
    # ana A A A, bob B A A: p_o = 2/3, p_e = 1 * 2/3 → κ = 0
    assert rep["inter_annotator"]["cohen_kappa"] == pytest.approx(0.0)
    assert rep["inter_annotator"]["percent_agreement"] == pytest.approx(2 / 3)
    assert main([*w, "align", "report"]) == 0
    text = capsys.readouterr().out
    assert "rules" in text and "Krippendorff" in text
    assert main([*w, "align", "report", "--set", "nope"]) == 2
    assert "no adjudication set" in capsys.readouterr().err
    assert main([*w, "align", "sample", "--run", "99", "--size", "1", "--name", "x"]) == 2
    assert main([*w, "align", "adjudicate", "--set", "s", "--item", "1"]) == 2


# ---- the statistics, by hand and against the libraries --------------------------------------------------


def _wilson(k, n, z=1.959963984540054):
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


@pytest.mark.parametrize(
    "k, n, expected",
    [
        (8, 10, (0.4901625, 0.9433178)),
        (0, 5, (0.0, 0.4344825)),
        (5, 5, (0.5655175, 1.0)),
        (1, 2, (0.0945312, 0.9054688)),
    ],
)
def test_wilson_interval_by_hand(k, n, expected):
    assert agreement.wilson_interval(k, n) == pytest.approx(expected, abs=1e-6)
    assert agreement.wilson_interval(k, n) == pytest.approx(_wilson(k, n), abs=1e-9)
    assert agreement.wilson_interval(0, 0) is None


def test_cohen_kappa_by_hand():
    # p_o = 3/4; p_e = .5*.25 + .5*.75 = .5; κ = (.75 - .5) / .5
    assert agreement.cohen_kappa(list("AABB"), list("ABBB")) == pytest.approx(0.5)
    a2, b2 = list("AAAAABBBCC"), list("AAAABBBACC")
    assert agreement.percent_agreement(a2, b2) == pytest.approx(0.8)
    # marginals a: A5 B3 C2, b: A5 B3 C2 → p_e = .25+.09+.04 = .38; κ = (.8-.38)/.62
    assert agreement.cohen_kappa(a2, b2) == pytest.approx((0.8 - 0.38) / 0.62)
    assert agreement.cohen_kappa(list("AAA"), list("AAA")) is None and agreement.cohen_kappa([], []) is None
    from sklearn.metrics import cohen_kappa_score

    a, b = list("ABCABCABCAZZ"), list("ABCBBCACAAZB")
    assert agreement.cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b))


def test_krippendorff_alpha_by_hand():
    # Units (A,A) (A,B) (B,B) (B,B): o_AB + o_BA = 2 of n = 8 values; n_A = 3, n_B = 5.
    # D_o = 2/8, D_e = 2*3*5 / (8*7); α = 1 - D_o/D_e = 1 - 0.25 / (30/56) = 8/15.
    units = [{"x": "A", "y": "A"}, {"x": "A", "y": "B"}, {"x": "B", "y": "B"}, {"x": "B", "y": "B"}]
    assert agreement.krippendorff_alpha(units) == pytest.approx(8 / 15)
    # A unit with one value carries no pair: it changes nothing.
    assert agreement.krippendorff_alpha(units + [{"z": "A"}]) == pytest.approx(8 / 15)
    # Three raters with a gap: (A,A,A) (B,B,-) (A,B,B): pairs within units, weights 1/(m-1).
    # o_AA = 6/2 = 3, o_BB = 2 + 2/2 = 3, o_AB = o_BA = 2/2 = 1; n = 8, n_A = 4, n_B = 4.
    # D_o = 2/8; D_e = 2*4*4/(8*7) = 32/56; α = 1 - .25*56/32 = 0.5625
    three = [{"x": "A", "y": "A", "z": "A"}, {"x": "B", "y": "B"}, {"x": "A", "y": "B", "z": "B"}]
    assert agreement.krippendorff_alpha(three) == pytest.approx(0.5625)
    assert agreement.krippendorff_alpha([{"x": "A", "y": "A"}]) is None


def test_confusion_matrix_and_percent_agreement_by_hand():
    c = agreement.confusion(["A", "A", "B", "Z", "B"], ["A", "B", "B", "undecided", "B"])
    assert c.labels == ("A", "B", "Z", "undecided")
    assert c.matrix == ((1, 1, 0, 0), (0, 2, 0, 0), (0, 0, 0, 1), (0, 0, 0, 0))
    assert agreement.percent_agreement(list("AB"), list("AC")) == 0.5
    assert agreement.percent_agreement([], []) is None
