"""The official figures of MMMU, OCRBench and HallusionBench (evaluator/scoring/official_*.py, wired as metrics in
evaluator/analysis/official.py) held to the reference code they restate — tests/official_reference.py, ported from
MMMU-Benchmark/MMMU mmmu/utils/eval_utils.py @ bb0b95a945998d91dfef37e969e07d49d1139438 and open-compass/VLMEvalKit
image_vqa.py (OCRBench.evaluate), utils/yorn.py and smp/misc.py @ e8e78f05f3080fe28154f2130321f17951c3be94 — on
predictions built here; then through real workspaces: benchmarks imported from TSVs in VLMEvalKit's layouts, runs
imported from VLMEvalKit prediction files, `vlmdesk report --json` and the metric registry."""

from __future__ import annotations

import base64
import csv
import json
import random
from pathlib import Path

import pytest
from scipy.stats import binomtest

from db import open_workspace
from evaluator.analysis import metrics
from evaluator.analysis.report import official_lines, run_report, run_summary
from evaluator.scoring import official_hallusionbench as hb
from evaluator.scoring import official_mmmu as mmmu
from evaluator.scoring import official_ocrbench as ocr
from tests import official_reference as ref
from tests.factories import png_bytes
from vlmdesk.cli import main

# --- MMMU ------------------------------------------------------------------------------------------------------

OPTIONS = ("a red car", "two dogs", "the number 42", "Photosynthesis")
MC_RESPONSES = [
    "(B)",
    "B",
    "The answer is (C).",
    "Answer: D",
    "A or B? I'd go with (A), not (B).",  # brackets: the last one
    "A and then C at the end",  # spaced letters: the last one
    "I believe the image shows two dogs playing in a park",  # > 5 words: an option's text
    "It is either a red car or two dogs, the picture shows two dogs",  # texts: the one found last
    "two dogs",  # 2 words: no text matching, no letter: drawn at random
    "",
    "Photosynthesis.",
    "'C'",
    "The correct option is b",  # lower-case b is no letter
    "None of them fits the photograph that we were shown today.",
    "(E) is not an option",
    "A,",
    "I would say the number 42 is shown, definitely the number 42 here",
]


def _mc_reference(responses, options):
    ref.mmmu_reseed()
    choices = mmmu.letters(len(options))
    return [ref.parse_multi_choice_response(r, choices, dict(zip(choices, options))) for r in responses]


def test_mmmu_multiple_choice_parsing_equals_mmmus_eval_utils():
    rng = random.Random(mmmu.SEED)
    choices = mmmu.letters(len(OPTIONS))
    mine = [mmmu.parse_multi_choice_response(r, choices, dict(zip(choices, OPTIONS)), rng) for r in MC_RESPONSES]
    assert [m[0] for m in mine] == _mc_reference(MC_RESPONSES, OPTIONS)
    # read by hand from eval_utils, so the port is held too
    assert [m[0] for m in mine[:8]] == ["B", "B", "C", "D", "B", "C", "B", "B"]
    # drawn at random: no letter, and 5 words or fewer or no option's text ("'C'" and "A," are letters once stripped)
    drawn = {"two dogs", "", "Photosynthesis.", "The correct option is b", "(E) is not an option"}
    drawn.add("None of them fits the photograph that we were shown today.")
    assert [m[1] for m in mine] == [r in drawn for r in MC_RESPONSES]


OPEN_CASES = [
    ("24", "The answer is 24."),
    ("24", "So the total is 24.0 dollars"),
    ("3.14", "pi is about 3.14159"),  # rounded to 2: 3.14
    ("1,000", "Therefore the result = 1000"),
    ("Paris", "The capital is Paris. It is big"),
    ("Paris", "I think it's paris"),
    ("a", "The answer is a"),  # one letter: padded, so 'a' inside a word does not count
    ("a", "banana"),
    ("-5", "x = -5"),
    ("2.5e3", "It is 2500"),
    ("12", "Final answer 13"),
    ("blue", ""),
    ("0.5", "Thus, the probability is 1/2."),
    ("6", "First we add 2 and 2. Then we add 2 so the total is 6\nDone"),
]


@pytest.mark.parametrize(("gold", "response"), OPEN_CASES)
def test_mmmu_open_parsing_and_scoring_equal_mmmus_eval_utils(gold, response):
    mine = mmmu.parse_open_response(response)
    theirs = ref.parse_open_response(response)
    assert sorted(map(repr, mine)) == sorted(map(repr, theirs))
    assert mmmu.eval_open(gold, mine) == ref.eval_open(gold, theirs)
    assert mmmu.eval_open([gold, "zzz"], mine) == ref.eval_open([gold, "zzz"], theirs)


def test_mmmu_open_verdicts_read_by_hand():
    got = {(g, r): mmmu.eval_open(g, mmmu.parse_open_response(r)) for g, r in OPEN_CASES}
    assert got[("24", "The answer is 24.")] and got[("1,000", "Therefore the result = 1000")]
    assert got[("3.14", "pi is about 3.14159")] and not got[("a", "banana")] and not got[("12", "Final answer 13")]


def test_mmmu_accuracy_over_questions_equals_the_reference_loop():
    questions, rng = [], random.Random(7)
    for n in range(60):
        if n % 5 == 4:
            gold, response = OPEN_CASES[n % len(OPEN_CASES)]
            questions.append(mmmu.MmmuQuestion("validation" if n % 2 else "dev", (), gold, response))
        else:
            answer = rng.choice("ABCD")
            questions.append(
                mmmu.MmmuQuestion("validation" if n % 2 else "dev", OPTIONS, answer, rng.choice(MC_RESPONSES))
            )
    got = mmmu.score(questions)
    ref.mmmu_reseed()  # the reference, in the same order: one random stream
    right = {"dev": [0, 0], "validation": [0, 0]}
    for q in questions:
        if q.options:
            choices = mmmu.letters(len(q.options))
            ok = ref.eval_multi_choice(
                q.answer, ref.parse_multi_choice_response(q.response, choices, dict(zip(choices, q.options)))
            )
        else:
            ok = ref.eval_open(q.answer, ref.parse_open_response(q.response))
        right[q.split][0] += 1
        right[q.split][1] += ok
    assert got.by_split == {s: (n, r) for s, (n, r) in right.items()}
    assert got.right == sum(r for _, r in right.values()) and got.questions == 60


# --- OCRBench --------------------------------------------------------------------------------------------------

OCR_ROWS = [
    ("Regular Text Recognition", "The word is HELLO", ["hello"]),
    ("Irregular Text Recognition", "wor ld", ["world"]),
    ("Artistic Text Recognition", "  Coffee\nShop ", ["coffee shop"]),
    ("Handwriting Recognition", "", ["abc"]),
    ("Digit String Recognition", "0123 4567", ["01234567"]),
    ("Non-Semantic Text Recognition", "xQz", ["XQZ"]),
    ("Scene Text-centric VQA", "It says STOP.", ["stop", "halt"]),
    ("Doc-oriented VQA", "$1,234.56", ["$1,234.56"]),
    ("Key Information Extraction", "Total: 12", ["13"]),
    ("Handwritten Mathematical Expression Recognition", "\\frac { 1 } { 2 }", ["\\frac{1}{2}"]),
    ("Handwritten Mathematical Expression Recognition", "x ^ 2", ["X^2"]),  # HME: not lower-cased
    ("Regular Text Recognition", "Sale", ["SALE", "sales"]),
]


def test_ocrbench_score_equals_vlmevalkits_evaluate():
    mine = ocr.score(OCR_ROWS)
    theirs = ref.ocrbench_evaluate([{"category": c, "prediction": p, "answer": repr(a)} for c, p, a in OCR_ROWS])
    assert mine.score == theirs["Final Score"] == 7
    assert mine.groups == {g: theirs[g] for g in ocr.GROUPS}
    assert mine.groups == {
        "Text Recognition": 4,  # HELLO, Coffee Shop, xQz, Sale
        "Scene Text-centric VQA": 1,
        "Doc-oriented VQA": 1,
        "Key Information Extraction": 0,
        "Handwritten Mathematical Expression Recognition": 1,
    }


# --- HallusionBench --------------------------------------------------------------------------------------------


def _hallusion_rows():
    """Two l2-categories; sets of two figures × two questions; predictions in VLMEvalKit's varieties."""
    said = ["Yes.", "No, it is not.", "yes and no", "The answer is yes", "NO!", "I cannot tell", "Yes-", "no"]
    rows, rng = [], random.Random(3)
    for l2 in ("chart", "map"):
        for set_id in range(3):
            for figure in range(2):
                for question in range(2):
                    rows.append(
                        {
                            "index": f"VD_{l2}_x_{set_id}_{figure}_{question}",
                            "l2-category": l2,
                            "answer": rng.choice(["Yes", "No"]),
                            "prediction": rng.choice(said),
                        }
                    )
    return rows


def test_hallusionbench_yes_no_reading_equals_vlmevalkits():
    for text in ["Yes.", "no", "Yes, no doubt", "NO!", "y/n: yes", "Nothing", "yes-or-no", "1.5, yes", "Is it? No."]:
        assert hb.yorn_extraction(text) == ref.YOrN_Extraction(text), text
    assert hb.process_punctuation("a." * 40) == ref.process_punctuation("a." * 40)  # the count of 32 periods


def test_hallusionbench_aacc_facc_qacc_equal_vlmevalkits_rating():
    rows = _hallusion_rows()
    mine = hb.score(hb.HallusionQuestion(r["index"], r["l2-category"], r["answer"], r["prediction"]) for r in rows)
    theirs = ref.hallusion_rating(rows)
    assert (mine.a_acc, mine.f_acc, mine.q_acc) == pytest.approx((theirs["aAcc"], theirs["fAcc"], theirs["qAcc"]))
    assert (mine.questions, mine.figures, mine.question_groups) == (24, 12, 12)


def test_hallusionbench_figures_by_hand():
    q = hb.HallusionQuestion
    got = hb.score(
        [
            q("VS_chart_0_0_0_0", "chart", "Yes", "yes"),  # figure 0 of set 0: both right
            q("VS_chart_0_0_0_1", "chart", "No", "No."),
            q("VS_chart_0_0_1_0", "chart", "No", "no"),  # figure 1: one wrong
            q("VS_chart_0_0_1_1", "chart", "Yes", "maybe"),
        ]
    )
    assert (got.a_acc, got.f_acc, got.q_acc, got.unknown) == (75.0, 50.0, 50.0, 1)
    assert got.overall == pytest.approx(175 / 3)


# --- through a workspace: imported benchmarks, imported predictions, the report --------------------------------


def _write(path: Path, header: list[str], rows: list[dict]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(header)
        for r in rows:
            w.writerow([r.get(h, "") for h in header])
    return path


def _b64(n: int) -> str:
    return base64.b64encode(png_bytes((n % 250, 30, 30))).decode()


def _cli(capsys, ws: Path, *args) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["--workspace", str(ws), *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def _import(capsys, ws, path, name, *extra) -> None:
    code, _, err = _cli(capsys, ws, "import", path, "--name", name, *extra)
    assert code == 0, err


def _predict(capsys, ws, path, bench) -> int:
    code, out, err = _cli(capsys, ws, "import-predictions", path, "--bench", bench, "--model", "m", "--json")
    assert code == 0, err
    return int(json.loads(out)["run_id"])


def test_mmmu_run_reports_the_official_accuracy_first(tmp_path, capsys):
    ws, rng = tmp_path / "w.sqlite", random.Random(11)
    rows = []
    for n in range(40):
        rows.append(
            {
                "index": n,
                "question": f"Question {n}?",
                **dict(zip("ABCD", OPTIONS)),
                "answer": rng.choice("ABCD"),
                "image": _b64(n),
                "split": "validation" if n % 4 else "dev",
                "prediction": rng.choice(MC_RESPONSES[:9] + MC_RESPONSES[10:]),  # the empty one is never imported
            }
        )
    header = ["index", "question", "A", "B", "C", "D", "answer", "image", "split"]
    _import(capsys, ws, _write(tmp_path / "MMMU_DEV_VAL.tsv", header, rows), "mmmu-copy")  # found by its file
    pred = _write(tmp_path / "m_MMMU_DEV_VAL.tsv", [h for h in header if h != "image"] + ["prediction"], rows)
    run_id = _predict(capsys, ws, pred, "mmmu-copy")
    # the reference over the same predictions, in file order (the random draws follow it)
    ref.mmmu_reseed()
    hits = {"dev": [0, 0], "validation": [0, 0]}
    for r in rows:
        parsed = ref.parse_multi_choice_response(r["prediction"], list("ABCD"), dict(zip("ABCD", OPTIONS)))
        hits[r["split"]][0] += 1
        hits[r["split"]][1] += ref.eval_multi_choice(r["answer"], parsed)
    expected = hits["validation"][1] / hits["validation"][0]
    code, out, err = _cli(capsys, ws, "report", run_id, "--json")
    assert code == 0, err
    printed = json.loads(out)
    assert list(printed)[:3] == ["run_id", "benchmark", "official"]  # first, after what the report is of
    official = printed["official"]
    assert (official["metric"], official["label"], official["value"]) == ("mmmu_accuracy", "accuracy", expected)
    assert official["shown"] == f"{100 * expected:.1f}" and official["details"]["figure_over"] == "validation"
    assert official["details"]["by_split"]["dev"]["right"] == hits["dev"][1]
    with open_workspace(ws) as w:
        assert metrics.compute(w, "mmmu_accuracy", run_id) == expected
        report = run_report(w, run_id)
        ci = binomtest(hits["validation"][1], hits["validation"][0]).proportion_ci(method="wilson")
        shown = f"{100 * expected:.1f} [{100 * ci.low:.1f}, {100 * ci.high:.1f}]"
        assert official_lines(report) == [f"mmmu-copy accuracy (official) {shown}   (validation split)"]
        assert run_summary(w, run_id).vanilla is not None  # the runs list: kept figures only, no official one
        assert run_report(w, run_id, official=False).official is None


def test_ocrbench_and_hallusionbench_runs_report_their_official_figures(tmp_path, capsys):
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
    run_id = _predict(
        capsys,
        ws,
        _write(
            tmp_path / "m_OCRBench.tsv",
            ["index", "question", "answer", "category", "prediction"],
            [r for r in ocr_rows if r["prediction"]],
        ),
        "OCRBench",
    )
    theirs = ref.ocrbench_evaluate(ocr_rows)
    code, out, _ = _cli(capsys, ws, "report", run_id, "--json")
    official = json.loads(out)["official"]
    assert (official["metric"], official["value"], official["shown"]) == ("ocrbench_score", theirs["Final Score"], "7")
    assert official["details"]["groups"] == {g: theirs[g] for g in ocr.GROUPS}

    hrows = [dict(r, image=_b64(n), question=f"Is it so {n}?") for n, r in enumerate(_hallusion_rows())]
    header = ["index", "image", "question", "answer", "l2-category"]
    _import(capsys, ws, _write(tmp_path / "HallusionBench.tsv", header, hrows), "HallusionBench", "--format", "vqa-tsv")
    run_id = _predict(
        capsys, ws, _write(tmp_path / "m_HB.tsv", [*header[2:], "index", "prediction"], hrows), "HallusionBench"
    )
    theirs = ref.hallusion_rating(hrows)
    with open_workspace(ws) as w:
        report = run_report(w, run_id)
        assert report.official.value == pytest.approx((theirs["aAcc"] + theirs["fAcc"] + theirs["qAcc"]) / 300)
        assert metrics.compute(w, "hallusionbench_facc", run_id) == pytest.approx(theirs["fAcc"] / 100)
        assert metrics.compute(w, "hallusionbench_qacc", run_id) == pytest.approx(theirs["qAcc"] / 100)
        assert f"aAcc {theirs['aAcc']:.1f}" in official_lines(report)[0]
        with pytest.raises(metrics.MetricUnavailable, match="multiple-choice"):
            metrics.compute(w, "mmmu_accuracy", run_id)  # an open run: not MMMU's


def test_a_benchmark_without_an_official_figure_reports_none(tmp_path, capsys):
    ws = tmp_path / "w.sqlite"
    rows = [{"index": 0, "image": _b64(0), "question": "q", "answer": "['a']"}]
    _import(capsys, ws, _write(tmp_path / "other.tsv", ["index", "image", "question", "answer"], rows), "other")
    run_id = _predict(
        capsys,
        ws,
        _write(tmp_path / "p.tsv", ["index", "question", "prediction"], [dict(rows[0], prediction="a")]),
        "other",
    )
    code, out, _ = _cli(capsys, ws, "report", run_id, "--json")
    assert code == 0 and "official" not in json.loads(out)
    assert metrics.official_metric("other", "other.tsv") is None
    assert metrics.official_metric("x", "MMMU_DEV_VAL.tsv").name == "mmmu_accuracy"
    assert metrics.official_metric("mmmu_val").name == "mmmu_accuracy"  # lmms-eval's task name
