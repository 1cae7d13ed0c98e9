"""Judges held against people's votes on arena pairs (annotation/pair_alignment.py, `vlmdesk align pairs`): every
figure recomputed here, independently, from the stored rows — labels by the documented rule, then scikit-learn's
cohen_kappa_score, scipy's binomtest (its Wilson interval and exact p) and spearmanr."""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from annotation import arena
from db.workspace import open_workspace
from tests.factories import png_bytes
from vlmdesk.cli import main

QUALITY = {"m1": 4, "m2": 3, "m3": 2, "m4": 1}  # hidden: the answer's quality, said in its text
ITEMS = 8


def cli(capsys, ws_path, *args) -> tuple[int, str, str]:
    code = main(["--workspace", str(ws_path), *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def quality_of(answer: str) -> int:
    return int(re.search(r"quality (\d)", answer).group(1))


def answers_in(prompt: str) -> tuple[str, str]:
    """The answers A and B of a pairwise judge prompt."""
    a = prompt.split("[The start of answer A]\n", 1)[1].split("\n[The end of answer A]", 1)[0]
    b = prompt.split("[The start of answer B]\n", 1)[1].split("\n[The end of answer B]", 1)[0]
    return a, b


def picture(prompt: str) -> int:
    return int(re.search(r"picture (\d+)", prompt).group(1))


def fair_judge(prompt: str) -> str:
    """Prefers the better answer; equal answers tie; on picture 3 it says both are bad; on picture 5 it prefers
    whatever is shown first (a partial position bias); on picture 7 it never commits (undecided)."""
    a, b = answers_in(prompt)
    n = picture(prompt)
    if n == 7:
        return "Both have merits; hard to say."
    if n == 3:
        return "Neither describes the picture.\n[[D]]"
    if n == 5:
        return "The first one reads better.\n[[A]]"
    qa, qb = quality_of(a), quality_of(b)
    return "My verdict: " + ("[[A]]" if qa > qb else "[[B]]" if qb > qa else "[[C]]")


def first_judge(prompt: str) -> str:
    return "Answer A is better.\n[[A]]"


def make_pairs_ws(tmp_path: Path, serve, capsys, *, items: int = ITEMS, per_item: int = 3) -> Path:
    """A workspace with an open benchmark `o` (`items` items, one image), four finished runs whose answers say their
    quality (runs 1-4: m1 best … m4 worst), `per_item` pairs per item, and two annotators' votes: ana votes for the
    better answer always, ben too except on every fifth pair (he votes the other side, making tied votes)."""
    (tmp_path / "img.png").write_bytes(png_bytes())
    lines = [{"index": i, "question": f"Describe picture {i}.", "image": "img.png"} for i in range(1, items + 1)]
    (tmp_path / "o.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    ws_path = tmp_path / "ws.sqlite"
    assert cli(capsys, ws_path, "import", str(tmp_path / "o.jsonl"), "--name", "o")[0] == 0
    for name, q in QUALITY.items():
        server = serve(respond=lambda text, name=name, q=q: f"{name} says quality {q} of picture {picture(text)}")
        code, _, err = cli(capsys, ws_path, "run", "--bench", "o", "--model", f"openai:{name}@{server.url}?retries=0")
        assert code == 0, err
    code, _, err = cli(
        capsys, ws_path, "arena", "pairs", "--bench", "o", "--runs", "1", "2", "3", "4", "--per-item", str(per_item)
    )
    assert code == 0, err
    with open_workspace(ws_path) as ws:
        for n, pair in enumerate(arena.pairs(ws)):
            shown = arena.shown(ws, pair)
            ql, qr = quality_of(shown.left_answer), quality_of(shown.right_answer)
            better = "left" if ql > qr else "right"
            arena.add_vote(ws, pair.id, "ana", better)
            other = {"left": "right", "right": "left"}[better]
            arena.add_vote(ws, pair.id, "ben", other if n % 5 == 4 else better)
    return ws_path


# ---------------------------------------------------------------------------------------- independent figures
def stored(ws_path: Path, key: str):
    """(pair → left/right model, pair → [votes], pair → {swapped: verdict}) read with plain SQL."""
    with sqlite3.connect(ws_path) as conn:
        models = {
            pid: (a, b)
            for pid, a, b in conn.execute(
                "SELECT p.id, l.model_spec, r.model_spec FROM arena_pairs p JOIN runs l ON l.id = p.left_run_id "
                "JOIN runs r ON r.id = p.right_run_id"
            )
        }
        votes: dict[int, dict[str, str]] = {}
        for pid, who, vote in conn.execute("SELECT pair_id, annotator, vote FROM arena_votes ORDER BY id"):
            votes.setdefault(pid, {})[who] = vote  # no undo in these tests: the newest vote of each annotator
        said: dict[int, dict[int, str | None]] = {}
        for pid, swapped, verdict in conn.execute(
            "SELECT pair_id, swapped, verdict FROM pair_judgements WHERE judge_set = ?", (key,)
        ):
            said.setdefault(pid, {})[swapped] = verdict
    return models, {p: list(v.values()) for p, v in votes.items()}, said


def expected(ws_path: Path, key: str, both_orders: bool):
    from scipy.stats import binomtest, spearmanr
    from sklearn.metrics import cohen_kappa_score

    from evaluator.analysis.ratings import Battle, bradley_terry

    models, votes, said = stored(ws_path, key)
    human = {}
    for p, vs in votes.items():
        top = Counter(vs).most_common()
        if len(top) == 1 or top[0][1] > top[1][1]:
            human[p] = top[0][0]
    judged = {}
    for p, s in said.items():
        if s.get(0) is None or (both_orders and s.get(1) is None):
            continue
        judged[p] = s[0] if not both_orders or s[0] == s[1] else "tie"
    units = sorted(set(human) & set(judged))
    h, j = [human[p] for p in units], [judged[p] for p in units]
    hits = sum(a == b for a, b in zip(h, j))
    sides = [(a, b) for a, b in zip(h, j) if {a, b} <= {"left", "right"}]
    decisive_hits = sum(a == b for a, b in sides)
    firsts = [(v == "left") == (sw == 0) for s in said.values() for sw, v in s.items() if v in ("left", "right")]
    winner = {"left": "model_a", "right": "model_b", "tie": "tie", "bothbad": "tie (bothbad)"}
    jb = [Battle(*models[p], winner[v]) for p, s in said.items() for v in s.values() if v is not None]
    vb = [Battle(*models[p], winner[v]) for p, vs in votes.items() for v in vs]
    rj, rv = bradley_terry(jb), bradley_terry(vb)
    common = sorted(set(rj) & set(rv))
    return {
        "n": len(units),
        "accuracy": (hits, len(units), binomtest(hits, len(units)).proportion_ci(method="wilson")),
        "kappa": cohen_kappa_score(h, j),
        "decisive": (decisive_hits, len(sides), binomtest(decisive_hits, len(sides)).proportion_ci(method="wilson")),
        "decisive_kappa": cohen_kappa_score([a for a, _ in sides], [b for _, b in sides]),
        "first": (sum(firsts), len(firsts), binomtest(sum(firsts), len(firsts), 0.5).pvalue),
        "spearman": spearmanr([rj[m] for m in common], [rv[m] for m in common]).statistic,
        "models": len(common),
        "said": said,
        "human_ties": sum(1 for p in votes if p not in human),
    }


def test_a_fair_judge_in_both_orders_agrees_with_the_votes_as_sklearn_and_scipy_compute_it(tmp_path, serve, capsys):
    ws_path = make_pairs_ws(tmp_path, serve, capsys)
    judge = serve(respond=fair_judge)
    spec = f"openai:fair@{judge.url}?retries=0&concurrency=4"
    code, out, err = cli(capsys, ws_path, "judge-pairs", "--bench", "o", "--judge", spec, "--both-orders", "--json")
    assert code == 0, err
    found = json.loads(out)
    pairs = ITEMS * 3
    undecided = 2 * 3  # picture 7's three pairs, in both orders: asked twice each (a reminder), never readable
    assert found["pairs"] == pairs and found["judgements"] == 2 * pairs and found["left"] == 0
    assert found["verdicts"]["undecided"] == undecided
    assert judge.count == found["calls"] == 2 * pairs + undecided
    key = found["set"]

    code, out, err = cli(
        capsys, ws_path, "align", "pairs", "--bench", "o", "--set", key, "--bootstrap", "300", "--json"
    )
    assert code == 0, err
    got = json.loads(out)
    want = expected(ws_path, key, both_orders=True)
    assert got["both_orders"] is True and got["n"] == want["n"] > 0
    assert got["human_ties"] == want["human_ties"] > 0  # ben's contrary votes tie with ana's: left out, counted
    hits, n, ci = want["accuracy"]
    assert (got["accuracy"]["k"], got["accuracy"]["n"]) == (hits, n)
    assert got["accuracy"]["wilson_95"] == pytest.approx([ci.low, ci.high])
    assert got["kappa"] == pytest.approx(want["kappa"])
    low, high = got["kappa_95"]
    assert low <= got["kappa"] <= high
    hits, n, ci = want["decisive"]
    assert (got["decisive"]["k"], got["decisive"]["n"]) == (hits, n)
    assert got["decisive"]["wilson_95"] == pytest.approx([ci.low, ci.high])
    assert got["decisive_kappa"] == pytest.approx(want["decisive_kappa"])
    k, n, p = want["first"]
    assert (got["position_bias"]["first_choices"]["k"], got["position_bias"]["first_choices"]["n"]) == (k, n)
    assert got["position_bias"]["binomial_p"] == pytest.approx(p)
    # Picture 5's three pairs flip with the order (the first shown wins twice): the only inconsistent decided pairs.
    assert got["position_bias"]["inconsistent_first"]["k"] == got["position_bias"]["inconsistent_first"]["n"] == 3
    assert got["position_bias"]["consistency"]["n"] == pairs - 3  # picture 7: undecided in both orders
    assert got["ratings"]["rated_models"] == want["models"] == 4
    assert got["ratings"]["spearman"] == pytest.approx(want["spearman"])
    assert got["ratings"]["spearman"] == pytest.approx(1.0)  # a fair judge ranks the models as people do
    assert [m["model"].split("@")[0] for m in got["ratings"]["models"]] == [
        "openai:m1",
        "openai:m2",
        "openai:m3",
        "openai:m4",
    ]

    # The same set named by --judge; the text report names every figure.
    code, text, _ = cli(capsys, ws_path, "align", "pairs", "--bench", "o", "--judge", spec, "--bootstrap", "100")
    assert code == 0 and f"set {key}" in text and "consistent across orders" in text and "Spearman rho 1.000" in text


def test_a_judge_that_always_picks_the_first_answer_shows_its_position_bias(tmp_path, serve, capsys):
    ws_path = make_pairs_ws(tmp_path, serve, capsys, items=6, per_item=2)
    judge = serve(respond=first_judge)
    spec = f"openai:first@{judge.url}?retries=0"
    code, out, err = cli(capsys, ws_path, "judge-pairs", "--bench", "o", "--judge", spec, "--both-orders", "--json")
    assert code == 0, err
    key = json.loads(out)["set"]
    got = json.loads(cli(capsys, ws_path, "align", "pairs", "--bench", "o", "--set", key[:6], "--json")[1])
    bias = got["position_bias"]
    assert bias["first_choices"]["k"] == bias["first_choices"]["n"] == 24  # every judgement chose what came first
    assert bias["binomial_p"] == pytest.approx(2 * 0.5**24)
    assert bias["consistency"]["k"] == 0 and bias["consistency"]["n"] == 12
    assert bias["inconsistent_first"]["value"] == 1.0
    assert got["judge_labels"] == {"left": 0, "right": 0, "tie": got["n"], "bothbad": 0}  # never a side in both orders
    assert got["decisive"]["n"] == 0 and got["decisive_kappa"] is None

    # One order only (another judge, another set): the share of first choices against 0.5, no consistency.
    other = serve(respond=first_judge)
    spec1 = f"openai:first1@{other.url}?retries=0"
    key1 = json.loads(cli(capsys, ws_path, "judge-pairs", "--bench", "o", "--judge", spec1, "--json")[1])["set"]
    assert other.count == 12
    one = json.loads(cli(capsys, ws_path, "align", "pairs", "--bench", "o", "--set", key1, "--json")[1])
    want = expected(ws_path, key1, both_orders=False)
    assert one["both_orders"] is False and one["position_bias"]["consistency"] is None
    assert one["position_bias"]["first_choices"]["k"] == 12 and one["position_bias"]["binomial_p"] == pytest.approx(
        want["first"][2]
    )
    assert one["kappa"] == pytest.approx(want["kappa"]) and one["accuracy"]["k"] == want["accuracy"][0]


def test_labels_follow_the_stated_rules():
    from annotation.pair_alignment import human_label, judge_label

    assert human_label(["left"]) == "left"
    assert human_label(["left", "right"]) is None  # tied votes: no label
    assert human_label(["left", "right", "left"]) == "left"
    assert human_label([]) is None
    assert judge_label("left", "left", True) == "left"
    assert judge_label("left", "right", True) == "tie"  # the orders disagree: no side won both
    assert judge_label("bothbad", "tie", True) == "tie"
    assert judge_label("left", None, True) is None
    assert judge_label("right", None, False) == "right"
    assert judge_label(None, "left", True) is None


def test_bad_input_is_one_line(tmp_path, serve, capsys):
    ws_path = make_pairs_ws(tmp_path, serve, capsys, items=2, per_item=1)
    for args, message in [
        (["align", "pairs", "--bench", "o", "--set", "0123456789abcdef"], "no judgement set '0123456789abcdef' on o"),
        (["align", "pairs", "--bench", "nope", "--set", "x"], "no benchmark named 'nope'"),
        (["align", "pairs", "--bench", "o"], "one of the arguments --judge --set is required"),
        (["judge-pairs", "--bench", "nope", "--judge", "baseline:first"], "no benchmark named 'nope'"),
    ]:
        try:
            code, out, err = cli(capsys, ws_path, *args)
        except SystemExit as exc:  # argparse's own usage errors
            code, out, err = exc.code, *capsys.readouterr()
        assert code == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1, (args, err)


def test_reading_a_judgement_set_costs_the_same_whatever_other_sets_are_stored(tmp_path, serve, capsys):
    from db import pair_judgements as store
    from tests.sqlite_steps import counting_steps

    ws_path = make_pairs_ws(tmp_path, serve, capsys, items=2, per_item=2)
    judge = serve(respond=first_judge)
    key = json.loads(
        cli(capsys, ws_path, "judge-pairs", "--bench", "o", "--judge", f"openai:j@{judge.url}", "--json")[1]
    )["set"]
    steps = []
    with open_workspace(ws_path) as ws:
        pair_ids = [p.id for p in arena.pairs(ws)]
        for total in (10, 400):
            have = len(store.sets_of(ws, 1)) - 1
            store.store(
                ws,
                [
                    store.PairJudgement(
                        p, store.set_key(f"other:{n}", "v", False), f"other:{n}", "v", False, False, "left", 1, ""
                    )
                    for n in range(have, total)
                    for p in pair_ids
                ],
            )
            with counting_steps(ws.conn, every=10) as counted:
                found = store.judgements_of(ws, key, 1)
            assert len(found) == len(pair_ids)
            steps.append(counted.count)
    # Index seeks by the set's key: 40× the other sets adds at most a b-tree level, never a scan of them.
    assert steps[1] <= steps[0] + 2, steps
