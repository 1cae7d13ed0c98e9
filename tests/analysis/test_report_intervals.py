"""95 % intervals on every figure of a run's report (issue 38): each equal to scipy (or a written-out bootstrap)
computed here from what the test itself built — VanillaEval/CircularEval per group (Wilson, an item the unit, on the
kept and the counted path alike), POPE's accuracy/precision/recall (Wilson) and F1 (a percentile bootstrap over the
items rebuilt from the confusion cells), open metrics (a bootstrap of the mean per item), and the official figures of
MMMU, OCRBench and HallusionBench (a bootstrap over question sets); in the JSON, the text and the charts; and a
report still reads a few rows whatever the run's size."""

from __future__ import annotations

import json
import random
from collections import defaultdict

import numpy as np
import pytest
from matplotlib.container import BarContainer
from scipy.stats import binomtest
from scipy.stats import bootstrap as scipy_bootstrap

from db import catalog, open_workspace, runs
from evaluator.analysis import plots, report
from evaluator.analysis.intervals import BOOTSTRAP, WILSON
from evaluator.registry import PLUGINS_ENV
from evaluator.scoring import official_ocrbench as ocr
from evaluator.scoring import open_metrics
from tests import official_reference as ref
from tests.db.test_kept_figures import _bulk_run, _steps, _store
from tests.evaluator.test_official_metrics import (
    MC_RESPONSES,
    OCR_ROWS,
    OPTIONS,
    _b64,
    _cli,
    _hallusion_rows,
    _import,
    _predict,
    _write,
)
from vlmdesk.cmd_run import format_report
from vlmdesk.demo import ensure_demo


def _wilson(k: int, n: int) -> tuple[float, float]:
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return ci.low, ci.high


def _scipy_bootstrap(columns, statistic, *, paired=False) -> tuple[float, float]:
    found = scipy_bootstrap(
        tuple(np.asarray(c, dtype=float) for c in columns),
        statistic,
        paired=paired,
        vectorized=True,
        n_resamples=2000,
        confidence_level=0.95,
        method="percentile",
        random_state=np.random.default_rng(0),
    )
    return found.confidence_interval.low, found.confidence_interval.high


def _bounds(interval) -> tuple[float, float]:
    assert interval is not None
    return interval.low, interval.high


# --- multiple choice ---------------------------------------------------------------------------------------------


def _mcq_items(seed: int, n_items: int):
    """Generated circular items (4 options), each with what the test knows of it: (spec, vanilla right, circular
    right); a pass is right, wrong or undecided, and an item may have passes never asked."""
    rng = random.Random(seed)
    out = []
    for k in range(n_items):
        keyed = k % 9 != 8
        groups = (f"cat{rng.randrange(4)}", f"l2-{rng.randrange(3)}", ("dev", "test")[rng.randrange(2)])
        readings = [rng.choice(["right", "right", "right", "wrong", "undecided"]) for _ in range(rng.randint(1, 4))]
        passes = [(reading, 0, "", False, (None, None)) for reading in readings]
        vanilla = keyed and readings[0] == "right"
        circular = keyed and len(readings) == 4 and all(r == "right" for r in readings)
        out.append(((4, keyed, groups, passes), keyed, vanilla, circular))
    return out


def test_mcq_intervals_are_wilson_on_each_groups_items_on_the_kept_and_the_counted_path(tmp_path):
    items = _mcq_items(5, 90)
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        _, run_id = _store(ws, "circular", False, None, [spec for spec, *_ in items])
        kept, counted = report.run_report(ws, run_id), report._report(ws, run_id, None, kept=False)
    assert kept is not None and counted is not None and kept.mcq is not None and counted.mcq is not None
    expected: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for (_, _, (category, l2, split), _), keyed, vanilla, circular in items:
        if not keyed:
            continue
        for key in (("overall", ""), ("by_category", category), ("by_l2", l2), ("by_split", split)):
            expected[key][0] += 1
            expected[key][1] += vanilla
            expected[key][2] += circular
    for figures in (kept.mcq, counted.mcq):
        for (level, name), (n, vanilla, circular) in expected.items():
            scores = figures.overall if level == "overall" else figures.groups(level)[name]
            assert scores.questions == n
            assert _bounds(scores.vanilla_ci) == pytest.approx(_wilson(vanilla, n), abs=1e-12)
            assert _bounds(scores.circular_ci) == pytest.approx(_wilson(circular, n), abs=1e-12)
            assert scores.vanilla_ci.method == scores.circular_ci.method == WILSON
            assert scores.vanilla_ci.low <= scores.vanilla <= scores.vanilla_ci.high
    assert kept.to_json() == counted.to_json()  # the kept path's intervals are the counted path's
    overall = kept.to_json()["overall"]
    n, vanilla, _ = expected["overall", ""]
    low, high = _wilson(vanilla, n)
    assert overall["vanilla_ci"] == {"low": pytest.approx(low), "high": pytest.approx(high), "method": WILSON}
    text = format_report(kept)
    first = next(line for line in text.splitlines() if line.startswith("Overall"))
    assert f"[{100 * low:.1f}, {100 * high:.1f}]" in first
    assert "95 % intervals: Wilson for accuracies (an item is the unit)" in text and BOOTSTRAP in text


def test_a_vanilla_run_has_no_circular_interval_and_the_runs_list_no_intervals(tmp_path):
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        _, run_id = _store(ws, "vanilla", False, None, [spec for spec, *_ in _mcq_items(6, 20)])
        found = report.run_report(ws, run_id)
        bare = report.run_report(ws, run_id, intervals=False)
    assert found.mcq.overall.vanilla_ci is not None and found.mcq.overall.circular_ci is None
    assert found.to_json()["overall"]["circular_ci"] is None
    assert bare.mcq.overall.vanilla_ci is None and bare.mcq.overall.vanilla == found.mcq.overall.vanilla


def test_a_report_with_intervals_still_reads_a_few_rows_whatever_the_runs_size(tmp_path):
    """Counted in SQLite virtual-machine steps (not a time): the intervals come from the kept counts."""
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        small, large = _bulk_run(ws, 300), _bulk_run(ws, 3_000)
        assert report.run_report(ws, large).mcq.overall.circular_ci is not None
        at_small, at_large = _steps(ws, report.run_report, small), _steps(ws, report.run_report, large)
    assert at_large <= 1.1 * at_small, (at_small, at_large)


# --- POPE --------------------------------------------------------------------------------------------------------


def _written_out_f1_bootstrap(cells: list[int]) -> tuple[float, float]:
    """The percentile bootstrap of F1 as written here: 2,000 resamples of the items (their cells: 0 tp, 1 fp, 2 tn,
    3 fn, 4 unknown labelled yes, 5 unknown labelled no) drawn with numpy's default_rng(0) as scipy draws them, F1 =
    2PR / (P + R) with recall over the questions labelled yes, 0 where it is 0/0; then the 2.5th and 97.5th
    percentiles."""
    codes = np.asarray(cells)
    drawn = np.random.default_rng(0).integers(0, len(codes), (2000, len(codes)))
    f1s = []
    for row in codes[drawn]:
        tp, fp = int((row == 0).sum()), int((row == 1).sum())
        labelled_yes = int(np.isin(row, (0, 3, 4)).sum())
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / labelled_yes if labelled_yes else 0.0
        f1s.append(2 * precision * recall / (precision + recall) if precision + recall else 0.0)
    low, high = np.percentile(f1s, [2.5, 97.5])
    return float(low), float(high)


def test_pope_intervals_wilson_on_their_counts_and_f1_a_bootstrap_over_items(tmp_path):
    rng = random.Random(8)
    spec = []
    for _ in range(70):
        reading = rng.choice(["right", "right", "wrong", "undecided"])
        spec.append(
            (0, True, ("c", "l", "s"), [(reading, 0, rng.choice(["Yes", "No", "no idea"]), False, (None, None))])
        )
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        bench_id, run_id = _store(ws, "pope", False, None, spec)
        labels = [i.answer for i in catalog.list_items(ws, bench_id)]
        kept, counted = report.run_report(ws, run_id), report._report(ws, run_id, None, kept=False)
    assert kept.to_json() == counted.to_json()
    labelled_yes = labels.count("yes")
    for parser in ("official", "strict"):
        m, found = kept.pope.pope[parser], kept.pope.intervals[parser]
        assert _bounds(found.accuracy) == pytest.approx(_wilson(m.tp + m.tn, m.questions), abs=1e-12)
        assert _bounds(found.precision) == pytest.approx(_wilson(m.tp, m.tp + m.fp), abs=1e-12)
        assert _bounds(found.recall) == pytest.approx(_wilson(m.tp, labelled_yes), abs=1e-12)
        unknown_yes = labelled_yes - m.tp - m.fn
        cells = [0] * m.tp + [1] * m.fp + [2] * m.tn + [3] * m.fn + [4] * unknown_yes + [5] * (m.unknown - unknown_yes)
        assert _bounds(found.f1) == pytest.approx(_written_out_f1_bootstrap(cells), abs=1e-12)
        assert found.f1.method == BOOTSTRAP and found.f1.low <= m.f1 <= found.f1.high
        printed = kept.to_json()["pope"][parser]
        assert printed["f1_ci"]["low"] == found.f1.low and printed["accuracy_ci"]["method"] == WILSON
        assert printed["f1"] == m.f1  # the keys that were there stay
    text = format_report(kept)
    assert f"[{100 * found.f1.low:.1f}, {100 * found.f1.high:.1f}]" in text


def test_pope_f1_without_any_yes_has_no_interval(tmp_path):
    spec = [(0, True, ("c", "l", "s"), [("wrong", 0, "No", False, (None, None))]) for _ in range(4)]
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        _, run_id = _store(ws, "pope", False, None, spec)  # every answer no: precision 0/0, so no F1
        found = report.run_report(ws, run_id)
    official = found.pope.pope["official"]
    assert official.f1 is None and found.pope.intervals["official"].f1 is None


# --- open runs ---------------------------------------------------------------------------------------------------


def test_open_metric_intervals_bootstrap_each_metrics_mean_over_items(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(PLUGINS_ENV, "tests.open_plugins")
    ws_path = tmp_path / "ws.sqlite"
    with open_workspace(ws_path) as ws:
        ensure_demo(ws)
        bench = next(b for b in catalog.list_benchmarks(ws) if b.name == "demo-open")
        items = catalog.list_items(ws, bench.id)
    answers = {i.question[:30]: (i.references[0] if n % 3 else "no idea") for n, i in enumerate(items)}
    (tmp_path / "answers.json").write_text(json.dumps(answers))
    code, _, err = _cli(
        capsys, ws_path, "run", "--bench", "demo-open", "--model", f"parrot:{tmp_path / 'answers.json'}"
    )
    assert code == 0, err
    with open_workspace(ws_path) as ws:
        found = report.run_report(ws, 1)
        responses = {p.item_id: p.response for p in runs.predictions_of(ws, 1)}
    o = found.open
    by_id = {i.id: i for i in items}
    exact = [float(open_metrics.exact_match(responses[i], by_id[i].references)) for i in sorted(responses)]
    assert 0 < sum(exact) < len(exact)
    assert _bounds(o.intervals["exact_match"]) == pytest.approx(_scipy_bootstrap((exact,), np.mean), abs=1e-12)
    description = [float(x) for i, x in zip(sorted(responses), exact) if by_id[i].category == "description"]
    assert _bounds(o.category_intervals["description"]["exact_match"]) == pytest.approx(
        _scipy_bootstrap((description,), np.mean), abs=1e-12
    )
    assert o.intervals["cider"] is not None and o.intervals["cider"].method == BOOTSTRAP
    printed = found.to_json()
    assert printed["metric_intervals"]["exact_match"]["low"] == o.intervals["exact_match"].low
    assert "intervals" in printed["by_category"]["description"] and "metrics" in printed["by_category"]["description"]
    text = format_report(found)
    assert _ci_text(o.intervals["exact_match"]) in text and "held fixed in its interval" in text


def _ci_text(interval) -> str:
    return f"[{100 * interval.low:.1f}, {100 * interval.high:.1f}]"


# --- official figures --------------------------------------------------------------------------------------------


def test_mmmu_official_interval_is_wilson_over_the_questions_it_counts(tmp_path, capsys):
    ws, rng = tmp_path / "w.sqlite", random.Random(11)
    rows = [
        {
            "index": n,
            "question": f"Question {n}?",
            **dict(zip("ABCD", OPTIONS)),
            "answer": rng.choice("ABCD"),
            "image": _b64(n),
            "split": "validation" if n % 4 else "dev",
            "prediction": rng.choice(MC_RESPONSES[:9] + MC_RESPONSES[10:]),
        }
        for n in range(40)
    ]
    header = ["index", "question", "A", "B", "C", "D", "answer", "image", "split"]
    _import(capsys, ws, _write(tmp_path / "MMMU_DEV_VAL.tsv", header, rows), "mmmu-copy")
    run_id = _predict(capsys, ws, _write(tmp_path / "m.tsv", [*header[:7], header[8], "prediction"], rows), "mmmu-copy")
    ref.mmmu_reseed()
    right = questions = 0
    for r in rows:  # the reference, in file order; the figure is over the validation split
        parsed = ref.parse_multi_choice_response(r["prediction"], list("ABCD"), dict(zip("ABCD", OPTIONS)))
        if r["split"] == "validation":
            questions += 1
            right += ref.eval_multi_choice(r["answer"], parsed)
    code, out, _ = _cli(capsys, ws, "report", run_id, "--json")
    official = json.loads(out)["official"]
    low, high = _wilson(right, questions)
    assert official["value"] == right / questions
    assert official["interval"] == {"low": pytest.approx(low), "high": pytest.approx(high), "method": WILSON}
    assert official["interval_shown"] == f"[{100 * low:.1f}, {100 * high:.1f}]"
    code, out, _ = _cli(capsys, ws, "report", run_id)
    assert f"accuracy (official) {100 * right / questions:.1f} [{100 * low:.1f}, {100 * high:.1f}]" in out


def test_ocrbench_and_hallusionbench_official_intervals(tmp_path, capsys):
    ws = tmp_path / "w.sqlite"
    ocr_rows = [
        {"index": n, "image": _b64(n), "question": f"q{n}", "answer": repr(a), "category": c, "prediction": p}
        for n, (c, p, a) in enumerate(OCR_ROWS)
    ]
    _import(
        capsys,
        ws,
        _write(tmp_path / "OCRBench.tsv", ["index", "image", "question", "answer", "category"], ocr_rows),
        "OCRBench",
        "--format",
        "vqa-tsv",
    )
    answered = [r for r in ocr_rows if r["prediction"]]
    header = ["index", "question", "answer", "category", "prediction"]
    run_id = _predict(capsys, ws, _write(tmp_path / "m_OCRBench.tsv", header, answered), "OCRBench")
    theirs = ref.ocrbench_evaluate(ocr_rows)
    counted = sum(1 for r in answered if r["category"] in ocr.CATEGORIES)  # OCRBench's categories only
    _, out, _ = _cli(capsys, ws, "report", run_id, "--json")
    official = json.loads(out)["official"]
    low, high = _wilson(theirs["Final Score"], counted)
    assert official["value"] == theirs["Final Score"]
    assert (official["interval"]["low"], official["interval"]["high"]) == pytest.approx((low * counted, high * counted))
    assert official["interval_shown"] == f"[{low * counted:.0f}, {high * counted:.0f}]"

    hrows = [dict(r, image=_b64(n), question=f"Is it so {n}?") for n, r in enumerate(_hallusion_rows())]
    header = ["index", "image", "question", "answer", "l2-category"]
    _import(capsys, ws, _write(tmp_path / "HallusionBench.tsv", header, hrows), "HallusionBench", "--format", "vqa-tsv")
    run_id = _predict(
        capsys, ws, _write(tmp_path / "m_HB.tsv", [*header[2:], "index", "prediction"], hrows), "HallusionBench"
    )
    # The test's own question sets (l2-category + set_id), in file order: per set the questions and those right,
    # the figures and those all right, the question groups and those right on every figure (VLMEvalKit's reading).
    sets: dict[str, dict[str, list]] = {}
    for r in hrows:
        _, _, _, set_id, figure, question = r["index"].split("_")
        ok = r["answer"] == ref.YOrN_Extraction(r["prediction"])
        s = sets.setdefault(f"{r['l2-category']}_{set_id}", {"answers": [], "figures": {}, "groups": {}})
        s["answers"].append(ok)
        s["figures"].setdefault(figure, []).append(ok)
        s["groups"].setdefault(question, []).append(ok)
    columns = [[], [], [], [], [], []]
    for s in sets.values():
        for c, value in zip(
            columns,
            (
                sum(s["answers"]),
                len(s["answers"]),
                sum(all(v) for v in s["figures"].values()),
                len(s["figures"]),
                sum(all(v) for v in s["groups"].values()),
                len(s["groups"]),
            ),
        ):
            c.append(value)

    def overall(right, n, figures_right, figures, groups_right, groups, axis=-1):
        total = [x.sum(axis=axis) for x in (right, n, figures_right, figures, groups_right, groups)]
        return (total[0] / total[1] + total[2] / total[3] + total[4] / total[5]) / 3

    rating = ref.hallusion_rating(hrows)
    with open_workspace(ws) as w:
        found = report.run_report(w, run_id).official
    assert len(sets) == 6 and found.value == pytest.approx((rating["aAcc"] + rating["fAcc"] + rating["qAcc"]) / 300)
    assert _bounds(found.interval) == pytest.approx(_scipy_bootstrap(columns, overall, paired=True), abs=1e-12)
    assert found.interval.method == "percentile bootstrap over question sets (2,000 resamples, seed 0)"
    assert found.interval.low <= found.value <= found.interval.high
    assert found.line().startswith(f"HallusionBench overall (official) {found.shown} {found.interval_shown}")


# --- charts ------------------------------------------------------------------------------------------------------


def _whiskers(container: BarContainer) -> list[float]:
    """low, high, low, high… of the bars' whiskers as drawn (matplotlib's error line segments)."""
    assert container.errorbar is not None
    (lines,) = container.errorbar.lines[2]
    # A bar without an interval has an empty segment (its error is NaN): nothing is drawn.
    ends = [(s[0][1], s[1][1]) if len(s) else (np.nan, np.nan) for s in lines.get_segments()]
    return [float(end) for pair in ends for end in pair]


def _ends(intervals) -> list[float]:
    return [bound * 100 for i in intervals for bound in (i.low, i.high)]


def test_ability_and_pope_bars_carry_their_intervals_as_whiskers(tmp_path):
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        _, mcq_id = _store(ws, "circular", False, None, [spec for spec, *_ in _mcq_items(9, 40)])
        spec = [(0, True, ("c", "l", "s"), [(r, 0, "x", False, (None, None))]) for r in ["right", "wrong"] * 10]
        _, pope_id = _store(ws, "pope", False, None, spec)
        mcq, pope = report.run_report(ws, mcq_id), report.run_report(ws, pope_id)
    fig = plots.ability_figure([mcq], "by_l2")
    vanilla, circular = [c for c in fig.axes[0].containers if isinstance(c, BarContainer)]
    groups = ["Overall", *sorted(mcq.mcq.by_l2)]
    expected = [mcq.mcq.overall if g == "Overall" else mcq.mcq.by_l2[g] for g in groups]
    assert _whiskers(vanilla) == pytest.approx(_ends(s.vanilla_ci for s in expected))
    assert _whiskers(circular) == pytest.approx(_ends(s.circular_ci for s in expected))
    fig = plots.pope_figure([pope])
    official = next(c for c in fig.axes[0].containers if isinstance(c, BarContainer))
    found = pope.pope.intervals["official"]
    drawn = _whiskers(official)
    assert drawn[:8] == pytest.approx(_ends([found.accuracy, found.precision, found.recall, found.f1]))
    assert all(np.isnan(drawn[8:]))  # yes_ratio: no interval, no whisker
