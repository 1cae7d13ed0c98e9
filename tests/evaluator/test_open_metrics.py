"""Open metrics (evaluator/scoring/open_metrics.py) against the rules they restate: VQAv2's vqaEval.py and LVLM-eHub's
word match (tests/vqa_reference.py), ANLS as lmms-eval computes it (tests/evaluator/test_open_metric_references.py,
which holds every VQA rule and the issue-37 cases), coco-caption's own CiderScorer (the real
pycocoevalcap) on the same tokens, and Stanford's PTBTokenizer (the real jar, where Java is installed); then
item_scores and `vlmdesk report` on real open runs."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from db import catalog, open_workspace, runs
from db.errors import InvalidInput, NotFound
from evaluator.registry import PLUGINS_ENV
from evaluator.scoring import open_metrics
from evaluator.scoring.open_metrics import (
    OpenAnswer,
    anls,
    cider_d,
    exact_match,
    item_scores,
    normalize_answer,
    ptb_tokenize,
    vqa_accuracy,
    word_match,
)
from tests import vqa_reference as ref
from tests.open_references import HOSTILE, REFERENCE_SETS
from vlmdesk.cli import main
from vlmdesk.demo import demo_dir, ensure_demo


def _official(answer: str, references: list[str]) -> float:
    evaluation = ref.OfficialVQAEval({1: list(references)}, {1: answer})
    evaluation.evaluate()
    return evaluation.evalQA[1]


@pytest.mark.parametrize("references", REFERENCE_SETS, ids=range(len(REFERENCE_SETS)))
def test_vqa_accuracy_equals_the_official_vqaeval_on_hostile_answers(references):
    for answer in HOSTILE + references:
        assert vqa_accuracy(answer, references) == _official(answer, references), answer


def test_vqa_accuracy_reads_as_vqav2_says():
    tens = ["2"] * 3 + ["two"] * 7  # not all the same: both normalised, so all ten match
    assert vqa_accuracy("Two", tens) == 1.0
    assert vqa_accuracy("Nokia", ["Nokia"] * 10) == 1.0  # the answer as given (issue 37)
    assert vqa_accuracy("yes", ["Yes"] * 10) == 0.0  # ten identical references are not normalised (vqaEval.py)
    assert vqa_accuracy("Yes", ["yes"] * 10) == 0.0  # nor the answer then
    assert vqa_accuracy("dog", ["dog"] * 2 + ["cat"] * 8) == pytest.approx((2 * 1 / 3 + 8 * 2 / 3) / 10)
    assert vqa_accuracy("dog", ["dog"] * 3 + ["cat"] * 7) == pytest.approx((3 * 2 / 3 + 7 * 1) / 10)


WORDS = ["a", "the", "two", "2", "dog", "dogs", "yes", "no", "don't", "dont", "1,000", "3.5", "red", "stop", "sign"]
SIGNS = list(".,;:!?/-()[]\"'`_=+@<>\\ \t\n") + ["..", " . ", "é", "東"]
_text = st.lists(st.sampled_from(WORDS + SIGNS), max_size=8).map("".join) | st.text(max_size=12)


@settings(max_examples=300, deadline=None)
@given(answer=_text, references=st.lists(st.sampled_from(WORDS) | _text, min_size=1, max_size=10))
def test_vqa_accuracy_word_and_exact_match_equal_their_sources_on_any_text(answer, references):
    assert vqa_accuracy(answer, references) == _official(answer, references)
    assert word_match(answer, references) == ref.lvlm_ehub_evaluate(answer, references)
    norm = [
        ref.process_digit_article(ref.process_punctuation(r.replace("\n", " ").replace("\t", " ").strip()))
        for r in references
    ]
    mine = ref.process_digit_article(ref.process_punctuation(answer.replace("\n", " ").replace("\t", " ").strip()))
    assert exact_match(answer, references) == float(mine in norm)


def test_word_and_exact_match_on_examples():
    assert word_match("I think it is a red stop sign.", ["Stop sign"]) == 1.0
    assert word_match("stops", ["stop"]) == 0.0  # whole words only
    assert word_match("There are two dogs", ["2 dogs"]) == 1.0  # both read "two" as 2
    assert exact_match("The Dog.", ["dog"]) == 1.0 and exact_match("a dog sleeps", ["dog"]) == 0.0
    assert normalize_answer("Don't know, the TWO cats!") == "dont know two cats" or normalize_answer(
        "Don't know, the TWO cats!"
    ) == ref.process_digit_article(ref.process_punctuation("Don't know, the TWO cats!"))
    for answer in HOSTILE:
        assert word_match(answer, HOSTILE[3:9]) == ref.lvlm_ehub_evaluate(answer, HOSTILE[3:9])


# ANLS on any text against lmms-eval's and VLMEvalKit's: tests/evaluator/test_open_metric_references.py


def test_anls_threshold_and_cases():
    assert anls("helo", ["hello"]) == pytest.approx(0.8)
    assert anls("  HELLO  world ", ["hello world"]) == 1.0  # case and spaces
    assert anls("ab", ["abcd"]) == 0.5  # exactly 0.5 is kept
    assert anls("a", ["abcd"]) == 0.0  # 0.25 is under the threshold
    assert anls("", [""]) == 1.0 and anls("x", ["nope", "x"]) == 1.0  # the closest reference counts
    from tests.open_references import lmms_anls

    for answer in HOSTILE:
        assert anls(answer, HOSTILE[10:20]) == pytest.approx(lmms_anls(HOSTILE[10:20], answer), abs=1e-12)


def _coco_cider(pairs):
    from pycocoevalcap.cider.cider_scorer import CiderScorer

    scorer = CiderScorer(n=4, sigma=6.0)
    for candidate, refs in pairs:
        scorer += (candidate, list(refs))
    _, scores = scorer.compute_score()
    return [float(s) for s in scores]


def _demo_captions() -> list[tuple[str, list[str]]]:
    lines = [json.loads(line) for line in (demo_dir() / "demo_open.jsonl").read_text().splitlines()]
    answers = [line["answer"] for line in lines]
    # Each demo reference as a candidate against all of the references, a truncated one and an unrelated one.
    pairs = [(ptb_tokenize(a), [ptb_tokenize(r) for r in answers]) for a in answers]
    pairs += [(ptb_tokenize(" ".join(a.split()[:6])), [ptb_tokenize(a)]) for a in answers]
    return pairs + [(ptb_tokenize("a photo of something"), [ptb_tokenize(answers[0]), ptb_tokenize(answers[1])])]


def test_cider_equals_pycocoevalcaps_cider_scorer_on_the_demo_captions():
    pairs = _demo_captions()
    mine = cider_d(pairs)
    assert mine == pytest.approx(_coco_cider(pairs), rel=1e-12, abs=1e-12)
    assert max(mine) > 1.0 and min(mine) < 0.1  # a real spread, not all zeros


VOCAB = ["a", "cat", "dog", "on", "the", "mat", "red", "sits", "runs", "grass"]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from(VOCAB), max_size=9).map(" ".join),
            st.lists(st.lists(st.sampled_from(VOCAB), min_size=1, max_size=9).map(" ".join), min_size=1, max_size=5),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_cider_equals_pycocoevalcaps_cider_scorer_on_any_corpus(pairs):
    assert cider_d(pairs) == pytest.approx(_coco_cider(pairs), rel=1e-12, abs=1e-12)


JAR = "stanford-corenlp-3.4.1.jar"
CAPTIONS = [
    "A man's dog, isn't it? (Yes) colour \"quoted\" text.",
    "The U.S. cars cost $5.50 - 3:30pm... e.g. don't can't won't I'm we'll they'd",
    "Two-tone cat & dog; 50% off {x} [y] o'clock",
    "Hello... world!!  wow -- ok 1,000 3.14 a.m. Mr. Smith",
    "café naïve – em—dash “smart” ‘quotes’ …",
    "A group of people standing around a kitchen.",
    "Two dogs' toys lie on the grass: a ball and a rope.",
    "A close-up of a tabby cat with yellowish-green eyes.",
    "It's 5 o'clock; the children's bikes are outside!",
    "A sign that says 'STOP' at an intersection",
    "A man riding a wave on top of a surfboard.",
    "Two giraffes standing next to each other in a field.",
    "A plate with a sandwich and fries on it",
    "The cat is sitting on the laptop's keyboard.",
    "A kitchen with wooden cabinets & a stainless-steel fridge.",
    "There's a bus parked by the curb; people wait nearby.",
    "An old photo (black-and-white) of a street, circa 1920s.",
    'A sign reading "No Parking 8am-6pm".',
    "Children play soccer at 5:30 p.m. in the park.",
    "A 2-year-old boy eats cake!!!",
    "He said: \"I can't believe it's not butter.\"",
    "The dog's owner isn't home, so it waits...",
    "Someone's umbrella -- a red one -- lies open.",
    "A close up of a pizza w/ pepperoni and cheese.",
    "A woman holding a Wii controller in her hands",
    "A street sign at the corner of 5th Ave. and Main St.",
    "A vase with flowers sitting on a table, next to a window",
    "Mr. Brown's car is a 1967 Ford Mustang.",
    "Tennis player swinging at the ball -- it's mid-air.",
    "I'd say they're at a zoo; we'll see.",
    "What's that? A U.F.O.?",
    "An e-mail on the screen reads hello@example.com",
    "Price: $3.99/lb, 20% off.",
    "A #1 fan holds a sign.",
    "The temperature is 30°C outside",
    "Look at https://example.com/page now",
    "Cats' toys and dogs' beds",
    "'Tis the season",
    "He's gonna go",
    "The year '99 was good",
]


def test_ptb_tokenize_gives_stanford_ptbtokenizers_tokens_as_coco_caption_keeps_them(tmp_path):
    pytest.importorskip("pycocoevalcap")
    from pycocoevalcap.tokenizer import ptbtokenizer

    jar = Path(ptbtokenizer.__file__).with_name(JAR)
    if shutil.which("java") is None or not jar.is_file():
        pytest.skip("needs Java and pycocoevalcap's Stanford CoreNLP jar")
    demo = [json.loads(line)["answer"] for line in (demo_dir() / "demo_open.jsonl").read_text().splitlines()]
    sentences = CAPTIONS + demo
    captions = {i: [{"caption": s}] for i, s in enumerate(sentences)}
    # pycocoevalcap writes its temporary file next to the jar: a link to the jar in tmp_path keeps site-packages clean.
    (tmp_path / JAR).symlink_to(jar)
    monkey = ptbtokenizer.__file__
    try:
        ptbtokenizer.__file__ = str(tmp_path / "ptbtokenizer.py")
        official = ptbtokenizer.PTBTokenizer().tokenize(captions)
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"the PTBTokenizer jar does not run here: {exc}")
    finally:
        ptbtokenizer.__file__ = monkey
    for i, sentence in enumerate(sentences):
        assert ptb_tokenize(sentence) == official[i][0], sentence


# --- item_scores and the report on real open runs ------------------------------------------------------------------


def cli(capsys, ws_path, *args) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["--workspace", str(ws_path), *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


ANSWERS = {  # demo-open question -> the answer the parrot gives (the rest: "no idea")
    "Describe the cat's face": "A close-up of a tabby cat with green eyes and a pink nose; a blurred background.",
    "What is on the table": "A red cup of espresso on a red saucer with a spoon.",
    # The whole reference inside a longer answer: word_match right, exact_match wrong.
    "How many coins": "I count 24 coins in four rows of six on a dark background; they look like ancient coins "
    "showing heads and figures!",
    # The reference in other case and punctuation: exact_match right.
    "What is the man doing": "he is looking through a camera mounted on a tripod standing on a lawn with buildings "
    "in the distance - the photo is black and white",
}


@pytest.fixture
def open_run(tmp_path, monkeypatch, capsys):
    """The demo workspace with an open run of the parrot on demo-open (run 1) and a circular run on demo (run 2)."""
    monkeypatch.setenv(PLUGINS_ENV, "tests.open_plugins")
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps(ANSWERS))
    ws_path = tmp_path / "ws.sqlite"
    with open_workspace(ws_path) as ws:
        ensure_demo(ws)
    assert cli(capsys, ws_path, "run", "--bench", "demo-open", "--model", f"parrot:{answers}")[0] == 0
    assert cli(capsys, ws_path, "run", "--bench", "demo", "--model", "baseline:first")[0] == 0
    return ws_path


def test_item_scores_score_each_answered_item_with_references_by_every_rule(open_run):
    with open_workspace(open_run) as ws:
        run = runs.get_run(ws, 1)
        assert run is not None and run.strategy == "open"
        items = {i.id: i for i in runs.items_of(ws, run)}
        responses = {p.item_id: p.response for p in runs.predictions_of(ws, 1)}
        found = item_scores(ws, 1)
        builtin = ["exact_match", "word_match", "anls", "cider"]  # not vqa_accuracy: the demo has one reference each
        assert list(found)[:4] == builtin and found["answered_chars"]  # the plugin's entry, from the workspace
        for name, rule in (("exact_match", exact_match), ("word_match", word_match), ("anls", anls)):
            assert found[name] == {i: rule(responses[i], items[i].references) for i in items}
        pairs = [(ptb_tokenize(responses[i]), [ptb_tokenize(r) for r in items[i].references]) for i in items]
        assert list(found["cider"].values()) == pytest.approx(_coco_cider(pairs), rel=1e-12)
        assert max(found["cider"].values()) > 0.5 and sorted(found["cider"].values())[0] == 0.0
        assert set(found["answered_chars"]) == {i for i in items if i % 2 == 0}
        assert item_scores(ws, 1, names=["anls"]) == {"anls": found["anls"]}
        assert item_scores(ws, 2) == {}  # a multiple-choice run: no open metric applies
        with pytest.raises(InvalidInput, match="unknown open metric 'bleu'"):
            item_scores(ws, 1, names=["bleu"])
        with pytest.raises(NotFound):
            item_scores(ws, 99)


def test_report_json_carries_the_metrics_overall_and_per_category(open_run, capsys):
    code, out, err = cli(capsys, open_run, "report", "1", "--json")
    assert code == 0, err
    report = json.loads(out)
    with open_workspace(open_run) as ws:
        scores = item_scores(ws, 1)
        category = {i.id: i.category for i in catalog.list_items(ws, runs.get_run(ws, 1).benchmark_id)}
    assert report["metrics"] == pytest.approx({k: sum(v.values()) / len(v) for k, v in scores.items()})
    assert report["metrics"]["word_match"] == 2 / 8 and report["metrics"]["exact_match"] == 1 / 8
    assert 0 < report["metrics"]["anls"] < 1 and report["metric_scales"]["cider"] == "cider"
    assert (report["answered"], report["unanswered"], report["unreferenced"]) == (8, 0, 0)
    assert report["undecided"] == 0  # nothing is extracted from an open answer
    description = [i for i, c in category.items() if c == "description"]
    assert report["by_category"]["description"]["items"] == len(description)
    assert report["by_category"]["description"]["metrics"]["anls"] == pytest.approx(
        sum(scores["anls"][i] for i in description) / len(description)
    )
    code, out, _ = cli(capsys, open_run, "report", "1")
    assert code == 0 and "exact_match" in out and "-- leaf category" in out and "counting" in out
    plot = open_run.parent / "open.png"
    assert cli(capsys, open_run, "report", "1", "--plot", plot)[0] == 0 and plot.stat().st_size > 1000
    code, _, err = cli(capsys, open_run, "report", "1", "2", "--plot", open_run.parent / "mixed.png")
    assert code == 2 and "cannot plot POPE, open and multiple-choice runs in one chart" in err
    code, out, _ = cli(capsys, open_run, "run-items", "1", "--level", "category", "--group", "counting", "--json")
    (found,) = json.loads(out)
    mine = {name: by_item[i] for name, by_item in scores.items() if (i := found["item_id"]) in by_item}
    assert code == 0 and found["scores"] == mine and found["category"] == "counting"
    code, _, err = cli(capsys, open_run, "run-items", "1", "--level", "l2", "--group", "x")
    assert code == 2 and "grouped by leaf category only" in err


def test_an_open_run_on_the_demo_with_a_baseline_reports_every_builtin_metric_that_applies(tmp_path, capsys):
    ws_path = tmp_path / "ws.sqlite"
    assert cli(capsys, ws_path, "import", demo_dir() / "demo_open.jsonl", "--name", "o")[0] == 0
    assert cli(capsys, ws_path, "run", "--bench", "o", "--model", "baseline:first")[0] == 0
    code, out, err = cli(capsys, ws_path, "report", "1", "--json")
    assert code == 0, err
    metrics = json.loads(out)["metrics"]
    # vqa_accuracy needs four references or more; the demo's items have one each
    assert list(metrics) == ["exact_match", "word_match", "anls", "cider"]
    assert metrics == {name: 0.0 for name in metrics}  # "A" matches no demo reference by any rule


def test_items_without_references_are_left_out_and_counted(tmp_path, capsys):
    src = tmp_path / "o.jsonl"
    (tmp_path / "img.png").write_bytes((demo_dir() / "images" / "cat.jpg").read_bytes())
    lines = [{"index": 1, "question": "Q1", "image": "img.png", "answer": ["A", "a", "b", "b"]}]
    lines += [{"index": 2, "question": "Q2", "image": "img.png"}]
    src.write_text("".join(json.dumps(line) + "\n" for line in lines))
    ws_path = tmp_path / "ws.sqlite"
    assert cli(capsys, ws_path, "import", src, "--name", "o")[0] == 0
    assert cli(capsys, ws_path, "run", "--bench", "o", "--model", "baseline:first")[0] == 0
    with open_workspace(ws_path) as ws:
        found = item_scores(ws, 1)
        every = [name for name in open_metrics.REGISTRY.names() if name != "judge"]  # judge: once a judge has judged
        assert {name: list(s) for name, s in found.items()} == {name: [1] for name in every}
        # "A" is an article: normalised away, like the references "A" and "a".
        assert found["exact_match"] == {1: 1.0} and found["vqa_accuracy"] == {1: _official("A", ["A", "a", "b", "b"])}
    report = json.loads(cli(capsys, ws_path, "report", "1", "--json")[1])
    assert (report["answered"], report["unreferenced"]) == (2, 1)
    assert "left out: 1 answer(s) without references" in cli(capsys, ws_path, "report", "1")[1]


def test_vqa_accuracy_scores_only_items_with_four_references_or_more():
    """With fewer than four references no answer can score 1 (three others must agree): such items are not scored
    by vqa_accuracy, while the other metrics score them."""
    answers = [OpenAnswer(1, "dog", ("dog", "dog", "dog")), OpenAnswer(2, "dog", ("dog",) * 4)]
    found = open_metrics.score_answers(None, 0, answers, ["vqa_accuracy", "exact_match"])
    assert found == {"vqa_accuracy": {2: 1.0}, "exact_match": {1: 1.0, 2: 1.0}}


@pytest.mark.parametrize("unit", ["a+", "x@", "a.", "1,", "a'", ".!?-", "(a)", "東", "\u202e", "a\x00"])
def test_long_hostile_answers_are_scored_within_range(unit):
    """Answers of 100,000 repeated signs go through every rule (the tokeniser's patterns are linear: an e-mail
    address is tried once per run of signs, at most 64 long) and stay in range."""
    answer = unit * (100_000 // len(unit))
    references = [unit * 3, "a cat", answer[:5000]]
    for rule in (exact_match, word_match, vqa_accuracy, anls):
        assert 0.0 <= rule(answer, references) <= 1.0
    assert ptb_tokenize(answer) == ptb_tokenize(answer)  # deterministic
    (score,) = cider_d([(ptb_tokenize(answer), [ptb_tokenize(r) for r in references])])
    assert score == 0.0  # one item: log(1) = 0 weights every n-gram to nothing, as in CiderScorer
