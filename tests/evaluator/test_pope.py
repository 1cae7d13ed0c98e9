"""POPE without a database: parsers, metrics, question/answer files and building question sets.

The official-equivalence tests run on real slices of the POPE question files (tests/data/pope, see its README).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from db.errors import InvalidInput
from evaluator.scoring.pope import (
    PopeAnswer,
    build_pope,
    load_coco_instances,
    load_object_jsonl,
    match_answers,
    mean_over_settings,
    object_phrase,
    parse_official,
    parse_strict,
    pope_metrics,
    pope_question,
    read_pope_answers,
    read_pope_questions,
    score_matched,
    write_pope_jsonl,
)
from tests.factories import pope_scenes
from tests.pope_official import official_evaluate

DATA = Path(__file__).resolve().parents[1] / "data" / "pope"
COCO_SLICES = ["coco_pope_random.json", "coco_pope_popular.json", "coco_pope_adversarial.json"]
SLICES = COCO_SLICES + ["gqa_pope_seem_random.json"]


# ------------------------------------------------------------------------------------ the official script


def official_word_rule(text):
    """The script's per-answer rule alone, for the property test."""
    if text.find(".") != -1:
        text = text.split(".")[0]
    text = text.replace(",", "")
    words = text.split(" ")
    return "no" if ("No" in words or "not" in words or "no" in words) else "yes"


VARIED_ANSWERS = [
    "Yes, there is.",
    "No.",
    "NO",
    "No!",
    "not at all",
    "There is no dog",
    "yes",
    "I think not",
    "",
    "Yes",
    "No, there is not.",
    "no",
    "Nope",
    "There is a dog. No cat.",
    "It is not present.",
    "Yes!",
    "No, there isn't",
    "I don't see one.",
    "Certainly",
    "no, it is absent",
]


def write_answers(path, texts, ids=None):
    with open(path, "w") as file:
        for index, text in enumerate(texts):
            record = {"text": text} if ids is None else {"question_id": ids[index], "text": text}
            file.write(json.dumps(record) + "\n")


def as_label_jsonl(tmp_path, slice_name):
    """The script reads labels line by line; the pretty-printed GQA array must be flattened for it first
    (as LLaVA's converted copies are). vlmdesk reads the array directly."""
    source = DATA / slice_name
    if not source.read_text().lstrip().startswith("["):
        return source
    target = tmp_path / f"{slice_name}.labels.jsonl"
    target.write_text("".join(json.dumps(q) + "\n" for q in json.loads(source.read_text())))
    return target


@pytest.mark.parametrize("slice_name", SLICES)
@pytest.mark.parametrize("shift", [0, 3, 7])
def test_parse_official_and_metrics_equal_the_official_script(tmp_path, slice_name, shift):
    questions = read_pope_questions(DATA / slice_name)
    texts = [VARIED_ANSWERS[(i * 7 + shift) % len(VARIED_ANSWERS)] for i in range(len(questions))]
    answer_file = tmp_path / "answers.jsonl"
    write_answers(answer_file, texts)

    expected = official_evaluate(answer_file, as_label_jsonl(tmp_path, slice_name))
    pairs = match_answers(questions, read_pope_answers(answer_file))
    ours = score_matched(pairs, parse_official)

    assert [1 if parse_official(a.text) == "yes" else 0 for _, a in pairs] == expected["pred_list"]
    for key in ("tp", "fp", "tn", "fn", "accuracy", "precision", "recall", "f1", "yes_ratio"):
        assert getattr(ours, key) == expected[key], key  # exact, not approx: same operations in the same order
    assert ours.unknown == 0 and ours.questions == len(questions)
    # The varied answers really exercise both readings on every slice.
    assert 0 < ours.tp + ours.fp < len(questions)


@pytest.mark.parametrize("slice_name", SLICES)
def test_match_by_line_order_is_the_scripts_pairing_and_ids_restore_shuffled_answers(tmp_path, slice_name):
    questions = read_pope_questions(DATA / slice_name)
    texts = [f"answer {i}" for i in range(len(questions))]
    by_line = tmp_path / "by_line.jsonl"
    write_answers(by_line, texts)
    label_file = as_label_jsonl(tmp_path, slice_name)
    # The script pairs the i-th answer with the i-th label line.
    script_pairs = list(zip([json.loads(line)["label"] for line in open(label_file)], texts))
    pairs = match_answers(questions, read_pope_answers(by_line))
    assert [(q["label"], a.text) for q, a in pairs] == script_pairs

    order = list(range(len(questions)))
    random.Random(1).shuffle(order)
    shuffled = tmp_path / "shuffled.jsonl"
    write_answers(shuffled, [texts[i] for i in order], ids=[questions[i]["question_id"] for i in order])
    assert [(q, a.text) for q, a in match_answers(questions, read_pope_answers(shuffled))] == [
        (q, a.text) for q, a in pairs
    ]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(list("Nnoti .,!YyesO\t") + ["No", "not", "no", " no ", "Yes"]), max_size=15).map("".join)
    | st.text(max_size=30)
)
def test_parse_official_is_the_scripts_word_rule(text):
    assert parse_official(text) == official_word_rule(text)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("NO", "yes"),
        ("No!", "yes"),
        ("", "yes"),
        ("nope", "yes"),
        ("Yes. No.", "yes"),
        ("No, it is", "no"),
        ("I think not", "no"),
        ("not at all", "no"),
        ("Is it?\tno", "yes"),
    ],
)
def test_parse_official_quirks_are_kept(text, expected):
    assert parse_official(text) == expected


# ------------------------------------------------------------------------------------------- parse_strict

STRICT_CASES = [
    # leading yes / no
    ("Yes", "yes"),
    ("yes", "yes"),
    ("Yes.", "yes"),
    ("Yes,", "yes"),
    ("YES!!!", "yes"),
    ("yes there is", "yes"),
    ("Yes, there is a dog in the image.", "yes"),
    ("**Yes**", "yes"),
    ("Yeah, I think so.", "yes"),
    ("Yes, maybe.", "yes"),
    ("No", "no"),
    ("no", "no"),
    ("No.", "no"),
    ("NO!", "no"),
    ("No!", "no"),
    ("Nope.", "no"),
    ("No, there is a cat but no dog.", "no"),
    ("no, it is not there", "no"),
    # negations
    ("There is no dog in the image.", "no"),
    ("There are no cats.", "no"),
    ("There isn't a dog.", "no"),
    ("There aren\u2019t any people.", "no"),
    ("The dog is not present in the image.", "no"),
    ("The image does not contain a dog.", "no"),
    ("The picture doesn't show any cars.", "no"),
    ("I don't see a dog.", "no"),
    ("I do not see any bicycle.", "no"),
    ("I cannot see any cat.", "no"),
    ("not present", "no"),
    ("Not at all.", "no"),
    ("I think not.", "no"),
    ("Absolutely not.", "no"),
    ("Unfortunately, the answer is no.", "no"),
    ("Answer: No", "no"),
    ("None.", "no"),
    ("False", "no"),
    ("I don't think so.", "no"),
    ("It is absent.", "no"),
    ("There is a dog, not a cat.", "no"),
    # affirmative statements
    ("There is a dog in the image.", "yes"),
    ("There are two dogs on the sofa.", "yes"),
    ("There's a cat.", "yes"),
    ("I can see a cat", "yes"),
    ("I see two people.", "yes"),
    ("A dog can be seen on the left.", "yes"),
    ("The image shows a red car.", "yes"),
    ("Sure! Yes", "yes"),
    ("Sure, yes.", "yes"),
    ("The answer is yes.", "yes"),
    ("Certainly.", "yes"),
    ("Of course!", "yes"),
    ("True", "yes"),
    ("Correct.", "yes"),
    ("I think so.", "yes"),
    ("Is there a dog? Yes.", "yes"),
    ("Is there a dog? No.", "no"),
    ("Is there a dog?", "unknown"),
    ("No doubt, there is a cat.", "yes"),
    ("No doubt about it.", "yes"),
    ("No doubt there is no cat.", "no"),
    # neither
    ("", "unknown"),
    ("   ", "unknown"),
    ("not sure", "unknown"),
    ("I'm not sure.", "unknown"),
    ("Hard to tell.", "unknown"),
    ("It is difficult to say from this picture.", "unknown"),
    ("Maybe", "unknown"),
    ("Perhaps.", "unknown"),
    ("There might be a dog.", "unknown"),
    ("I cannot determine that.", "unknown"),
    ("I can't tell.", "unknown"),
    ("I don't know.", "unknown"),
    ("No idea.", "unknown"),
    ("Yes and no.", "unknown"),
    ("Sure!", "unknown"),
    ("Y", "unknown"),
    ("A dog sits on the couch.", "unknown"),
    ("I'm sorry, I cannot see the image.", "unknown"),
    ("There's no way to tell.", "unknown"),
    ("It is unclear.", "unknown"),
    # Chinese (bonus)
    ("是", "yes"),
    ("是的，图中有一只狗。", "yes"),
    ("有", "yes"),
    ("不是", "no"),
    ("没有", "no"),
    ("否", "no"),
    ("不，图中没有猫。", "no"),
    ("图中是否有狗？没有。", "no"),
    ("不确定", "unknown"),
]


def test_strict_table_is_large():
    assert len(STRICT_CASES) >= 45
    assert {expected for _, expected in STRICT_CASES} == {"yes", "no", "unknown"}


@pytest.mark.parametrize("text, expected", STRICT_CASES)
def test_parse_strict(text, expected):
    assert parse_strict(text) == expected


# ----------------------------------------------------------------------------------------------- metrics


def test_metrics_hand_computed():
    labels = ["yes", "yes", "yes", "yes", "no", "no", "no", "no", "no", "yes"]
    answers = ["yes", "yes", "no", "unknown", "no", "no", "yes", "unknown", "no", "yes"]
    # tp 3 (0,1,9), fn 1 (2), fp 1 (6), tn 3 (4,5,8), unknown 2 (3,7); 5 labelled yes.
    m = pope_metrics(labels, answers)
    assert {k: getattr(m, k) for k in ("questions", "tp", "fp", "tn", "fn", "unknown")} == {
        "questions": 10,
        "tp": 3,
        "fp": 1,
        "tn": 3,
        "fn": 1,
        "unknown": 2,
    }
    assert m.accuracy == pytest.approx(0.6)
    assert m.precision == pytest.approx(0.75)
    assert m.recall == pytest.approx(0.6)  # the unknown on a yes-question counts against recall
    assert m.f1 == pytest.approx(2 * 0.75 * 0.6 / 1.35)
    assert m.yes_ratio == pytest.approx(0.4)


def test_metrics_zero_denominators_are_none():
    empty = pope_metrics([], [])
    assert empty.questions == 0
    assert all(getattr(empty, k) is None for k in ("accuracy", "precision", "recall", "f1", "yes_ratio"))
    all_no = pope_metrics(["no", "no"], ["no", "no"])  # nothing answered yes, nothing labelled yes
    assert all_no.accuracy == 1.0 and all_no.yes_ratio == 0.0
    assert all_no.precision is None and all_no.recall is None and all_no.f1 is None
    all_wrong = pope_metrics(["yes", "no"], ["no", "yes"])  # precision = recall = 0 -> f1 undefined
    assert all_wrong.precision == 0.0 and all_wrong.recall == 0.0 and all_wrong.f1 is None
    unknowns = pope_metrics(["yes"], ["unknown"])
    assert unknowns.precision is None and unknowns.recall == 0.0 and unknowns.accuracy == 0.0


def test_metrics_reject_bad_values():
    with pytest.raises(ValueError, match="labels"):
        pope_metrics(["yes"], [])
    with pytest.raises(ValueError, match="label 0"):
        pope_metrics(["maybe"], ["yes"])
    with pytest.raises(ValueError, match="answer 0"):
        pope_metrics(["yes"], ["Yes, there is"])


def test_mean_over_settings_ignores_none():
    settings = {
        "random": pope_metrics(["yes", "no"], ["yes", "no"]),
        "popular": pope_metrics(["yes", "no"], ["yes", "yes"]),
        "adversarial": pope_metrics(["no", "no"], ["no", "no"]),
    }  # precision, recall, f1 are None here
    assert settings["popular"].precision == 0.5
    mean = mean_over_settings(list(settings.values()))
    assert mean.accuracy == pytest.approx((1 + 0.5 + 1) / 3)
    assert mean.precision == pytest.approx((1 + 0.5) / 2)
    assert mean.recall == pytest.approx(1.0)
    assert mean.yes_ratio == pytest.approx((0.5 + 1 + 0) / 3)
    assert mean_over_settings([pope_metrics([], [])]).f1 is None
    assert list(mean.to_json()) == ["accuracy", "precision", "recall", "f1", "yes_ratio"]


def test_metrics_json_keeps_its_keys_in_order():
    m = pope_metrics(["yes", "no"], ["yes", "unknown"])
    assert list(m.to_json()) == [
        "questions",
        "tp",
        "fp",
        "tn",
        "fn",
        "unknown",
        "accuracy",
        "precision",
        "recall",
        "f1",
        "yes_ratio",
    ]


# ------------------------------------------------------------------------------------------------- files


def test_read_questions_jsonl_and_array():
    coco = read_pope_questions(DATA / "coco_pope_random.json")
    assert len(coco) == 60 and coco[0] == {
        "question_id": 1,
        "image": "COCO_val2014_000000310196.jpg",
        "text": "Is there a snowboard in the image?",
        "label": "yes",
    }
    gqa = read_pope_questions(DATA / "gqa_pope_seem_random.json")
    assert len(gqa) == 10 and gqa[0]["image"] == "2405722.jpg"
    assert [q["label"] for q in gqa[:6]] == ["yes", "yes", "yes", "no", "no", "no"]


@pytest.mark.parametrize(
    "content, message",
    [
        (
            '{"question_id": 1, "image": "a.jpg", "text": "Is there a dog?", "label": "yes"}\n{"question_id": 2,',
            "line 2: not valid JSON",
        ),
        ('{"question_id": 1, "image": "a.jpg", "text": "Is there a dog?"}\n', "line 1: field 'label'"),
        ('{"question_id": 1, "image": "a.jpg", "text": "t", "label": "maybe"}\n', "line 1: field 'label' is 'maybe'"),
        (
            '{"question_id": 1, "image": "a.jpg", "text": "t", "label": "no"}\n\n'
            '{"question_id": 1, "image": "b.jpg", "text": "t", "label": "no"}\n',
            "line 3: question_id 1 repeats line 1",
        ),
        ('[{"question_id": 1, "image": "a.jpg", "text": "t", "label": "yes"}, {"image": "b.jpg"}]', "item 2"),
    ],
)
def test_read_questions_errors_name_file_and_line(tmp_path, content, message):
    path = tmp_path / "questions.json"
    path.write_text(content)
    with pytest.raises(InvalidInput, match=message) as error:
        read_pope_questions(path)
    assert "questions.json" in str(error.value)


def test_read_answers_fields(tmp_path):
    path = tmp_path / "answers.jsonl"
    path.write_text(
        '{"question_id": 1, "text": "Is there a dog?", "answer": "No."}\n'
        '{"question_id": 2, "text": "Yes"}\n\n{"text": "maybe"}\n'
    )
    answers = read_pope_answers(path)
    assert [(a.text, a.question_id, a.line) for a in answers] == [("No.", 1, 1), ("Yes", 2, 2), ("maybe", None, 4)]
    path.write_text('{"question_id": 1, "response": "No."}\n')
    with pytest.raises(InvalidInput, match="answers.jsonl, line 1: field 'answer' or 'text'"):
        read_pope_answers(path)


def answers_of(*items):
    return [PopeAnswer(text, qid, "run.jsonl", line) for line, (qid, text) in enumerate(items, start=1)]


QUESTIONS = [{"question_id": i, "image": "a.jpg", "text": "t", "label": "yes"} for i in (1, 2, 3)]


@pytest.mark.parametrize(
    "answers, message",
    [
        (answers_of((None, "a"), (None, "b")), r"run.jsonl: 2 answers for 3 questions \(the file ends at line 2\)"),
        (answers_of(*[(None, "a")] * 4), "run.jsonl, line 4: answer without a question"),
        (answers_of((1, "a"), (None, "b"), (3, "c")), "run.jsonl, line 2: answer has no question_id"),
        (answers_of((1, "a"), (2, "b"), (9, "c")), "run.jsonl, line 3: question_id 9 is not among the questions"),
        (answers_of((1, "a"), (2, "b"), (1, "c")), "run.jsonl, line 3: question_id 1 already answered on line 1"),
        (answers_of((1, "a"), (3, "c")), "run.jsonl: no answer for question_id 2"),
    ],
)
def test_match_answers_errors(answers, message):
    with pytest.raises(InvalidInput, match=message):
        match_answers(QUESTIONS, answers)


def test_match_answers_string_ids_match_integer_ids():
    pairs = match_answers(QUESTIONS, answers_of(("3", "c"), ("1", "a"), ("2", "b")))
    assert [(q["question_id"], a.text) for q, a in pairs] == [(1, "a"), (2, "b"), (3, "c")]


# ---------------------------------------------------------------------------------------------- building

# tests/factories.POPE_SCENES: a dozen images, 16 categories co-occurring the way they do in COCO.
CATEGORIES = [
    "person",
    "car",
    "truck",
    "traffic light",
    "bicycle",
    "dog",
    "cat",
    "couch",
    "tv",
    "remote",
    "cup",
    "oven",
    "sink",
    "apple",
    "skis",
    "scissors",
]
IMAGES = pope_scenes(".jpg")


@pytest.fixture
def coco_file(tmp_path):
    category_ids = {name: 10 + 3 * n for n, name in enumerate(CATEGORIES)}  # ids are not positions
    images, annotations = [], []
    for n, (file_name, names) in enumerate(IMAGES.items()):
        images.append({"id": 1000 + n, "file_name": file_name, "width": 640, "height": 480})
        for name in names + names[:1]:  # a repeated instance of the first object: must be deduplicated
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": 1000 + n,
                    "category_id": category_ids[name],
                    "bbox": [0, 0, 10, 10],
                }
            )
    images.append({"id": 5000, "file_name": "empty.jpg", "width": 1, "height": 1})
    path = tmp_path / "instances_tiny.json"
    path.write_text(
        json.dumps(
            {
                "images": images,
                "annotations": annotations,
                "categories": [{"id": i, "name": n} for n, i in category_ids.items()],
            }
        )
    )
    return path


def test_load_coco_instances(coco_file):
    annotations = load_coco_instances(coco_file)
    assert annotations["empty.jpg"] == []
    assert {k: sorted(v) for k, v in annotations.items() if k != "empty.jpg"} == {
        k: sorted(v) for k, v in IMAGES.items()
    }


def test_load_coco_instances_unknown_category(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(
        json.dumps(
            {
                "images": [{"id": 1, "file_name": "a.jpg"}],
                "categories": [],
                "annotations": [{"id": 7, "image_id": 1, "category_id": 3}],
            }
        )
    )
    with pytest.raises(InvalidInput, match=r"bad.json: annotations\[0\]: category_id 3"):
        load_coco_instances(path)


def test_load_object_jsonl_merges_and_deduplicates(tmp_path):
    path = tmp_path / "objects.jsonl"
    path.write_text(
        '{"image": "a.jpg", "objects": ["dog", "person", "dog"]}\n'
        '{"image": "b.jpg", "objects": []}\n{"image": "a.jpg", "objects": ["cat"]}\n'
    )
    assert load_object_jsonl(path) == {"a.jpg": ["cat", "dog", "person"], "b.jpg": []}
    path.write_text('{"image": "a.jpg", "objects": "dog"}\n')
    with pytest.raises(InvalidInput, match="objects.jsonl, line 1"):
        load_object_jsonl(path)


def build(setting, seed=0, images_count=8, per_image=3, annotations=None):
    return build_pope(annotations or IMAGES, setting=setting, images_count=images_count, per_image=per_image, seed=seed)


def by_image(records, label):
    grouped = {}
    for record in records:
        if record["label"] == label:
            grouped.setdefault(record["image"], []).append(record["object"])
    return grouped


@pytest.mark.parametrize("setting", ["random", "popular", "adversarial"])
def test_build_shape_and_general_rules(setting):
    records = build(setting)
    assert [r["question_id"] for r in records] == list(range(1, len(records) + 1))
    assert set(records[0]) == {"question_id", "image", "text", "label", "object"}
    images = list(dict.fromkeys(r["image"] for r in records))
    assert images == sorted(images) and len(images) == 8
    assert all(len(IMAGES[image]) >= 3 for image in images)
    assert [r["label"] for r in records] == ["yes", "no"] * (len(records) // 2)  # alternating, like the files
    for image in images:
        asked = [r["object"] for r in records if r["image"] == image]
        assert len(asked) == 6 and len(set(asked)) == 6  # never the same object twice for one image
    for image, positives in by_image(records, "yes").items():
        assert set(positives) <= set(IMAGES[image])
    for image, negatives in by_image(records, "no").items():
        assert not set(negatives) & set(IMAGES[image])  # negatives are never present
    assert all(r["text"] == pope_question(r["object"]) for r in records)


def test_random_negatives_stay_within_the_chosen_vocabulary():
    vocabularies = set()
    for seed in range(10):
        records = build("random", seed=seed)
        chosen_vocabulary = {name for image in {r["image"] for r in records} for name in IMAGES[image]}
        negatives = {r["object"] for r in records if r["label"] == "no"}
        assert negatives <= chosen_vocabulary
        vocabularies.add(frozenset(negatives))
    assert len(vocabularies) > 1  # random really varies with the seed


def test_popular_negatives_are_the_most_frequent_absent_objects():
    for seed in range(5):
        records = build("popular", seed=seed)
        frequency = Counter(name for image in {r["image"] for r in records} for name in IMAGES[image])
        for image, negatives in by_image(records, "no").items():
            others = set(frequency) - set(IMAGES[image]) - set(negatives)
            assert min(frequency[n] for n in negatives) >= max((frequency[o] for o in others), default=0)
            assert [frequency[n] for n in negatives] == sorted((frequency[n] for n in negatives), reverse=True)


def co_occurrence_score(image, candidate):
    return sum(1 for names in IMAGES.values() for present in IMAGES[image] if present in names and candidate in names)


def test_adversarial_negatives_are_the_top_co_occurring_absent_objects():
    for seed in range(5):
        records = build("adversarial", seed=seed)
        for image, negatives in by_image(records, "no").items():
            scores = {c: co_occurrence_score(image, c) for c in CATEGORIES if c not in IMAGES[image]}
            assert all(scores[n] > 0 for n in negatives)
            others = set(scores) - set(negatives)
            assert min(scores[n] for n in negatives) >= max(scores[o] for o in others)


def test_adversarial_example_by_hand():
    # street3 holds truck, car, dog. person: truck 1 + car 2 + dog 1 = 4; traffic light: truck 1 + car 2 = 3;
    # bicycle: car 1; cat, couch, remote, skis: dog 1 each.
    records = build_pope(IMAGES, setting="adversarial", images_count=12, per_image=2, seed=0)
    assert by_image(records, "no")["street3.jpg"] == ["person", "traffic light"]


def test_settings_share_images_and_positives_for_one_seed():
    positives = [by_image(build(setting, seed=4), "yes") for setting in ("random", "popular", "adversarial")]
    assert positives[0] == positives[1] == positives[2]


@pytest.mark.parametrize("setting", ["random", "popular", "adversarial"])
def test_build_is_reproducible_and_seed_dependent(setting):
    assert build(setting, seed=11) == build(setting, seed=11)
    assert any(build(setting, seed=11) != build(setting, seed=s) for s in range(12, 16))


def test_fallback_when_a_pool_runs_out():
    # a, b only ever appear with c; x, y, z, w only with each other.
    annotations = {
        "1.jpg": ["a", "b"],
        "2.jpg": ["a", "b", "c"],
        "3.jpg": ["x", "y", "z"],
        "4.jpg": ["x", "y", "w"],
        "5.jpg": ["x", "y"],
    }
    records = build_pope(annotations, setting="adversarial", images_count=5, per_image=2, seed=3)
    negatives = by_image(records, "no")
    # 1.jpg: only c co-occurs; the second negative comes from the popular pool: x and y are in most images.
    assert negatives["1.jpg"][0] == "c" and negatives["1.jpg"][1] in {"x", "y"}
    # 5.jpg: z and w co-occur once each with x/y; then the pool is empty.
    assert set(negatives["5.jpg"]) == {"z", "w"}
    # random over the chosen images' vocabulary -> falls back to the whole vocabulary.
    few = {"1.jpg": ["a", "b"], "2.jpg": ["a", "b"], "3.jpg": ["c"], "4.jpg": ["d"]}
    records = build_pope(few, setting="random", images_count=2, per_image=2, seed=0)
    assert set(by_image(records, "no")) == {"1.jpg", "2.jpg"}
    assert all(set(n) == {"c", "d"} for n in by_image(records, "no").values())
    del few["4.jpg"]  # then even the whole vocabulary runs out
    with pytest.raises(InvalidInput, match="only 1 absent objects in the whole vocabulary, 2 needed"):
        build_pope(few, setting="popular", images_count=2, per_image=2, seed=0)


def test_build_errors():
    with pytest.raises(InvalidInput, match="setting"):
        build("frequent")
    with pytest.raises(InvalidInput, match="only 11 images have at least 3"):
        build("random", images_count=12)


def test_english_of_questions():
    assert pope_question("apple") == "Is there an apple in the image?"
    assert pope_question("dog") == "Is there a dog in the image?"
    assert pope_question("traffic light") == "Is there a traffic light in the image?"  # the files say "an"
    assert pope_question("skis") == "Is there a pair of skis in the image?"
    assert pope_question("scissors") == "Is there a pair of scissors in the image?"
    assert [
        object_phrase(n)
        for n in (
            "umbrella",
            "oven",
            "elephant",
            "unicorn",
            "uniform",
            "hour",
            "hot dog",
            "one-way sign",
            "european flag",
            "honest man",
            "tv",
            "broccoli",
            "ski boots",
        )
    ] == [
        "an umbrella",
        "an oven",
        "an elephant",
        "a unicorn",
        "a uniform",
        "an hour",
        "a hot dog",
        "a one-way sign",
        "a european flag",
        "an honest man",
        "a tv",
        "broccoli",
        "a pair of ski boots",
    ]
    phrases = {
        "apple": "an apple",
        "oven": "an oven",
        "skis": "a pair of skis",
        "scissors": "a pair of scissors",
        "traffic light": "a traffic light",
    }
    seen = set()
    for seed in range(10):
        for r in build_pope(IMAGES, setting="random", images_count=12, per_image=2, seed=seed):
            assert r["text"] == f"Is there {phrases.get(r['object'], 'a ' + r['object'])} in the image?"
            seen.add(r["object"])
    assert set(phrases) <= seen


def test_write_then_read_round_trip(tmp_path, coco_file):
    records = build_pope(load_coco_instances(coco_file), setting="popular", images_count=6, per_image=2, seed=1)
    path = tmp_path / "pope.jsonl"
    write_pope_jsonl(records, path)
    assert read_pope_questions(path) == records
    assert list(tmp_path.glob(".pope.jsonl.*")) == []  # no temporary file left behind
