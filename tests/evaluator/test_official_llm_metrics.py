"""MathVista's and MMVet's official figures (evaluator/scoring/official_mathvista.py, official_mmvet.py,
official_llm.py): each rule held to the reference's own code, copied below as the oracle from
open-compass/VLMEvalKit@e8e78f05f3080fe28154f2130321f17951c3be94 (vlmeval/dataset/utils/mathvista.py post_check,
vlmeval/utils/matching_util.py can_infer*, vlmeval/dataset/utils/mmvet.py MMVet_auxeval / MMVet_acc) and
EvolvingLMMs-Lab/lmms-eval@75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3 (lmms_eval/tasks/mathvista/mathvista_evals.py
normalize_extracted_answer / safe_equal); the LLM steps against a scripted OpenAI-compatible server on 127.0.0.1,
asserting the prompts and temperatures sent and that a second scoring sends nothing."""

from __future__ import annotations

import base64
import copy as cp
import csv
import re
from collections import defaultdict

import pytest

from db import catalog, open_workspace, runs
from db.errors import InvalidInput
from evaluator.analysis import official_llm_metrics
from evaluator.scoring import official_llm, official_mathvista, official_mmvet
from evaluator.scoring.official_mathvista import MathVistaItem
from tests.factories import png_bytes
from vlmdesk.cli import main

# ---- the oracle: VLMEvalKit's code as read at e8e78f05 (logging and VERBOSE branches left out) --------------------

_VERBOSE_ANSWER_RE = re.compile(r"(?i)(?:correct\s+)?answer\s+is\s+\**([ABCD])\**")


def ref_can_infer_option(answer, choices):
    if "Failed to obtain answer via API" in answer:
        return False
    reject_to_answer = [
        "Sorry, I can't help with images of people yet.",
        "I can't process this file.",
        "I'm sorry, but without the image provided",
        "Cannot determine the answer",
    ]
    for err in reject_to_answer:
        if err in answer:
            return "Z"

    def count_choice(splits, choices, prefix="", suffix=""):
        cnt = 0
        for c in choices:
            if prefix + c + suffix in splits:
                cnt += 1
        return cnt

    answer_mod = cp.copy(answer)
    chars = ".()[],:;!*#{}"
    for c in chars:
        answer_mod = answer_mod.replace(c, " ")
    splits = [x.strip() for x in answer_mod.split()]
    count = count_choice(splits, choices)
    if count == 1:
        for ch in choices:
            if ch in splits and splits.index(ch) > (len(splits) - 5):
                return ch
    elif count == 0 and count_choice(splits, {"Z", ""}) == 1:
        return "Z"
    match = _VERBOSE_ANSWER_RE.search(answer or "")
    if match and match.group(1).upper() in choices:
        return match.group(1).upper()
    return False


def ref_can_infer_text(answer, choices):
    answer = answer.lower()
    if len(answer) > 2 * sum(len(str(v)) for v in choices.values()):
        return False
    for k in choices:
        choices[k] = str(choices[k]).lower()
    cands = []
    for k in choices:
        if choices[k] in answer:
            cands.append(k)
    if len(cands) == 1:
        return cands[0]
    return False


def ref_can_infer(answer, choices):
    answer = str(answer)
    copt = ref_can_infer_option(answer, choices)
    return copt if copt else ref_can_infer_text(answer, choices)


def ref_post_check(line, prefetch=False):
    res = None
    ans = line["answer"]
    response = line["prediction"] if prefetch else line["res"]
    try:
        if line["question_type"] == "multi_choice":
            ans = line["answer_option"]
            choices = {chr(65 + i): val for i, val in enumerate(eval(line["choices"]))}
            res = ref_can_infer(response, choices)
            if prefetch:
                return res
        else:
            if line["answer_type"] == "integer":
                res = int(response)
                ans = int(line["answer"])
            elif line["answer_type"] == "float":
                res = float(response)
                ans = float(line["answer"])
            else:
                res = str(res)
                ans = str(ans)
    except ValueError:
        pass
    if res == ans:
        return res if prefetch else True
    else:
        return False


def ref_normalize_extracted_answer(extraction, choices, question_type, answer_type, precision):
    """lmms-eval's, with Levenshtein.distance replaced by the module's (tested on its own below)."""
    if question_type == "multi_choice":
        extraction = extraction.strip() if isinstance(extraction, str) else str(extraction)
        letter = re.findall(r"\(([a-zA-Z])\)", extraction)
        if len(letter) > 0:
            extraction = letter[0].upper()
        options = [chr(ord("A") + i) for i in range(len(choices))]
        if extraction in options:
            extraction = choices[options.index(extraction)]
        else:
            distances = [official_mathvista.levenshtein(extraction, c) for c in choices]
            extraction = choices[distances.index(min(distances))]
    elif answer_type == "integer":
        try:
            extraction = str(int(float(extraction)))
        except Exception:
            extraction = None
    elif answer_type == "float":
        try:
            extraction = str(round(float(extraction), precision))
        except Exception:
            extraction = None
    elif answer_type == "list":
        extraction = str(extraction)
    return extraction


def ref_safe_equal(prediction, answer):
    return str(prediction).strip() == str(answer).strip()


def ref_mmvet_accept(output):
    """MMVet_auxeval's per-try test: the score, or None where it logs a failure and tries again."""
    try:
        score = float(output)
    except ValueError:
        return None
    if score < 0 or score > 1:
        return None
    return score


# ---- MathVista rules ---------------------------------------------------------------------------------------------

CHOICES = ["3/11", "8/11", "6/11", "3/5"]
LINES = [
    # (question_type, answer_type, precision, choices, answer, answer_option)
    ("multi_choice", "text", None, CHOICES, "8/11", "B"),
    ("free_form", "integer", None, None, "14", None),
    ("free_form", "integer", None, None, "0", None),
    ("free_form", "float", 2, None, "1.45", None),
    ("free_form", "float", 1, None, "0.6", None),
    ("free_form", "list", None, None, "[2007, 2008]", None),
]
RESPONSES = [
    "B",
    "(B) 8/11",
    "The correct answer is (B) 8/11.",
    "The answer is **C**",
    "8/11",
    "3/11 or 8/11",
    "A",
    "Cannot determine the answer",
    "14",
    " 14 ",
    "14.0",
    "0",
    "1.45",
    "1.450",
    "1.4500001",
    "1.449",
    "0.6",
    "0.60",
    ".6",
    "[2007, 2008]",
    "2007, 2008",
    "",
    "nan",
    "Failed to obtain answer via API.",
]


def _mv(qt, at, precision, choices, answer, option) -> MathVistaItem:
    return MathVistaItem(1, 1, "q", answer, qt, at, precision, tuple(choices or ()), option, None, ())


def _line(qt, at, precision, choices, answer, option, **kw):
    return {
        "question_type": qt,
        "answer_type": at,
        "answer": answer,
        "answer_option": option,
        "choices": repr(choices),
        **kw,
    }


@pytest.mark.parametrize("spec", LINES, ids=[f"{s[0]}-{s[1]}-{s[4]}" for s in LINES])
def test_mathvista_post_check_equals_vlmevalkits_on_every_response(spec):
    mv = _mv(*spec)
    for response in RESPONSES:
        want_pre = ref_post_check(_line(*spec, prediction=response), prefetch=True)
        assert official_mathvista.post_check(mv, response, prefetch=True) == want_pre, response
        assert official_mathvista.prefetched(mv, response) == (str(want_pre) if want_pre else None), response
        want_hit = ref_post_check(_line(*spec, res=response), prefetch=False)
        assert official_mathvista.hit(mv, response) is bool(want_hit), response


def test_mathvista_rule_edge_cases_as_the_reference_reads_them():
    integer, zero, float2, listed = (_mv(*LINES[i]) for i in (1, 2, 3, 5))
    assert official_mathvista.hit(integer, "14.0") is False  # int('14.0') fails: wrong in VLMEvalKit
    assert official_mathvista.prefetched(zero, "0") is None  # right, but 0 is falsy: the judge is asked
    assert official_mathvista.hit(float2, "1.450") is True  # float equality, the precision unused
    assert official_mathvista.hit(float2, "1.4500001") is False
    assert official_mathvista.hit(listed, "[2007, 2008]") is False  # VLMEvalKit compares 'None' with the key
    letter = _mv(*LINES[0])
    assert official_mathvista.prefetched(letter, "The correct answer is (B) 8/11.") == "B"
    assert official_mathvista.prefetched(letter, "8/11") == "B"  # the option text, read by can_infer_text
    assert official_mathvista.prefetched(letter, "3/11 or 8/11") is None  # two texts: the judge reads it
    assert official_mathvista.prefetched(letter, "A") == "A"  # a wrong letter is still a reading: not asked
    assert official_mathvista.hit(letter, "A") is False


@pytest.mark.parametrize("spec", LINES, ids=[f"{s[0]}-{s[1]}-{s[4]}" for s in LINES])
def test_mathvista_typed_comparison_equals_the_reference(spec):
    mv = _mv(*spec)
    qt, at, precision, choices, answer, _ = spec
    for response in RESPONSES:
        want = ref_normalize_extracted_answer(response, choices or [], qt, at, precision)
        assert official_mathvista.normalize_extracted_answer(mv, response) == want, response
        assert official_mathvista.typed_hit(mv, response) is ref_safe_equal(want, answer), response


def test_typed_comparison_rounds_to_the_precision_and_reads_lists_and_option_texts():
    float2, listed, letter = _mv(*LINES[3]), _mv(*LINES[5]), _mv(*LINES[0])
    assert official_mathvista.typed_hit(float2, "1.4500001") is True  # round(·, 2)
    assert official_mathvista.typed_hit(float2, "1.449") is True
    assert official_mathvista.typed_hit(float2, "1.44") is False
    assert official_mathvista.typed_hit(listed, "[2007, 2008]") is True
    assert official_mathvista.typed_hit(listed, "[2007,2008]") is False  # text equality
    assert official_mathvista.typed_hit(letter, "(B) 8/11") is True
    assert official_mathvista.typed_hit(letter, "8/11") is True
    assert official_mathvista.typed_hit(letter, "8/12") is True  # the nearest option text by edit distance
    assert official_mathvista.typed_hit(letter, "9/11") is False  # as near 3/11 as 8/11: the first nearest
    assert official_mathvista.typed_hit(letter, "A") is False


def test_levenshtein_distance():
    assert official_mathvista.levenshtein("kitten", "sitting") == 3
    assert official_mathvista.levenshtein("", "abc") == 3
    assert official_mathvista.levenshtein("8/11", "3/11") == 1


def test_the_extraction_prompt_is_vlmevalkits():
    prompt = official_mathvista.build_prompt("Question: Which number is missing?", "It is 14.")
    assert prompt.startswith("\nPlease read the following example.\nThen extract the answer")
    assert prompt.count("Extracted answer:") == 6  # five examples and the item's
    assert "Extracted answer: [2007, 2008]\n" in prompt
    assert prompt.endswith("\nQuestion: Which number is missing?\nModel respone: It is 14.Extracted answer:")


def test_bad_item_metadata_is_one_line_naming_item_and_field():
    def item(**meta):
        return catalog.Item(
            7, 1, 0, 42, "q", None, (), None, None, None, None, "en", None, 0, {"references": ["14"], **meta}
        )

    with pytest.raises(InvalidInput, match=r"^MathVista item 42: question_type: missing"):
        official_mathvista.item_fields(item(answer_type="integer"))
    with pytest.raises(InvalidInput, match=r"^MathVista item 42: choices: not a Python list"):
        official_mathvista.item_fields(
            item(question_type="multi_choice", answer_type="text", choices="__import__('os')")
        )
    with pytest.raises(InvalidInput, match=r"^MathVista item 42: precision: "):
        official_mathvista.item_fields(item(question_type="free_form", answer_type="float", precision="2.5"))
    mv = official_mathvista.item_fields(
        item(question_type="free_form", answer_type="float", precision="2.0", skills="['a', 'b']", task="t")
    )
    assert (mv.precision, mv.skills, mv.task, mv.answer) == (2, ("a", "b"), "t", "14")
    assert official_mathvista.item_fields(
        item(question_type="free_form", answer_type="integer", skills="x y")
    ).skills == ("x y",)


# ---- MMVet rules -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply", ["0.5", "1.0", "0", "1", " 0.7 ", "1.1", "-0.1", "0.5 points", "", "Score: 0.4", "1e-1"]
)
def test_mmvet_score_reading_equals_the_reference(reply):
    assert official_mmvet.read_score(reply) == ref_mmvet_accept(reply)
    assert (official_mmvet._accept(reply) is None) is (ref_mmvet_accept(reply) is not None)


def test_the_mmvet_prompt_is_vlmevalkits():
    prompt = official_mmvet.build_prompt("What is x?", "-1<AND>-5", "x = -1")
    assert prompt.startswith("\nCompare the ground truth and prediction from AI models")
    assert "What is x in the equation? | -1 <AND> -5 | x = -1 or x = -5 | 1.0\n" in prompt
    assert prompt.endswith("and their actual physical characteristics. | 1.0\n\nWhat is x? | -1 <AND> -5 | x = -1 | ")


# ---- the LLM steps against a scripted server -----------------------------------------------------------------------


def cli(capsys, ws_path, *args):
    code = main(["--workspace", str(ws_path), *args])
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out


def _write_tsv(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


IMAGE = base64.b64encode(png_bytes()).decode()
# index, question, answer, question_type, answer_type, precision, choices, answer_option, task, skills, prediction
MV_ROWS = [
    (
        1,
        "Q1 pick",
        "8/11",
        "multi_choice",
        "text",
        "",
        repr(CHOICES),
        "B",
        "figure QA",
        "['algebraic reasoning']",
        "The correct answer is (B) 8/11.",
    ),  # rule: B, right
    (
        2,
        "Q2 count",
        "14",
        "free_form",
        "integer",
        "",
        "",
        "",
        "math word problem",
        "['arithmetic reasoning']",
        "There are 14 apples.",
    ),  # judge: 14, right
    (
        3,
        "Q3 cost",
        "1.45",
        "free_form",
        "float",
        "2.0",
        "",
        "",
        "math word problem",
        "['arithmetic reasoning', 'statistical reasoning']",
        "About 1.4500001 dollars.",
    ),  # judge: 1.4500001, wrong
    (
        4,
        "Q4 pick",
        "6/11",
        "multi_choice",
        "text",
        "",
        repr(CHOICES),
        "C",
        "figure QA",
        "['algebraic reasoning']",
        "3/11 or 6/11, hard to say",
    ),  # judge: C, right
    (
        5,
        "Q5 zero",
        "0",
        "free_form",
        "integer",
        "",
        "",
        "",
        "textbook question answering",
        "['logical reasoning']",
        "0",
    ),  # rule reads 0: falsy, so the judge is asked; replies 0
]


def mathvista_judge(text: str) -> str:
    question = re.search(r"\n(Q\d) [^\n]*\nModel respone: ", text).group(1)
    return {"Q2": "14", "Q3": "1.4500001", "Q4": "C", "Q5": "0"}[question]


@pytest.fixture
def mathvista_run(tmp_path, capsys):
    header = [
        "index",
        "image",
        "question",
        "answer",
        "question_type",
        "answer_type",
        "precision",
        "choices",
        "answer_option",
        "task",
        "skills",
    ]
    _write_tsv(tmp_path / "MathVista_MINI.tsv", header, [(r[0], IMAGE, *r[1:10]) for r in MV_ROWS])
    _write_tsv(tmp_path / "pred.tsv", ["index", "question", "prediction"], [(r[0], r[1], r[10]) for r in MV_ROWS])
    ws_path = tmp_path / "ws.sqlite"
    cli(capsys, ws_path, "import", str(tmp_path / "MathVista_MINI.tsv"), "--name", "mv")
    cli(capsys, ws_path, "import-predictions", str(tmp_path / "pred.tsv"), "--bench", "mv", "--model", "m")
    return ws_path


def _judge(server) -> str:
    return f"openai:judge-model@{server.url}"


def test_mathvista_asks_only_what_the_rule_cannot_read_and_a_second_scoring_asks_nothing(mathvista_run, serve):
    server = serve(respond=mathvista_judge)
    with open_workspace(mathvista_run) as ws:
        run_id = runs.list_runs(ws)[0].id
        assert official_llm_metrics.METRICS[0].compute(ws, run_id, None) is None  # never scored
        score = official_mathvista.score_mathvista(ws, run_id, _judge(server))
        sent = [r["body"] for r in server.requests]
        assert len(sent) == 4 and score.calls == 4  # Q1 read by the rule
        prompts = [official_mathvista.build_prompt(q, p) for _, q, *_rest, p in MV_ROWS[1:]]
        texts = sorted(_text(b) for b in sent)
        assert texts == sorted(prompts)
        assert all(b.get("temperature", 0) == 0 for b in sent)
        assert all(b.get("max_tokens", b.get("max_completion_tokens")) == 128 for b in sent)
        # VLMEvalKit's figures, from the oracle over the same extractions
        extractions = {1: "B", 2: "14", 3: "1.4500001", 4: "C", 5: "0"}
        hits = [
            bool(
                ref_post_check(
                    _line(r[3], r[4], None, eval(r[6]) if r[6] else None, r[2], r[7] or None, res=extractions[r[0]])
                )
            )
            for r in MV_ROWS
        ]
        assert hits == [True, True, False, True, True]
        assert score.accuracy == pytest.approx(sum(hits) / 5 * 100) == 80.0
        assert score.prefetched == 1 and score.left == 0
        assert score.groups["math word problem"] == {
            "tot": 2,
            "prefetch": 0,
            "hit": 1,
            "prefetch_rate": 0.0,
            "acc": 50.0,
        }
        assert score.groups["arithmetic reasoning"]["acc"] == 50.0
        assert score.groups["figure QA"]["prefetch_rate"] == 50.0
        # the typed comparison rounds Q3 to 2 decimals: right there
        assert score.typed_accuracy == 100.0

        again = official_mathvista.score_mathvista(ws, run_id, _judge(server))
        assert len(server.requests) == 4 and again.calls == 0
        assert again.to_json() | {"calls": 0} == score.to_json() | {"calls": 0}
        assert official_llm_metrics.METRICS[0].compute(ws, run_id, None) == 80.0
        assert official_llm_metrics.METRICS[1].compute(ws, run_id, None) == 100.0


def _text(body) -> str:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


MMVET_ROWS = [
    (1, "V1 What is x?", "-1<AND>-5", "rec,math", "x = -1"),  # 0.5
    (2, "V2 Read the sign", "STOP", "ocr", "It says STOP"),  # unparseable, then 1.0
    (3, "V3 Explain", "A joke", "rec,know,gen", "no idea"),  # never parseable: 0.0 after 5 tries
    (4, "V4 Count", "3<OR>three", "rec,spat", "three"),  # out of range, then 1.0
]


_GRADES: dict[str, list[str]] = {}


def _grade(text: str) -> str:
    key = re.search(r"\n(V\d) [^|\n]* \| [^\n]*$", text).group(1)
    queue = _GRADES.setdefault(
        key, {"V1": ["0.5"], "V2": ["Score: 1.0", "1.0"], "V3": ["I cannot grade this."], "V4": ["1.5", "1.0"]}[key]
    )
    return queue.pop(0) if len(queue) > 1 else queue[0]


@pytest.fixture
def mmvet_run(tmp_path, capsys):
    _GRADES.clear()
    _write_tsv(
        tmp_path / "MMVet.tsv",
        ["index", "image", "question", "answer", "category"],
        [(r[0], IMAGE, r[1], r[2], r[3]) for r in MMVET_ROWS],
    )
    _write_tsv(tmp_path / "pred.tsv", ["index", "question", "prediction"], [(r[0], r[1], r[4]) for r in MMVET_ROWS])
    ws_path = tmp_path / "ws.sqlite"
    cli(capsys, ws_path, "import", str(tmp_path / "MMVet.tsv"), "--name", "mmvet")
    cli(capsys, ws_path, "import-predictions", str(tmp_path / "pred.tsv"), "--bench", "mmvet", "--model", "m")
    return ws_path


def test_mmvet_retries_under_the_temperature_schedule_gives_up_at_zero_and_caches(mmvet_run, serve):
    server = serve(respond=_grade)
    with open_workspace(mmvet_run) as ws:
        run_id = runs.list_runs(ws)[0].id
        score = official_mmvet.score_mmvet(ws, run_id, _judge(server))
        per = defaultdict(list)
        for r in server.requests:
            text = _text(r["body"])
            per[re.search(r"\n(V\d) ", text).group(1)].append((r["body"].get("temperature", 0.0), text))
        assert {k: [t for t, _ in v] for k, v in per.items()} == {
            "V1": [0.0],
            "V2": [0.0, 0.5],
            "V3": [0.0, 0.5, 1.0, 1.5, 2.0],
            "V4": [0.0, 0.5],
        }
        for _index, question, answer, _, prediction in MMVET_ROWS:
            assert {t for _, t in per[question[:2]]} == {official_mmvet.build_prompt(question, answer, prediction)}
        grades = {1: 0.5, 2: 1.0, 3: 0.0, 4: 1.0}
        assert score.item_scores == {i: grades[r[0]] for i, r in zip(sorted(score.item_scores), MMVET_ROWS)}
        # MMVet_acc: overall, each capability an item's category names, each category set
        assert score.total == pytest.approx(62.5)
        assert score.capabilities["rec"] == {"tot": 3, "acc": pytest.approx(50.0)}
        assert score.capabilities["math"] == {"tot": 1, "acc": 50.0}
        assert score.capabilities["ocr"] == {"tot": 1, "acc": 100.0}
        assert score.capability_sets["rec_know_gen"] == {"tot": 1, "acc": 0.0}
        assert score.given_up == 1 and score.calls == 10
        stored = official_llm.stored(ws, official_mmvet.STEP, score.judge, [per["V3"][0][1]])
        (given_up,) = stored.values()
        assert given_up.reply is None and given_up.tries == 5
        assert (
            given_up.log.endswith("All 5 retries failed.\n")
            and "Try 0: output is I cannot grade this., failed" in given_up.log
        )

        before = len(server.requests)
        again = official_mmvet.score_mmvet(ws, run_id, _judge(server))
        assert len(server.requests) == before and again.calls == 0 and again.total == score.total
        assert official_llm_metrics.METRICS[2].compute(ws, run_id, None) == pytest.approx(62.5)


def test_a_read_only_workspace_or_a_bad_judge_asks_nothing(mmvet_run, serve):
    server = serve(respond=_grade)
    with open_workspace(mmvet_run) as ws:
        run_id = runs.list_runs(ws)[0].id
        with pytest.raises(InvalidInput, match="^judge: "):
            official_mmvet.score_mmvet(ws, run_id, "nonsense")
    assert server.requests == []


def test_at_temperature_replaces_the_specs_own_setting():
    assert official_llm.at_temperature("openai:m@http://h/v1", 0.5) == "openai:m@http://h/v1?temperature=0.5"
    assert official_llm.at_temperature("openai:m?temperature=0.7&timeout=9", 0.0) == "openai:m?timeout=9"
    assert official_llm.at_temperature("openai:m?temperature=0.7", 2.0) == "openai:m?temperature=2"


def test_the_official_command_refuses_a_benchmark_whose_figure_needs_no_judge(tmp_path, capsys):
    from vlmdesk.cli import main

    path = tmp_path / "w.sqlite"
    assert main(["--workspace", str(path), "demo"]) == 0
    assert main(["--workspace", str(path), "run", "--bench", "demo", "--model", "baseline:first", "--limit", "2"]) == 0
    capsys.readouterr()
    assert main(["--workspace", str(path), "official", "1", "--judge", "openai:m@http://127.0.0.1:9/v1"]) == 2
    err = capsys.readouterr().err
    assert "run 1 is on demo: it has no official figure" in err and len(err.strip().splitlines()) == 1


def test_the_official_command_scores_with_the_judge_once_and_the_report_shows_it_first(mathvista_run, serve, capsys):
    from vlmdesk.cli import main

    server = serve(respond=mathvista_judge)
    with open_workspace(mathvista_run) as ws:
        run_id = runs.list_runs(ws)[0].id
    args = ["--workspace", str(mathvista_run), "official", str(run_id), "--judge", _judge(server)]
    assert main(args) == 0
    out = capsys.readouterr().out.strip()
    assert "(official) 80.0 [" in out and len(server.requests) == 4  # with its 95 % interval, as the report says
    assert main(args) == 0 and len(server.requests) == 4  # stored: nothing asked again
    capsys.readouterr()
    assert main(["--workspace", str(mathvista_run), "report", str(run_id)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "official" in lines[1] and "80.0 [" in lines[1], lines[:3]  # first, under the title, with its interval
