"""The rule-based choice extractor against responses whose meaning a careful human reads off.

Each row: (response, options, human_answer, must_decide). ``human_answer`` is the letter a careful human
reads, "Z" for a refusal / none of the options, or None when a human cannot tell either. The extractor may stay
undecided on any row, but it must never return a letter other than the human's; on ``must_decide`` rows (clear
forms) it must return exactly the human answer.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluator.scoring.extraction import Extraction, extract_by_rules, language_of

ABCD = {"A": "cat", "B": "dog", "C": "bird", "D": "fish"}
ABC = {"A": "cat", "B": "dog", "C": "bird"}
ZH = {"A": "猫", "B": "狗", "C": "鸟"}
NUMBERS = {"A": "12", "B": "112", "C": "21", "D": "1"}
APPLES = {"A": "1 apple", "B": "2 apples", "C": "3 apples"}
COLOURS = {"A": "red", "B": "red apple", "C": "green apple"}
RIDING = {"A": "walking", "B": "riding a horse", "C": "swimming"}
WITH_NONE = {"A": "cat", "B": "dog", "C": "None of the above"}
VITAMINS = {"A": "Vitamin C", "B": "Vitamin D"}
YES_NO = {"A": "Yes", "B": "No"}
# Full-width punctuation inside option texts, as MMBench-CN and CCBench write them.
CONCENTRATION = {"A": "都不是；它们的浓度相同", "B": "溶液B", "C": "溶液A"}  # MMBench-CN, attribute comparison
POEMS = {"A": "《悯农（其二）》", "B": "《咏鹅》", "C": "《静夜思》", "D": "《春晓》"}
CALLIGRAPHY = {"A": "颜真卿，唐代", "B": "王羲之，东晋", "C": "苏轼，北宋", "D": "米芾，北宋"}
FULL_WIDTH_LABELS = {"A": "Ｘ", "B": "Ｙ"}
# Option texts that start with a Latin letter glued to Chinese: blood types, exams, share classes.
BLOOD = {"A": "O型", "B": "A型", "C": "B型", "D": "AB型"}
SCANS = {"A": "CT", "B": "X光", "C": "Ｂ超"}
SHARES = {"A": "港股", "B": "Ａ股", "C": "美股"}
ZH_PETS = {"A": "猫", "B": "狗"}
VITAMINS_ZH = {"A": "维生素C", "B": "维生素D"}

MUST, MAY = True, False

ROWS = [
    # --- bare letters and their usual English forms
    ("B", ABCD, "B", MUST),
    ("(B)", ABCD, "B", MUST),
    ("B.", ABCD, "B", MUST),
    ("B)", ABCD, "B", MUST),
    ("B:", ABCD, "B", MUST),
    ("[B]", ABCD, "B", MUST),
    ("  B  \n", ABCD, "B", MUST),
    ("Ｂ", ABCD, "B", MUST),
    ("- B", ABCD, "B", MUST),
    ("A", ABCD, "A", MUST),
    ("A.", ABCD, "A", MUST),
    ("(A) cat", ABCD, "A", MUST),
    ("Option A.", ABCD, "A", MUST),
    ("option B", ABCD, "B", MUST),
    ("B. dog", ABCD, "B", MUST),
    ("B) dog", ABCD, "B", MUST),
    # --- markdown, LaTeX, tags
    ("**B**", ABCD, "B", MUST),
    ("**Answer:** (C)", ABCD, "C", MUST),
    ("Answer: **C. bird**", ABCD, "C", MUST),
    ("\\boxed{B}", ABCD, "B", MUST),
    ("The final answer is $\\boxed{D}$.", ABCD, "D", MUST),
    ("The answer is \\boxed{\\text{B}}", ABCD, "B", MUST),
    ("<answer>C</answer>", ABCD, "C", MUST),
    ("```\nB\n```", ABCD, "B", MUST),
    ("**Analysis:**\n- A: cat (wrong)\n- B: dog (correct)\n\n**Answer: B**", ABCD, "B", MUST),
    # --- answer statements
    ("Answer: B", ABCD, "B", MUST),
    ("ANSWER: D", ABCD, "D", MUST),
    ("The answer is B", ABCD, "B", MUST),
    ("The answer is option B.", ABCD, "B", MUST),
    ("the correct option is (B)", ABCD, "B", MUST),
    ("B is the correct answer.", ABCD, "B", MUST),
    ("B is correct.", ABCD, "B", MUST),
    ("A is correct.", ABCD, "A", MUST),
    ("I would choose C.", ABCD, "C", MUST),
    ("I'd go with option D.", ABCD, "D", MUST),
    ("My answer: A", ABCD, "A", MUST),
    ("Based on the image, the best choice is C.", ABCD, "C", MUST),
    ("The answer is: C) bird", ABCD, "C", MUST),
    ("The answer is D: fish.", ABCD, "D", MUST),
    ("The answer is (A) cat.", ABCD, "A", MUST),
    ("The answer is B (dog).", ABCD, "B", MUST),
    ("The correct answer is B, a dog.", ABCD, "B", MUST),
    ("1. The answer is C.", ABCD, "C", MUST),
    ("The animal is a dog (B).", ABCD, "B", MUST),
    ("Answer: (C) 3 apples", APPLES, "C", MUST),
    ("B\n\nThe image shows a dog sitting on the grass next to a cat.", ABCD, "B", MUST),
    ("B, because A shows a cat.", ABCD, "B", MUST),
    ("Answer: B.\n\nA is a cat and C is a bird, so they are wrong.", ABCD, "B", MUST),
    # --- Chinese
    ("答案是B", ABCD, "B", MUST),
    ("答案：B", ABCD, "B", MUST),
    ("答案：（C）", ABCD, "C", MUST),
    ("选B", ABCD, "B", MUST),
    ("B选项", ABCD, "B", MUST),
    ("正确答案是 B", ABCD, "B", MUST),
    ("答案为C。", ABCD, "C", MUST),
    ("我选择A", ABCD, "A", MUST),
    ("故选D", ABCD, "D", MUST),
    ("A选项错误，B选项正确。", ABCD, "B", MUST),
    ("我认为答案是C，因为图中有一只鸟。", ABCD, "C", MUST),
    ("答案是 D. fish", ABCD, "D", MUST),
    ("图中是一只狗。", ZH, "B", MUST),
    ("不是猫，是狗。", ZH, "B", MUST),
    ("(C)", ZH, "C", MUST),
    ("无法确定", ZH, "Z", MUST),
    ("无法回答这个问题。", ABCD, "Z", MUST),
    # --- option texts with full-width punctuation read like responses (NFKC on both sides)
    ("都不是；它们的浓度相同", CONCENTRATION, "A", MUST),  # the option's own words, not a refusal
    ("都不是;它们的浓度相同。", CONCENTRATION, "A", MUST),
    ("答案：都不是；它们的浓度相同", CONCENTRATION, "A", MUST),
    ("答案是A：都不是；它们的浓度相同", CONCENTRATION, "A", MUST),
    ("溶液A的浓度更高。", CONCENTRATION, "C", MUST),  # the "A" inside option C's text is no letter
    ("溶液Ｂ", CONCENTRATION, "B", MUST),
    ("Either 《悯农（其二）》 or 《咏鹅》.", POEMS, None, MAY),
    ("《悯农（其二）》", POEMS, "A", MUST),
    ("悯农（其二）", POEMS, "A", MUST),
    ("这首诗是《悯农(其二)》。", POEMS, "A", MUST),
    ("这首诗是《悯农》。", POEMS, None, MAY),  # 其一 or 其二?
    ("答案：《静夜思》", POEMS, "C", MUST),
    ("图中的诗是李白的《静夜思》，不是《春晓》。", POEMS, "C", MUST),
    ("《春晓》不对，是《静夜思》。", POEMS, "C", MUST),
    ("王羲之，东晋", CALLIGRAPHY, "B", MUST),
    ("这幅书法出自王羲之,东晋时期。", CALLIGRAPHY, "B", MUST),
    ("北宋", CALLIGRAPHY, None, MAY),  # two options are Northern Song
    ("Ｘ", FULL_WIDTH_LABELS, "A", MUST),
    ("Y", FULL_WIDTH_LABELS, "B", MUST),
    ("这只动物是猫还是鸟？无法判断。", ZH, "Z", MUST),
    # --- a Latin letter glued to a Chinese word is part of the word ("B型" is blood type B), not option B
    ("答案是B型", BLOOD, "C", MUST),
    ("The answer is B型", BLOOD, "C", MUST),
    ("答案是Ｂ型", BLOOD, "C", MUST),
    ("B型", BLOOD, "C", MUST),
    ("他是AB型血。", BLOOD, "D", MUST),
    ("答案：A型", BLOOD, "B", MUST),
    ("B选项正确", BLOOD, "B", MUST),  # 选项 after a letter: the option letter
    ("答案是B型", {"A": "A型", "B": "O型"}, None, MAY),  # blood type B is none of the options
    ("答案：B超检查", SCANS, "C", MUST),
    ("选B超", SCANS, "C", MUST),
    ("应该做Ｂ超", SCANS, "C", MUST),
    ("答案是X光", SCANS, "B", MUST),
    ("选B", SCANS, "B", MUST),
    ("应选Ａ股。", SHARES, "B", MUST),
    ("选A股", SHARES, "B", MUST),
    ("答案是B股", SHARES, None, MAY),  # B-shares: no option
    ("答案是C型", ABCD, None, MAY),
    ("答案是B吧", ABCD, "B", MUST),
    ("答案是维生素C片", VITAMINS_ZH, "A", MUST),
    # --- option text, any case, articles
    ("It is a dog.", ABCD, "B", MUST),
    ("dog", ABCD, "B", MUST),
    ("Dog.", ABCD, "B", MUST),
    ("DOG", ABCD, "B", MUST),
    ("The animal in the picture is a bird.", ABCD, "C", MUST),
    ("It's a fish!", ABCD, "D", MUST),
    ("A dog.", ABCD, "B", MUST),
    ("A dog.", ABC, "B", MUST),
    ("A cat is sleeping on the sofa.", ABCD, "A", MUST),
    ("A dog is sleeping on the sofa.", ABCD, "B", MUST),
    ("A dog or a cat?", ABCD, None, MAY),
    ("A man is riding a horse.", RIDING, "B", MUST),
    ("A man riding a horse.", RIDING, "B", MUST),
    ("A man is standing next to a horse.", RIDING, None, MAY),
    ("I think it's a dog.", ABCD, "B", MUST),
    ("In the image, I see a bird perched on a branch.", ABCD, "C", MUST),
    ("The picture shows a dog, not a cat.", ABCD, "B", MUST),
    ("There is no fish in the image; it is a bird.", ABCD, "C", MUST),
    ("It's not a cat.", ABCD, None, MAY),
    ("The image shows a cat and a dog.", ABCD, None, MAY),
    ("Dalmatian", ABCD, None, MAY),
    # --- one lower-case letter and nothing else is that letter; in running text lower-case letters are words
    ("a", ABCD, "A", MUST),
    ("b", ABCD, "B", MUST),
    ("b.", ABCD, "B", MUST),
    (" (b) ", ABCD, "B", MUST),
    ("[c]", ABCD, "C", MUST),
    ("d)", ABCD, "D", MUST),
    ("**c**", ABCD, "C", MUST),
    ("ｂ", ABCD, "B", MUST),
    ("（ｃ）", ABCD, "C", MUST),
    ("a.", ABC, "A", MUST),
    ("b", {"a": "cat", "b": "dog"}, "b", MUST),
    ("e", ABCD, None, MAY),  # no option E
    ("d", ABC, None, MAY),
    ("a", {"A": "an", "B": "a"}, None, MAY),  # option A, or option B's text?
    ("b", {"A": "b", "B": "d"}, None, MAY),  # lower-case labels in a figure
    # ... but after an explicit answer cue, or as "(b)" / "b." starting the first line, it is a letter
    ("Answer: A\nFinal answer: ｂ", ABCD, "B", MUST),
    ("The answer is A.\n\\boxed{b}", ABCD, "B", MUST),
    ("Answer: A\n<answer>(b)</answer>", ABCD, "B", MUST),
    ("答案：Ａ\n最终答案：ｂ", ABCD, "B", MUST),
    ("答案是Ａ。不对，答案是ｂ。", ABCD, "B", MUST),
    ("The answer is cat. Correction: the answer is (b).", ABCD, "B", MUST),
    ("The answer is (a) cat. Wait, no: it is (B).", ABCD, "B", MUST),
    ("So the answer is A... no wait, (b)", ABCD, "B", MUST),
    ("Answer: b\nActually, C", ABCD, "C", MUST),
    ("Answer: B. Wait, A is wrong too.", ABCD, "B", MUST),
    ("The answer is b", ABCD, "B", MUST),
    ("答案是ｂ", ABCD, "B", MUST),
    ("选ｃ", ABCD, "C", MUST),
    ("The answer is a dog.", ABCD, "B", MUST),  # "a" before a word is the article
    ("e.g. the answer is B", ABCD, "B", MUST),
    ("(b) dog", ABCD, "B", MUST),
    ("b) dog", ABCD, "B", MUST),
    ("ｂ：狗", ZH_PETS, "B", MUST),
    ("(b) cat", ABCD, None, MAY),  # letter and option text disagree
    ("b. cat", ABCD, None, MAY),
    ("ｂ：猫", ZH_PETS, None, MAY),
    ("Answer: b. cat", ABCD, None, MAY),
    ("A? No. b.", ABCD, None, MAY),
    ("b - cat", ABCD, None, MAY),
    ("The answer is (a) or (b).", ABCD, None, MAY),
    ("Answer: e", ABCD, None, MAY),
    ("a dog", ABCD, "B", MUST),
    ("a or b", ABCD, None, MAY),
    ("b is wrong", ABCD, None, MAY),
    ("Vitamin C", VITAMINS, "A", MUST),
    ("The patient lacks vitamin D.", VITAMINS, "B", MUST),
    ("X", {"A": "X", "B": "Y"}, "A", MUST),  # option texts that are letters (labels in a figure)
    ("B", {"A": "B", "B": "A"}, None, MAY),  # label B or option B? a human cannot tell
    ("Yes.", YES_NO, "A", MUST),
    ("Yes, there is a dog.", YES_NO, "A", MUST),
    ("No, there is no dog.", YES_NO, "B", MUST),
    # --- numbers that contain each other
    ("112", NUMBERS, "B", MUST),
    ("12", NUMBERS, "A", MUST),
    ("1", NUMBERS, "D", MUST),
    ("There are 112 people.", NUMBERS, "B", MUST),
    ("The count is 12.", NUMBERS, "A", MUST),
    ("The answer is 21.", NUMBERS, "C", MUST),
    ("I count 12 apples.", NUMBERS, "A", MUST),
    ("12 or 112", NUMBERS, None, MAY),
    ("About 1.12 meters.", NUMBERS, None, MAY),
    ("There are 2 apples on the table.", APPLES, "B", MUST),
    ("3 apples", APPLES, "C", MUST),
    ("(B) 3 apples", APPLES, None, MAY),  # letter and text disagree
    # --- option texts that contain each other
    ("It is a red apple.", COLOURS, "B", MUST),
    ("Red.", COLOURS, "A", MUST),
    ("The color is red.", COLOURS, "A", MUST),
    ("a green apple", COLOURS, "C", MUST),
    ("Red apple or green apple?", COLOURS, None, MAY),
    # --- chain of thought
    (
        "Let's think. Option A shows a cat, which does not match. Option C is a bird. "
        "The animal barks, so the answer is B.",
        ABCD,
        "B",
        MUST,
    ),
    ("A is wrong and C is wrong, so the answer is B.", ABCD, "B", MUST),
    ("A and C are wrong, so B", ABC, "B", MUST),
    ("A and C are wrong, so B.", ABCD, "B", MUST),
    ("First, A is incorrect because the animal barks. D is also incorrect. Therefore, C.", ABCD, "C", MUST),
    ("The answer is A. Wait, let me reconsider. The animal barks. The answer is B.", ABCD, "B", MUST),
    ("Answer: B\nExplanation: A is a cat, which is wrong; the image shows a dog.", ABCD, "B", MUST),
    ("Step 1: a four-legged animal. Step 2: does it have feathers? No. Final answer: D", ABCD, "D", MUST),
    ("If B is correct, then the animal would bark. It does not bark, so the answer is A.", ABCD, "A", MUST),
    ("Both A and B are wrong; the answer is C.", ABCD, "C", MUST),
    ("It's B, not A.", ABCD, "B", MUST),
    ("Not A. It is B.", ABCD, "B", MUST),
    ("Neither A nor C; it's B.", ABCD, "B", MUST),
    ("A is a cat, B is a dog.", ABCD, None, MAY),
    (
        "Let me look at each option: (A) cat — no. (B) dog — yes. (C) bird — no. (D) fish — no.",
        ABCD,
        "B",
        MAY,
    ),
    # --- hedges and several options
    ("A and C", ABCD, None, MAY),
    ("either B or D", ABCD, None, MAY),
    ("maybe B or C", ABCD, None, MAY),
    ("The answer is either B or D.", ABCD, None, MAY),
    ("The answer is B or maybe C.", ABCD, None, MAY),
    ("It could be A or B.", ABCD, None, MAY),
    ("B/C", ABCD, None, MAY),
    ("A, B, C, D", ABCD, None, MAY),
    ("A. cat\nB. dog\nC. bird\nD. fish", ABCD, None, MAY),
    ("A. cat B. dog C. bird D. fish", ABCD, None, MAY),
    ("Probably B.", ABCD, "B", MUST),  # one hedged answer still names one option
    ("I am not sure. Maybe B.", ABCD, "B", MAY),
    ("The correct answer is B, a cat.", ABCD, None, MAY),  # letter and text disagree
    ("The answer is not A.", ABCD, None, MAY),
    ("Uncertain.", ABCD, None, MAY),
    # --- letters that are not options
    ("D", ABC, None, MAY),
    ("The answer is E.", ABCD, None, MAY),
    ("(F)", ABCD, None, MAY),
    # --- refusals and "cannot determine"
    ("I cannot answer this question.", ABCD, "Z", MUST),
    ("I'm sorry, I can't help with that.", ABCD, "Z", MUST),
    ("It is impossible to determine from the image.", ABCD, "Z", MUST),
    ("None of the options.", ABCD, "Z", MUST),
    ("None of the options is correct.", ABCD, "Z", MUST),
    ("I'm sorry, but I cannot determine whether it is a cat or a dog.", ABCD, "Z", MUST),
    ("There is not enough information to answer.", ABCD, "Z", MUST),
    ("The answer cannot be determined from the image.", ABCD, "Z", MUST),
    ("None of the above", WITH_NONE, "C", MUST),  # here "none of the above" is an option's text
    ("It is none of the above.", WITH_NONE, "C", MUST),
    ("I can't tell for sure, but it looks like a dog.", ABCD, "B", MAY),
    # --- empty
    ("", ABCD, None, MAY),
    ("   \n\t ", ABCD, None, MAY),
    # --- an option named only to rule it out, with words in between: a human cannot tell which one is meant
    ("I would not choose A.", ABCD, None, MAY),
    ("I wouldn't pick B.", ABCD, None, MAY),
    ("It can't be A.", ABCD, None, MAY),
    ("I don't think it's A.", ABCD, None, MAY),
    ("I won't select D.", ABCD, None, MAY),
    ("It is unlikely to be C.", ABCD, None, MAY),
    ("Anything but A.", ABCD, None, MAY),
    ("B would be a mistake.", ABCD, None, MAY),
    ("I doubt it is B.", ABCD, None, MAY),
    ("It is not A but B.", ABCD, "B", MUST),
    ("Not A, instead B.", ABCD, "B", MAY),
]

# The table deliberately holds many rows a human cannot read either (human answer None): those must stay
# undecided. The bound is on the rows a human *can* read that the rules leave to step 2.
READABLE_UNDECIDED_BOUND = 5


def _row_id(row) -> str:
    text = row[0].replace("\n", "⏎")
    return text[:40] or "<empty>"


@pytest.mark.parametrize("response, options, human, must_decide", ROWS, ids=[_row_id(r) for r in ROWS])
def test_extractor_agrees_with_a_careful_human(response, options, human, must_decide):
    got = extract_by_rules(response, options)
    assert isinstance(got, Extraction)
    assert got.choice in (human, None), f"wrong choice {got.choice!r} ({got.reason}); a human reads {human!r}"
    assert (got.stage == "rules") == (got.choice is not None)
    assert got.reason
    if must_decide:
        assert got.choice == human, got.reason


def test_the_table_is_large_and_varied():
    assert len(ROWS) >= 90
    assert len({(r[0], tuple(r[1].items())) for r in ROWS}) == len(ROWS), "duplicate rows"
    humans = {r[2] for r in ROWS}
    assert {"A", "B", "C", "D", "Z", None} <= humans


def test_undecided_count():
    undecided = [r for r in ROWS if extract_by_rules(r[0], r[1]).choice is None]
    undecided_but_readable = [r for r in undecided if r[2] is not None]
    unreadable = [r for r in ROWS if r[2] is None]
    print(
        f"\nrule extraction: {len(undecided)} of {len(ROWS)} rows undecided; "
        f"{len(unreadable)} rows a human cannot read either, "
        f"{len(undecided_but_readable)} undecided rows a human can read"
    )
    assert len(undecided_but_readable) <= READABLE_UNDECIDED_BOUND
    assert len(undecided) <= len(unreadable) + READABLE_UNDECIDED_BOUND


@pytest.mark.parametrize(
    "response, options, words",
    [
        ("D", ABC, ["'D'", "not among the options"]),
        ("A and C", ABCD, ["several options named", "A, C"]),
        ("(B)", ABCD, ["letter form", "(B)"]),
        ("It is a dog.", ABCD, ["option text", "dog"]),
        ("I cannot answer.", ABCD, ["refusal"]),
        ("", ABCD, ["empty"]),
        ("The answer is B.", ABCD, ["answer statement"]),
    ],
)
def test_reasons_say_why(response, options, words):
    reason = extract_by_rules(response, options).reason
    for word in words:
        assert word in reason


def test_the_choice_is_spelled_like_the_options_keys():
    assert extract_by_rules("It is a dog.", {"a": "cat", "b": "dog"}).choice == "b"
    assert extract_by_rules("(B)", {"a": "cat", "b": "dog"}).choice == "b"
    assert extract_by_rules("I cannot answer.", {"a": "cat", "b": "dog"}).choice == "Z"


def test_language_of():
    assert language_of("图中是一只狗。") == "zh"
    assert language_of("What is in the image? 猫") == "zh"
    assert language_of("What is in the image?") == "en"
    assert language_of("") == "en"
    assert language_of("Ｂ") == "en"


# --- properties ---------------------------------------------------------------------------------------------

LETTERS = "ABCDEFGH"
WORDS = ["cat", "dog", "bird", "fish", "horse", "apple", "car", "tree", "house", "boat", "chair", "river"]


@st.composite
def option_maps(draw, texts=st.text(max_size=30)):
    n = draw(st.integers(min_value=2, max_value=len(LETTERS)))
    return {LETTERS[i]: draw(texts) for i in range(n)}


@st.composite
def word_options(draw):
    n = draw(st.integers(min_value=2, max_value=6))
    words = draw(st.permutations(WORDS))[:n]
    return {LETTERS[i]: w for i, w in enumerate(words)}


@settings(max_examples=400)
@given(response=st.text(max_size=400), options=option_maps())
def test_never_raises_and_returns_an_option_z_or_none(response, options):
    got = extract_by_rules(response, options)
    assert got.choice is None or got.choice == "Z" or got.choice in options
    assert got.stage in ("rules", "none")
    assert (got.stage == "rules") == (got.choice is not None)


@settings(max_examples=300)
@given(
    response=st.text(
        alphabet=st.sampled_from(list("ABCDEZ ab()[].:,\n答案是选不和or and not is the answer")), max_size=200
    ),
    options=option_maps(texts=st.sampled_from(WORDS + ["", "A", "12", "猫", "None of the above"])),
)
def test_never_raises_on_letter_soup(response, options):
    got = extract_by_rules(response, options)
    assert got.choice is None or got.choice == "Z" or got.choice in options


@given(
    options=word_options(),
    data=st.data(),
    template=st.sampled_from(
        [
            "{l}",
            "({l})",
            "{l}.",
            "Answer: {l}",
            "The answer is {l}.",
            "答案是{l}",
            "**{l}**",
            "{l}. {t}",
            "{t}",
            "It is a {t}.",
            "The answer is ({l}) {t}.",
        ]
    ),
)
def test_clear_answers_are_read(options, data, template):
    letter = data.draw(st.sampled_from(sorted(options)))
    got = extract_by_rules(template.format(l=letter, t=options[letter]), options)
    assert got.choice == letter, got.reason


def _full_width(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


@given(
    options=word_options(),
    data=st.data(),
    template=st.sampled_from(["{t}", "It is a {t}.", "答案：{t}", "The answer is ({l}) {t}.", "Not {o}; {t}."]),
    wide_options=st.booleans(),
)
def test_full_width_and_ascii_spellings_read_alike(options, data, template, wide_options):
    letter, other = data.draw(st.lists(st.sampled_from(sorted(options)), min_size=2, max_size=2, unique=True))
    response = template.format(l=letter, t=f"({options[letter]})", o=options[other])
    if wide_options:
        options = {k: _full_width(f"({t})") for k, t in options.items()}
    else:
        response = _full_width(response)
    got = extract_by_rules(response, options)
    assert got.choice == letter, got.reason


@given(options=word_options(), data=st.data())
def test_two_letters_joined_are_undecided(options, data):
    first, second = data.draw(st.lists(st.sampled_from(sorted(options)), min_size=2, max_size=2, unique=True))
    for joiner in (" or ", " and ", "/", ", "):
        assert extract_by_rules(f"The answer is {first}{joiner}{second}.", options).choice is None


@given(options=word_options(), data=st.data(), glued=st.sampled_from(list("型股超光号类族片级")))
def test_a_letter_glued_to_a_chinese_word_is_no_option_letter(options, data, glued):
    letter = data.draw(st.sampled_from(sorted(options)))
    for template in ("答案是{l}{g}", "The answer is {l}{g}", "选{l}{g}", "{l}{g}", "答案：{w}{g}"):
        response = template.format(l=letter, g=glued, w=_full_width(letter))
        assert extract_by_rules(response, options).choice is None, response


@given(
    options=word_options(),
    data=st.data(),
    template=st.sampled_from(
        [
            "Answer: {A}\nFinal answer: {l}",
            "The answer is {A}.\n\\boxed{{{l}}}",
            "Answer: {A}\n<answer>({l})</answer>",
            "答案：{A}\n最终答案：{l}",
            "答案是{A}。不对，答案是{l}。",
            "The answer is {o}. Correction: the answer is ({l}).",
            "The answer is ({a}) {o}. Wait, no: it is ({l}).",
        ]
    ),
    wide=st.booleans(),
)
def test_a_later_lower_case_answer_overrides_an_earlier_one(options, data, template, wide):
    first, later = data.draw(st.lists(st.sampled_from(sorted(options)), min_size=2, max_size=2, unique=True))
    response = template.format(A=first, a=first.lower(), o=options[first], l=later.lower())
    got = extract_by_rules(_full_width(response) if wide else response, options)
    assert got.choice == later, got.reason


def test_extract_command_reads_glued_and_lower_case_letters_like_a_human(tmp_path):
    """The tester's reproduction through `vlmdesk extract --input` (a subprocess): never the wrong option."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    cases = [
        ("答案是B型", BLOOD, "C"),
        ("The answer is B型", BLOOD, "C"),
        ("答案：B超检查", SCANS, "C"),
        ("选B超", SCANS, "C"),
        ("应选Ａ股。", SHARES, "B"),
        ("Answer: A\nFinal answer: ｂ", ABCD, "B"),
        ("The answer is A.\n\\boxed{b}", ABCD, "B"),
        ("Answer: A\n<answer>(b)</answer>", ABCD, "B"),
        ("答案：Ａ\n最终答案：ｂ", ABCD, "B"),
        ("答案是Ａ。不对，答案是ｂ。", ABCD, "B"),
        ("The answer is cat. Correction: the answer is (b).", ABCD, "B"),
        ("(b) cat", ABCD, None),
        ("b. cat", ABCD, None),
        ("ｂ：猫", ZH_PETS, None),
        ("(B) cat", ABCD, None),
    ]
    src = tmp_path / "responses.jsonl"
    src.write_text(
        "".join(
            json.dumps({"id": n, "question": "q", "options": o, "response": r}, ensure_ascii=False) + "\n"
            for n, (r, o, _) in enumerate(cases)
        ),
        encoding="utf-8",
    )
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-m", "vlmdesk", "--workspace", str(tmp_path / "ws.sqlite"), "extract", "--input", str(src)],
        cwd=root,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    got = {row["id"]: row["choice"] for row in map(json.loads, proc.stdout.splitlines())}
    assert got == {n: human for n, (_, _, human) in enumerate(cases)}
