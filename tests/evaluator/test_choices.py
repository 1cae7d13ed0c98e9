"""evaluator/scoring/choices.py: the rules every runner, report, export and QC step shares."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from db.runs import Prediction
from evaluator.formats.importers.jsonl import MAX_OPTIONS as IMPORT_MAX_OPTIONS
from evaluator.scoring import choices


@st.composite
def rotated(draw):
    n = draw(st.integers(2, choices.MAX_OPTIONS))
    return n, draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))


@given(rotated())
def test_the_displayed_answer_shows_the_keyed_option_and_maps_back(case):
    n, k, key = case
    options = [f"option {j}" for j in range(n)]
    order = choices.rotation(n, k)
    answer = choices.LETTERS[key]
    shown = choices.displayed_answer(answer, order)
    assert choices.shown_options(options, order)[shown] == options[key]
    assert choices.original_option(shown, order) == key
    assert sorted(order) == list(range(n))
    assert order[0] == k  # pass k shows original option k first, as MMBench's copy at index + k·1e6 does


def test_letters_stop_before_the_refusal_letter():
    assert choices.MAX_OPTIONS == 25 == IMPORT_MAX_OPTIONS
    assert choices.letters(choices.MAX_OPTIONS)[-1] == "Y"
    assert choices.NONE_OF_THEM == "Z" and choices.NONE_OF_THEM not in choices.answer_keys(choices.MAX_OPTIONS)
    assert choices.original_option("Z", (0, 1, 2)) is None
    assert choices.original_option(None, (0, 1, 2)) is None
    assert choices.original_option("D", (0, 1, 2)) is None  # no fourth option shown


def test_a_yes_no_key_is_displayed_as_is():
    assert choices.displayed_answer("yes", ()) == "yes"
    assert choices.displayed_answer(None, (1, 0)) is None


@pytest.mark.parametrize(
    "n, typed, canonical",
    [
        (3, " b ", "B"),
        (3, "C", "C"),
        (3, "D", None),
        (3, "Z", None),
        (3, "", None),
        (3, None, None),
        (0, "Yes", "yes"),
        (0, " NO", "no"),
        (0, "maybe", None),
        (0, "A", None),
        (2, "yes", None),
    ],
)
def test_typed_answer_keys_are_read_in_the_items_terms(n, typed, canonical):
    assert choices.canonical_answer(n, typed) == canonical


@pytest.mark.parametrize(
    "text, reading",
    [
        ("Yes, there is a dog.", "yes"),
        ("No.", "no"),
        ("There is no cat in the image.", "no"),
        ("I cannot tell.", None),
        ("Maybe.", None),
        ("", None),
    ],
)
def test_yes_no_reading(text, reading):
    assert choices.read_yes_no(text) == reading


def _pass(choice, stage="rules", response="", answer="yes"):
    return Prediction(1, 1, 0, (), "", response, answer, choice, stage, None, choice == answer, None)


def test_pope_readings_per_parser():
    assert choices.POPE_PARSERS == ("official", "strict")
    # The official parser reads the text again (no "no"/"not" in the first sentence: yes); strict keeps what the
    # run read (here: neither).
    p = _pass(None, stage="none", response="Perhaps there is one")
    assert (choices.pope_reading(p, "official"), choices.pope_reading(p, "strict")) == ("yes", "unknown")
    liked = _pass("no", stage="likelihood", response="No")
    assert (choices.pope_reading(liked, "official"), choices.pope_reading(liked, "strict")) == ("no", "no")


@pytest.mark.parametrize(
    "strategy, n, marks, result",
    [
        ("circular", 3, {}, "none"),
        ("circular", 3, {0: True, 1: True, 2: True}, "right"),
        ("circular", 3, {0: True, 1: True}, "pending"),
        ("circular", 3, {0: True, 1: False}, "wrong"),
        ("circular", 3, {0: None, 1: None, 2: None}, "unscored"),
        ("vanilla", 3, {0: True}, "right"),
        ("vanilla", 3, {0: False}, "wrong"),
        ("pope", 0, {0: True}, "right"),
        ("pope", 0, {0: None}, "unscored"),
    ],
)
def test_item_run_results(strategy, n, marks, result):
    assert choices.item_result(strategy, n, marks) == result


def test_vanilla_run_result_reads_pass_zero_only():
    assert choices.vanilla_result({0: True, 1: False}) == "right"
    assert choices.vanilla_result({1: True}) == "none"
    assert choices.vanilla_result({0: False, 1: True}) == "wrong"


@pytest.mark.parametrize(
    "marks, full, alive",
    [
        ([], False, True),
        ([True, True], False, True),
        ([True, False], False, False),
        ([False], True, True),
        ([None, None], False, True),  # no answer key: nothing is wrong, every pass is asked
    ],
)
def test_still_alive(marks, full, alive):
    assert choices.still_alive(marks, full_passes=full) is alive


def test_run_results_name_the_same_results_as_the_sql():
    from typing import get_args

    from db.item_query import RUN_RESULTS

    assert get_args(choices.RunResult) == RUN_RESULTS


@pytest.mark.parametrize(
    "text, cjk",
    [
        ("猫是什么颜色", True),
        ("a cat 猫", True),
        ("Ｂ", False),
        ("ひらがな", False),
        ("", False),
        (None, False),
        ("\U00020000", True),
    ],
)
def test_cjk(text, cjk):
    assert choices.has_cjk(text) is cjk
