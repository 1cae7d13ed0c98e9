"""Open metrics equal to the reference tools, case by case and item by item (issue 37, "Open metrics exactly as the
reference tools compute them"). The references are restated in tests/open_references.py, from the commits named:

- vqaEval.py: GT-Vision-Lab/VQA PythonEvaluationTools/vqaEvaluation/vqaEval.py
  @ a013f0043c1e2cdc995922dfe257f7149aa9af06 (restated in tests/vqa_reference.py, `OfficialVQAEval`).
- lmms-eval: EvolvingLMMs-Lab/lmms-eval @ 75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3:
  lmms_eval/tasks/_task_utils/vqa_eval_metric.py (EvalAIAnswerProcessor), lmms_eval/tasks/textvqa/utils.py
  (textvqa_process_results; ok_vqa/utils.py's is the same), lmms_eval/api/metrics.py (anls, levenshtein_distance).
- VLMEvalKit: open-compass/VLMEvalKit @ e8e78f05f3080fe28154f2130321f17951c3be94: vlmeval/dataset/utils/vqa_eval.py
  (process_answer, process_line 'vqa_score', anls_compute, levenshtein_distance), vlmeval/smp/misc.py
  (process_punctuation).
- POPE: RUCAIBox/POPE evaluate.py (restated in evaluator/scoring/pope.py parse_official, held to it in test_pope.py).
- Stanford PTBTokenizer: the stanford-corenlp-3.4.1.jar pycocoevalcap ships, run as its ptbtokenizer.py runs it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from db import catalog, open_workspace
from evaluator.scoring import open_item, open_metrics
from evaluator.scoring.open_metrics import anls, vqa_accuracy, vqa_rule
from tests.open_references import (
    HOSTILE,
    REFERENCE_OF,
    REFERENCE_SETS,
    lmms_anls,
    lmms_textvqa,
    vlmevalkit_anls,
)
from vlmdesk.cli import main
from vlmdesk.demo import demo_dir

# --- the issue's cases -------------------------------------------------------------------------------------------

ISSUE_CASES = [
    ("man's", ["man's"] * 4),
    ("He's happy!", ["He's happy!"] * 4),
    ("McDonald's", ["McDonald's"] * 4),
    ("Nokia", ["Nokia"] * 10),
]


@pytest.mark.parametrize(("answer", "references"), ISSUE_CASES, ids=[c[0] for c in ISSUE_CASES])
@pytest.mark.parametrize("rule", list(open_metrics.VQA_RULES))
def test_the_issues_vqa_cases_equal_each_reference(rule, answer, references):
    """An answer equal to every reference scores 1 under each tool, as each tool scores it (vlmdesk scored these 0
    when it read the answer as an EvalAI submission and the references not)."""
    assert REFERENCE_OF[rule](answer, references) == 1.0
    assert vqa_accuracy(answer, references, rule) == 1.0


def test_the_rules_differ_where_their_tools_differ():
    cases = {
        ("Yes", ("yes",) * 10): {"vqaeval": 0.0, "evalai": 1.0, "vlmevalkit": 1.0},  # unanimous: not normalised
        ("what's up?", ("whats up",) * 4 + ("y",)): {"vqaeval": 1.0, "evalai": 0.0, "vlmevalkit": 1.0},  # 's split
        ("man's", ("man 's",) * 4 + ("y",)): {"vqaeval": 0.0, "evalai": 1.0, "vlmevalkit": 0.0},
        ("3.x", ("3x",) * 4 + ("y",)): {"vqaeval": 1.0, "evalai": 1.0, "vlmevalkit": 0.0},  # lookahead vs lookbehind
        ("5.", ("5",) * 4 + ("y",)): {"vqaeval": 1.0, "evalai": 1.0, "vlmevalkit": 0.0},
    }
    for (answer, references), want in cases.items():
        for rule, value in want.items():
            assert REFERENCE_OF[rule](answer, list(references)) == value, (rule, answer)
            assert vqa_accuracy(answer, references, rule) == value, (rule, answer)


WORDS = ["a", "the", "two", "2", "dog", "man's", "He's", "don't", "dont", "1,000", "3.5", "Nokia", "café", "東京"]
SIGNS = list(".,;:!?/-()[]\"'`_=+@<>\\ \t\n") + ["..", " . ", "'s", "ß", "É", "\u00a0", "٣"]
_text = st.lists(st.sampled_from(WORDS + SIGNS), max_size=8).map("".join) | st.text(max_size=12)


@pytest.mark.parametrize("rule", list(open_metrics.VQA_RULES))
def test_each_vqa_rule_equals_its_reference_on_a_corpus_item_for_item(rule):
    for references in REFERENCE_SETS + [r for _, r in ISSUE_CASES]:
        for answer in HOSTILE + references + [a for a, _ in ISSUE_CASES]:
            assert vqa_accuracy(answer, references, rule) == REFERENCE_OF[rule](answer, references), (answer, rule)


@settings(max_examples=300, deadline=None)
@given(answer=_text, references=st.lists(st.sampled_from(WORDS) | _text, min_size=1, max_size=10))
def test_each_vqa_rule_equals_its_reference_on_any_text(answer, references):
    for rule, reference in REFERENCE_OF.items():
        assert vqa_accuracy(answer, references, rule) == reference(answer, references), rule


def test_a_benchmark_selects_its_rule_by_meta_name_or_source_file():
    assert vqa_rule("vqav2_val") == "vqaeval" and vqa_rule(None) == "vqaeval" and vqa_rule("mine") == "vqaeval"
    assert vqa_rule("textvqa_val") == "evalai" and vqa_rule("ok_vqa_val2014") == "evalai"
    assert vqa_rule("TextVQA_VAL") == "vlmevalkit"  # VLMEvalKit's TSV: the OpenVLM leaderboard's figures
    assert vqa_rule("renamed", {"source_file": "TextVQA_VAL.tsv"}) == "vlmevalkit"
    assert vqa_rule("textvqa_val", {"vqa_rule": "vqaeval"}) == "vqaeval"  # the meta names it outright
    assert vqa_rule("textvqa_val", {"vqa_rule": "nonsense"}) == "evalai"  # an unknown name is not a rule
    with pytest.raises(open_metrics.InvalidInput, match="unknown VQA rule"):
        vqa_accuracy("a", ["a"] * 4, "bogus")


def _cli(capsys, ws_path, *args):
    capsys.readouterr()
    code = main(["--workspace", str(ws_path), *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_stored_run_is_scored_by_its_benchmarks_rule_in_the_report_and_per_item(tmp_path, capsys):
    """The same answers on the same items, imported as `textvqa_val` (lmms-eval's rule) and as `mine` (vqaEval.py's):
    each run's vqa_accuracy is its tool's number, and an item's own score (Review, Browse) agrees when given the
    benchmark."""
    (tmp_path / "img.png").write_bytes((demo_dir() / "images" / "cat.jpg").read_bytes())
    lines = [
        {"index": i, "question": f"Q{i}", "image": "img.png", "answer": refs}
        for i, (_, refs) in enumerate(ISSUE_CASES[:1] + [("Yes", ["yes"] * 10), ("x", ["what's up"] * 4)], 1)
    ]
    src = tmp_path / "vqa.jsonl"
    src.write_text("".join(json.dumps(line) + "\n" for line in lines))
    ws_path = tmp_path / "ws.sqlite"
    answers = {"1": "man's", "2": "Yes", "3": "What's up?"}
    for name in ("textvqa_val", "mine"):
        copy = tmp_path / f"{name}.jsonl"
        copy.write_text(src.read_text().replace('"Q', f'"{name} Q'))
        assert _cli(capsys, ws_path, "import", copy, "--name", name)[0] == 0
    results = {}
    with open_workspace(ws_path) as ws:
        for name in ("textvqa_val", "mine"):
            bench = catalog.benchmark_by_name(ws, name)
            assert bench is not None
            items = catalog.list_items(ws, bench.id)
            pred = tmp_path / f"pred_{name}.tsv"
            rows = ["index\tquestion\tanswer\tprediction"]
            rows += [f"{i.index}\t{i.question}\t{i.answer or ''}\t{answers[str(i.index)]}" for i in items]
            pred.write_text("\n".join(rows) + "\n")
            results[name] = (items, pred)
    for name in ("textvqa_val", "mine"):
        items, pred = results[name]
        code, out, err = _cli(capsys, ws_path, "import-predictions", pred, "--bench", name, "--model", "m", "--json")
        assert code == 0, err
        report = json.loads(_cli(capsys, ws_path, "report", json.loads(out)["run_id"], "--json")[1])
        rule = vqa_rule(name)
        tool = REFERENCE_OF[rule]
        want = [tool(answers[str(i.index)], list(i.references)) for i in items]
        assert report["metrics"]["vqa_accuracy"] == pytest.approx(sum(want) / len(want))
        for item, value in zip(items, want):
            assert open_item.item_scores(answers[str(item.index)], item.references, name)["vqa_accuracy"] == value
    # lmms-eval reads "Yes" and "What's up?" as their unanimous references, vqaEval.py neither: the two runs differ.
    assert rule == "vqaeval" and want == [1.0, 0.0, 0.0]
    assert [lmms_textvqa(answers[str(i.index)], list(i.references)) for i in items] == [1.0, 1.0, 1.0]


# --- ANLS ----------------------------------------------------------------------------------------------------------


def test_anls_divides_by_the_raw_lengths_as_lmms_eval_and_vlmevalkit():
    answer, references = "$1,243.56\n", ["$1,234.56"]
    assert lmms_anls(references, answer) == pytest.approx(0.80) == vlmevalkit_anls(references, answer)
    assert anls(answer, references) == pytest.approx(0.80)  # vlmdesk divided by the cleaned lengths: 0.7778
    for answer, references in (("a  b", ["a b"]), ("straße", ["strasse"]), (" x ", ["x"]), ("İ", ["i"])):
        assert anls(answer, references) == pytest.approx(lmms_anls(references, answer), abs=1e-12)


@settings(max_examples=300, deadline=None)
@given(answer=_text, references=st.lists(_text, min_size=1, max_size=5))
def test_anls_equals_lmms_eval_and_vlmevalkit_on_any_text(answer, references):
    assert anls(answer, references) == pytest.approx(lmms_anls(references, answer), abs=1e-12)
    assert anls(answer, references) == pytest.approx(vlmevalkit_anls(references, answer), abs=1e-12)


# --- POPE: an empty prediction read as "yes" ---------------------------------------------------------------------


def pope_f1(labels: list[str], answers: list[str]) -> tuple[int, float]:
    """RUCAIBox/POPE evaluate.py: the first sentence, commas dropped, "No"/"not"/"no" among its words is no, anything
    else (an empty answer too) yes; F1 with yes the positive class."""
    read = []
    for text in answers:
        if text.find(".") != -1:
            text = text.split(".")[0]
        words = text.replace(",", "").split(" ")
        read.append("no" if ("No" in words or "not" in words or "no" in words) else "yes")
    tp = sum(a == "yes" == b for a, b in zip(read, labels))
    fp = sum(a == "yes" != b for a, b in zip(read, labels))
    fn = sum(a == "no" != b for a, b in zip(read, labels))
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    return len(read), 2 * precision * recall / (precision + recall)


def test_an_imported_pope_file_with_an_empty_answer_reproduces_the_scripts_f1(tmp_path, capsys):
    """72 questions, one answered "" (labelled yes): POPE's script reads it as yes, F1 0.6747 over 72; leaving it out
    as unasked gave 71 questions and 0.6667."""
    (tmp_path / "img.png").write_bytes((demo_dir() / "images" / "cat.jpg").read_bytes())
    labels = ["yes"] * 36 + ["no"] * 36
    said = ["Yes, there is."] * 27 + [""] + ["No."] * 8 + ["Yes"] * 19 + ["no"] * 17
    questions = [
        {"question_id": i, "image": "img.png", "text": f"Is there a thing {i} in the image?", "label": label}
        for i, label in enumerate(labels, 1)
    ]
    src = tmp_path / "pope.jsonl"
    src.write_text("".join(json.dumps(q) + "\n" for q in questions))
    ws_path = tmp_path / "ws.sqlite"
    code, _, err = _cli(capsys, ws_path, "import", src, "--format", "pope", "--name", "p")
    assert code == 0, err
    samples = tmp_path / "samples_pope.jsonl"
    with open(samples, "w") as f:
        for n, (q, text) in enumerate(zip(questions, said)):
            doc = {"question_id": str(q["question_id"]), "question": q["text"], "answer": q["label"]}
            f.write(json.dumps({"doc_id": n, "doc": doc, "target": q["label"], "filtered_resps": [text]}) + "\n")
    code, out, err = _cli(capsys, ws_path, "import-predictions", samples, "--bench", "p", "--model", "m", "--json")
    assert code == 0, err
    done = json.loads(out)
    assert (done["passes"], done["unasked"], done["empty_answers"]) == (72, 0, 1)
    assert done["notes"] == ['1 empty prediction(s) stored as answers and read as "yes", as POPE\'s evaluate.py '
                             "reads them, as the reference tools score them"]  # fmt: skip
    n, f1 = pope_f1(labels, said)
    assert (n, round(f1, 4)) == (72, 0.6747)
    report = json.loads(_cli(capsys, ws_path, "report", done["run_id"], "--json")[1])
    official = report["pope"]["official"]
    assert official["questions"] == 72 and official["f1"] == pytest.approx(f1, abs=1e-12)


# --- CIDEr's tokenizer against Stanford's PTBTokenizer -------------------------------------------------------------

JAR = "stanford-corenlp-3.4.1.jar"
DOCUMENT_TEXTS = [
    "a red/white sign on 3/3/98 by J. R. Smith",
    "see No. 5 on p. 12 of the report",
    "call 555-1234 or (212) 555-1234 or 1-800-555-1234",
    "the man 's hat and John 's car",
    "Fig. 3 shows U.S.A. and Dr. Who vs. Mr. X",
    "dated 12/31/2019 at 10:30 a.m. for $1,234.56",
    "A.B. Jones, Inc. and Co. Ltd.",
    "and/or the w/o option, 1/2 cup",
    "Tel. 212 555 1234 and +1 212 555 1234",
    "Pat. No. 4,123,456 issued Jan. 5, 1999",
    "Vol. 3, pp. 45-67, ed. by A. Smith et al.",
    "the children 's books and the boss ' office",
    "Memo to R.J. Reynolds re: budget",
    "I got an A.",
    "see fig. 3 and fig. here; No. way",
    "Jan. was cold. Inc. He said",
    "'m 're 've 'll 'd 'em 'n and rock 'n' roll",
    "+44 20 7946 0958 and 020 7946 0958 and (02) 9999 1234 and 555.123.4567",
    "a/b/c and 1/2/3/4 and x / y and /usr/bin and http/2",
    "Ph.D. and Ed.D and St. Louis and Mt. Fuji",
]


def _ptb(sentences: list[str], tmp_path: Path) -> list[str]:
    from pycocoevalcap.tokenizer import ptbtokenizer

    jar = Path(ptbtokenizer.__file__).with_name(JAR)
    if shutil.which("java") is None or not jar.is_file():
        pytest.skip("needs Java and pycocoevalcap's Stanford CoreNLP jar")
    (tmp_path / JAR).symlink_to(jar)
    captions = {i: [{"caption": s}] for i, s in enumerate(sentences)}
    kept = ptbtokenizer.__file__
    try:  # it writes its temporary file beside the jar: a link in tmp_path keeps site-packages clean
        ptbtokenizer.__file__ = str(tmp_path / "ptbtokenizer.py")
        found = ptbtokenizer.PTBTokenizer().tokenize(captions)
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"the PTBTokenizer jar does not run here: {exc}")
    finally:
        ptbtokenizer.__file__ = kept
    return [found[i][0] for i in range(len(sentences))]


def test_ptb_tokenize_equals_stanfords_tokenizer_on_document_texts(tmp_path):
    """The words CIDEr reads (CiderScorer splits on white space): the jar keeps a phone number as one token with
    no-break spaces inside ("212\u00a0555\u00a01234"), which splits into the same words."""
    official = _ptb(DOCUMENT_TEXTS, tmp_path)
    assert [open_metrics.ptb_tokenize(s).split() for s in DOCUMENT_TEXTS] == [o.split() for o in official]
