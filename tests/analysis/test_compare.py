"""`vlmdesk compare`: two runs item by item (evaluator/analysis/compare.py, issue 38). Every figure is held to a
computation done here from the runs' per-item results (report.group_items / open_group_items) or from the prediction
files themselves: McNemar's p to scipy.stats.binomtest and a written-out binomial tail, Newcombe's interval to its
published values and a written-out Wilson/φ computation, the bootstrap intervals to scipy.stats.bootstrap."""

import csv
import json
import math
import random
import sqlite3
from statistics import NormalDist

import numpy as np
import pytest
from scipy.stats import binomtest
from scipy.stats import bootstrap as scipy_bootstrap

from db import catalog, open_workspace
from evaluator.analysis.compare import CIRCULAR, POPE_ACCURACY, POPE_F1, VANILLA, compare_runs
from evaluator.analysis.intervals import (
    BOOTSTRAP,
    NEWCOMBE,
    mcnemar_exact,
    paired_bootstrap_difference,
    paired_difference,
)
from evaluator.analysis.report import group_items, open_group_items, run_report
from evaluator.scoring.choices import LETTERS
from tests.open_plugins import run_parrot
from tests.sqlite_steps import counting_steps
from vlmdesk.cli import main
from vlmdesk.demo import ensure_demo

pytestmark = pytest.mark.base

STRIDE = 1_000_000  # VLMEvalKit's circular copies: index + k·1,000,000
Z = NormalDist().inv_cdf(0.975)


# --- the interval and the test, against independent computations ----------------------------------------------


def _binomial_two_sided(b: int, c: int) -> float:
    """McNemar's exact p written out: twice the smaller binomial(b + c, ½) tail, at most 1."""
    n = b + c
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


@pytest.mark.parametrize(("b", "c"), [(0, 0), (0, 1), (1, 0), (3, 3), (6, 16), (301, 137), (12, 40), (0, 25)])
def test_mcnemar_exact_is_binomtest_of_the_discordant_pairs(b, c):
    p = mcnemar_exact(b, c)
    assert p == (binomtest(b, b + c, 0.5).pvalue if b + c else 1.0)
    assert p == pytest.approx(_binomial_two_sided(b, c), rel=1e-9)


def _wilson(k: int, n: int) -> tuple[float, float]:
    """Wilson's score interval written out (no continuity correction)."""
    p = k / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z / (1 + Z * Z / n) * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return centre - half, centre + half


def _newcombe(a: int, b: int, c: int, d: int) -> tuple[float, float]:
    """Newcombe (1998) method 10, written out from the paper's formulas."""
    n = a + b + c + d
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = _wilson(a + b, n)
    l2, u2 = _wilson(a + c, n)
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    if margins == 0:
        phi = 0.0
    elif a * d - b * c > n / 2:
        phi = (a * d - b * c - n / 2) / math.sqrt(margins)
    elif a * d - b * c >= 0:
        phi = 0.0
    else:
        phi = (a * d - b * c) / math.sqrt(margins)
    theta = p1 - p2
    low = theta - math.sqrt((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    high = theta + math.sqrt((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2)
    return max(-1.0, low), min(1.0, high)


def test_newcombes_paired_interval_has_its_published_values_and_the_written_out_ones():
    # Cavo et al. (2012) as Fagerland, Lydersen & Laake's "Statistical Analysis of Contingency Tables" (ch. 8) give
    # it: 59 / 6 / 16 / 80, estimate −0.0621, Newcombe square-and-add 95 % CI −0.1186 to −0.0046.
    found = paired_difference(59, 6, 16, 80)
    assert found is not None and found.method == NEWCOMBE
    assert (round(found.low, 4), round(found.high, 4)) == (-0.1186, -0.0046)
    rng = random.Random(7)
    tables = [(59, 6, 16, 80), (0, 0, 0, 5), (5, 0, 0, 0), (3, 4, 0, 0), (0, 7, 2, 0), (1, 1, 7, 12)]
    tables += [tuple(rng.randrange(0, 60) for _ in range(4)) for _ in range(40)]
    for table in tables:
        if sum(table) == 0:
            continue
        found = paired_difference(*table)
        assert found is not None
        assert (found.low, found.high) == pytest.approx(_newcombe(*table), abs=1e-12), table
        assert found.low <= (table[1] - table[2]) / sum(table) <= found.high
    assert paired_difference(0, 0, 0, 0) is None


def test_a_paired_bootstrap_of_a_mean_difference_is_scipys_bootstrap_of_the_differences():
    rng = np.random.default_rng(3)
    a, b = rng.random(60), rng.random(60) * 0.8
    found = paired_bootstrap_difference((a,), (b,), np.mean)
    ref = scipy_bootstrap(
        (a - b,),
        np.mean,
        vectorized=True,
        n_resamples=2000,
        confidence_level=0.95,
        method="percentile",
        random_state=np.random.default_rng(0),
    ).confidence_interval
    assert found is not None and found.method == BOOTSTRAP
    assert (found.low, found.high) == pytest.approx((ref.low, ref.high), rel=1e-9)


# --- runs of the demo -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory):
    """Run 1 circular random, 2 circular first, 3 vanilla random (seed 3), 4 POPE random, 5 POPE random (seed 9),
    6 circular random on the first 20 items (seed 4)."""
    path = tmp_path_factory.mktemp("compare") / "w.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    for args in (
        ["--bench", "demo", "--model", "baseline:random"],
        ["--bench", "demo", "--model", "baseline:first"],
        ["--bench", "demo", "--model", "baseline:random", "--strategy", "vanilla", "--seed", "3"],
        ["--bench", "demo-pope", "--model", "baseline:random"],
        ["--bench", "demo-pope", "--model", "baseline:random", "--seed", "9"],
        ["--bench", "demo", "--model", "baseline:random", "--limit", "20", "--seed", "4"],
    ):
        assert main(["--workspace", str(path), "run", *args]) == 0
    return path


def _paired(ws, run_a, run_b, field):
    """(items, right in A, right in B) over the items both runs decided, from the report's per-item results."""
    a = {r.item_id: r for r in group_items(ws, run_a)}
    b = {r.item_id: r for r in group_items(ws, run_b)}
    ids = [i for i in a if i in b and getattr(a[i], field) is not None and getattr(b[i], field) is not None]
    return ids, [getattr(a[i], field) for i in ids], [getattr(b[i], field) for i in ids]


def _check_right_wrong(figure, ids, right_a, right_b):
    n = len(ids)
    a_only = [i for i, x, y in zip(ids, right_a, right_b) if x and not y]
    b_only = [i for i, x, y in zip(ids, right_a, right_b) if y and not x]
    both = sum(1 for x, y in zip(right_a, right_b) if x and y)
    assert figure.items == n and figure.kind == "right/wrong"
    assert [r.item_id for r in figure.a_better] == a_only and [r.item_id for r in figure.b_better] == b_only
    assert figure.a == pytest.approx(sum(right_a) / n) and figure.b == pytest.approx(sum(right_b) / n)
    assert figure.difference == pytest.approx((len(a_only) - len(b_only)) / n)
    assert figure.p == (binomtest(len(a_only), len(a_only) + len(b_only), 0.5).pvalue if a_only or b_only else 1.0)
    low, high = _newcombe(both, len(a_only), len(b_only), n - both - len(a_only) - len(b_only))
    assert (figure.interval.low, figure.interval.high) == pytest.approx((low, high), abs=1e-12)


def test_two_circular_runs_give_circular_and_vanilla_equal_to_the_per_item_results(demo_runs):
    with open_workspace(demo_runs) as ws:
        c = compare_runs(ws, 1, 2)
        assert [f.name for f in c.figures] == [CIRCULAR, VANILLA]
        assert c.both == 30 and c.only_in_a == c.only_in_b == ()
        for figure, field in ((c.figures[0], "circular"), (c.figures[1], "vanilla")):
            _check_right_wrong(figure, *_paired(ws, 1, 2, field))
        # Both asked every item: each side's accuracy is its report's.
        overall_a, overall_b = run_report(ws, 1).mcq.overall, run_report(ws, 2).mcq.overall
        assert (c.figures[0].a, c.figures[0].b) == pytest.approx((overall_a.circular, overall_b.circular))
        assert (c.figures[1].a, c.figures[1].b) == pytest.approx((overall_a.vanilla, overall_b.vanilla))
        # The draw tells the runs apart: something flipped, so the test has counts to check.
        assert c.figures[1].a_better or c.figures[1].b_better
        swapped = compare_runs(ws, 2, 1)
        assert swapped.figures[1].difference == pytest.approx(-c.figures[1].difference)
        assert swapped.figures[1].p == c.figures[1].p


def test_a_circular_and_a_vanilla_run_share_vanilla_only_and_a_limited_run_names_the_items_it_left(demo_runs):
    with open_workspace(demo_runs) as ws:
        c = compare_runs(ws, 1, 3)
        assert [f.name for f in c.figures] == [VANILLA]
        _check_right_wrong(c.figures[0], *_paired(ws, 1, 3, "vanilla"))
        limited = compare_runs(ws, 1, 6)
        items = catalog.list_items(ws, catalog.benchmark_by_name(ws, "demo").id)
        assert limited.both == 20 and limited.only_in_b == ()
        assert [r.index for r in limited.only_in_a] == [i.index for i in items[20:]]
        assert all(f.items == 20 for f in limited.figures)


def test_two_pope_runs_give_the_official_accuracy_and_f1_with_a_paired_bootstrap(demo_runs):
    with open_workspace(demo_runs) as ws:
        c = compare_runs(ws, 4, 5)
        assert [f.name for f in c.figures] == [POPE_ACCURACY, POPE_F1]
        _check_right_wrong(c.figures[0], *_paired(ws, 4, 5, "official"))
        report_a, report_b = run_report(ws, 4).pope.pope["official"], run_report(ws, 5).pope.pope["official"]
        assert (c.figures[0].a, c.figures[0].b) == pytest.approx((report_a.accuracy, report_b.accuracy))
        f1 = c.figures[1]
        assert f1.kind == "graded" and f1.p is None and f1.a_better == f1.b_better == ()
        assert (f1.a, f1.b) == pytest.approx((report_a.f1, report_b.f1))
        # The interval: scipy's paired percentile bootstrap of F1(A) − F1(B), F1 written out from its counts.
        ids, right_a, right_b = _paired(ws, 4, 5, "official")
        answers = {r.item_id: r.answer for r in group_items(ws, 4)}
        yes = np.array([answers[i] == "yes" for i in ids], dtype=float)

        def columns(right):
            right = np.array(right, dtype=float)
            return right * yes, right * yes + (1 - right) * (1 - yes)  # tp, said yes (wrong on a no: said yes)

        def f1_of(tp, said, labelled):
            precision, recall = tp.sum(axis=-1) / said.sum(axis=-1), tp.sum(axis=-1) / labelled.sum(axis=-1)
            return 2 * precision * recall / (precision + recall)

        (tp_a, said_a), (tp_b, said_b) = columns(right_a), columns(right_b)
        assert f1_of(tp_a, said_a, yes) == pytest.approx(report_a.f1)
        ref = scipy_bootstrap(
            (tp_a, said_a, yes, tp_b, said_b, yes),
            lambda ta, sa, la, tb, sb, lb, axis: f1_of(ta, sa, la) - f1_of(tb, sb, lb),
            paired=True,
            vectorized=True,
            n_resamples=2000,
            confidence_level=0.95,
            method="percentile",
            random_state=np.random.default_rng(0),
        ).confidence_interval
        assert (f1.interval.low, f1.interval.high) == pytest.approx((ref.low, ref.high), rel=1e-9)


OPEN_A = {
    "Describe the cat's face": "A close-up of a tabby cat with green eyes and a pink nose; a blurred background.",
    "How many coins": "I count 24 coins in four rows of six on a dark background; they look like ancient coins "
    "showing heads and figures!",
    "What is the man doing": "he is looking through a camera mounted on a tripod standing on a lawn with buildings "
    "in the distance - the photo is black and white",
}
OPEN_B = {
    "What is on the table": "A red cup of espresso with crema on a matching red saucer, on a wooden table; a metal "
    "spoon lies on the saucer, to the right of the cup.",
    "How many coins": "24",
}


def test_two_open_runs_give_each_metric_both_have_with_a_paired_bootstrap(tmp_path, monkeypatch):
    path = tmp_path / "w.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    for n, answers in enumerate((OPEN_A, OPEN_B)):
        (tmp_path / str(n)).mkdir()
        run_parrot(path, "demo-open", answers, tmp_path / str(n), monkeypatch)
    with open_workspace(path) as ws:
        c = compare_runs(ws, 1, 2)
        a = {r.item_id: r for r in open_group_items(ws, 1)}
        b = {r.item_id: r for r in open_group_items(ws, 2)}
        names = [f.name for f in c.figures]
        expected = [m for m in ("exact_match", "word_match", "vqa_accuracy", "anls", "cider") if m in names]
        assert names[: len(expected)] == expected and {"exact_match", "word_match", "anls"} <= set(expected)
        assert c.both == 8
        for figure in c.figures:
            ids = [i for i in a if i in b and figure.name in a[i].scores and figure.name in b[i].scores]
            xs = np.array([a[i].scores[figure.name] for i in ids])
            ys = np.array([b[i].scores[figure.name] for i in ids])
            assert figure.kind == "graded" and figure.items == len(ids) and figure.p is None
            assert (figure.a, figure.b) == pytest.approx((xs.mean(), ys.mean()))
            assert [r.item_id for r in figure.a_better] == [i for i, x, y in zip(ids, xs, ys) if x > y]
            assert [r.item_id for r in figure.b_better] == [i for i, x, y in zip(ids, xs, ys) if y > x]
            ref = scipy_bootstrap(
                (xs - ys,),
                np.mean,
                vectorized=True,
                n_resamples=2000,
                confidence_level=0.95,
                method="percentile",
                random_state=np.random.default_rng(0),
            ).confidence_interval
            assert (figure.interval.low, figure.interval.high) == pytest.approx((ref.low, ref.high), abs=1e-12)
        word = c.figure("word_match")
        assert word.a_better and word.b_better  # the two answer sets each win somewhere


# --- the must-show: two imported prediction files -------------------------------------------------------------


def _prediction_rows(items, rng, knows: dict, copies: bool = True) -> list[dict]:
    """VLMEvalKit's prediction layout: index, question, A…, answer, prediction (and the circular copies at
    index + k·1,000,000, their options rotated). A model right on the questions it `knows`, guessing elsewhere."""
    rows = []
    for k in range(max(len(i.options) for i in items)) if copies else [0]:
        for item in items:
            n = len(item.options)
            if k >= n:
                continue
            order = [(j + k) % n for j in range(n)]
            answer = LETTERS[order.index(LETTERS.index(item.answer))]
            prediction = answer if knows[item.index] else rng.choice(LETTERS[:n])
            rows.append(
                {
                    "index": int(item.index) + k * STRIDE,
                    "question": item.question,
                    **dict(zip(LETTERS, [item.options[j] for j in order])),
                    "answer": answer,
                    "prediction": prediction,
                }
            )
    return rows


def _write_tsv(path, rows) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.DictWriter(f, list(dict.fromkeys(k for r in rows for k in r)), delimiter="\t")
        out.writeheader()
        out.writerows(rows)


def _outcomes_from_file(path) -> tuple[dict[int, bool], dict[int, bool]]:
    """Read back from the file alone: per question, VanillaEval (the original row hit) and CircularEval (every row
    of the question hit)."""
    with open(path, encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    vanilla, circular = {}, {}
    for r in rows:
        index, hit = int(r["index"]), r["prediction"] == r["answer"]
        if index < STRIDE:
            vanilla[index] = hit
        circular[index % STRIDE] = circular.get(index % STRIDE, True) and hit
    return vanilla, circular


def _cli(capsys, path, *args):
    capsys.readouterr()
    code = main(["--workspace", str(path), *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_compares_mcnemar_p_on_two_imported_prediction_files_is_binomtest_of_their_discordant_items(tmp_path, capsys):
    path = tmp_path / "w.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
        items = catalog.list_items(ws, catalog.benchmark_by_name(ws, "demo").id)
    rng = random.Random(38)
    knows_a = {i.index: rng.random() < 0.7 for i in items}
    knows_b = {i.index: rng.random() < 0.35 for i in items}  # a weaker model: the difference shows
    run_ids, files = [], []
    for name, knows in (("model-a", knows_a), ("model-b", knows_b)):
        file = tmp_path / f"{name}_demo.tsv"
        _write_tsv(file, _prediction_rows(items, rng, knows))
        code, out, err = _cli(capsys, path, "import-predictions", file, "--bench", "demo", "--model", name, "--json")
        assert code == 0, err
        run_ids.append(json.loads(out)["run_id"])
        files.append(file)
    code, out, err = _cli(capsys, path, "compare", *run_ids, "--json")
    assert code == 0, err
    found = {f["name"]: f for f in json.loads(out)["figures"]}
    assert set(found) == {CIRCULAR, VANILLA}
    (vanilla_a, circular_a), (vanilla_b, circular_b) = map(_outcomes_from_file, files)
    for name, a, b in ((VANILLA, vanilla_a, vanilla_b), (CIRCULAR, circular_a, circular_b)):
        a_only = sum(1 for i in a if a[i] and not b[i])
        b_only = sum(1 for i in a if b[i] and not a[i])
        assert found[name]["p"] == binomtest(a_only, a_only + b_only, 0.5).pvalue
        assert (len(found[name]["a_better"]), len(found[name]["b_better"])) == (a_only, b_only)
        assert found[name]["items"] == len(items)
        assert found[name]["difference"] == pytest.approx((a_only - b_only) / len(items))
    assert found[CIRCULAR]["p"] < 0.05  # the draw made A clearly better: the test checks a p that matters
    # The text says the same, one line per figure.
    code, text, _ = _cli(capsys, path, "compare", *run_ids)
    assert code == 0
    p = found[CIRCULAR]["p"]
    assert f"McNemar exact p = {p:.4f}" in text or f"p = {p:.1e}" in text
    assert f"{len(items)} items both asked (only in {run_ids[0]}: 0, only in {run_ids[1]}: 0)" in text


def test_an_item_whose_circular_result_is_undecided_is_left_out_and_counted(tmp_path, capsys):
    path = tmp_path / "w.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
        items = catalog.list_items(ws, catalog.benchmark_by_name(ws, "demo").id)
    rng = random.Random(5)
    everything = {i.index: True for i in items}
    rows = _prediction_rows(items, rng, everything)
    # Run B never got to the last rotation of the first five questions (an interrupted run): right so far, undecided.
    undecided = {int(i.index) for i in items[:5]}
    cut = [
        r for r in rows if not (r["index"] % STRIDE in undecided and r["index"] // STRIDE == len(items[0].options) - 1)
    ]
    for name, chosen in (("a", rows), ("b", cut)):
        file = tmp_path / f"{name}.tsv"
        _write_tsv(file, chosen)
        assert _cli(capsys, path, "import-predictions", file, "--bench", "demo", "--model", name)[0] == 0
    with open_workspace(path) as ws:
        c = compare_runs(ws, 1, 2)
    circular, vanilla = c.figure(CIRCULAR), c.figure(VANILLA)
    short = sum(1 for i in items[:5] if len(i.options) == len(items[0].options))
    assert circular.left_out == short and circular.items == len(items) - short
    assert vanilla.left_out == 0 and vanilla.items == len(items)
    assert circular.a == circular.b == 1.0 and circular.p == 1.0


# --- refusals, the command line --------------------------------------------------------------------------------


def test_runs_of_two_benchmarks_or_one_run_twice_are_refused_in_one_line(demo_runs, capsys):
    code, out, err = _cli(capsys, demo_runs, "compare", 1, 4)
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0
    assert "run 1 is on demo and run 4 on demo-pope" in err
    code, _, err = _cli(capsys, demo_runs, "compare", 1, 1)
    assert code == 2 and "named twice" in err and err.strip().count("\n") == 0
    code, _, err = _cli(capsys, demo_runs, "compare", 1, 99)
    assert code == 2 and "no run 99" in err
    code, _, err = _cli(capsys, demo_runs, "compare", 1, 2, "--scoring", "nope")
    assert code == 2 and "no scoring 'nope'" in err


def test_the_text_names_both_runs_every_figure_and_prints_the_flipped_items(demo_runs, capsys):
    code, text, err = _cli(capsys, demo_runs, "compare", 1, 6, "--flipped", "--figure", VANILLA)
    assert code == 0, err
    with open_workspace(demo_runs) as ws:
        c = compare_runs(ws, 1, 6)
    lines = text.splitlines()
    assert lines[0].startswith("compare run 1 (baseline:random) vs run 6 (baseline:random) on demo: 20 items both")
    assert "(only in 1: 10, only in 6: 0)" in lines[0]
    assert lines[1].startswith("  only in 1: index 21, 22, 23")
    assert any(line.startswith("CircularEval ") and "McNemar exact p = " in line for line in lines)
    vanilla = c.figure(VANILLA)
    head = lines.index(f"right in A only ({VANILLA}): {len(vanilla.a_better)}")
    assert [line.split()[0] for line in lines[head + 1 : head + 1 + len(vanilla.a_better)]] == [
        str(r.index) for r in vanilla.a_better
    ]
    code, _, err = _cli(capsys, demo_runs, "compare", 1, 6, "--figure", VANILLA)
    assert code == 2 and "--figure goes with --flipped" in err
    code, _, err = _cli(capsys, demo_runs, "compare", 1, 6, "--flipped", "--figure", "F1")
    assert code == 2 and "one of CircularEval, VanillaEval" in err


# --- cost -------------------------------------------------------------------------------------------------------


def test_the_comparison_reads_the_two_runs_only_whatever_else_is_stored(demo_runs, tmp_path):
    path = tmp_path / "w.sqlite"
    with sqlite3.connect(demo_runs) as src, sqlite3.connect(path) as dst:
        src.backup(dst)

    def steps(run_a, run_b) -> int:
        with open_workspace(path) as ws:
            compare_runs(ws, run_a, run_b)  # warm: the first reads of a connection (schema) are not the comparison's
            with counting_steps(ws.conn) as counted:
                compare_runs(ws, run_a, run_b)
            return counted.count

    before = (steps(1, 2), steps(4, 5))
    for seed in range(5, 9):  # more runs of the same benchmarks, passes of other runs in the same table
        assert (
            main(
                ["--workspace", str(path), "run", "--bench", "demo", "--model", "baseline:random", "--seed", str(seed)]
            )
            == 0
        )
        assert (
            main(
                [
                    "--workspace",
                    str(path),
                    "run",
                    "--bench",
                    "demo-pope",
                    "--model",
                    "baseline:random",
                    "--seed",
                    str(seed),
                ]
            )
            == 0
        )
    assert (steps(1, 2), steps(4, 5)) == before
    assert min(before) > 0
