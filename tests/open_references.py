"""The reference tools' open metrics, restated as their files compute them (Python 3), for the tests that hold
evaluator/scoring/open_metrics.py to them (issue 37). Each from the commit named:

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

import re
import statistics

import numpy as np

from tests import vqa_reference as ref

EVALAI_PERIOD_STRIP = re.compile(r"(?!<=\d)(\.)(?!\d)")
EVALAI_COMMA_STRIP = re.compile(r"(?<=\d)(\,)+(?=\d)")


class EvalAIAnswerProcessor:
    """lmms_eval/tasks/_task_utils/vqa_eval_metric.py @ 75571cf (its CONTRACTIONS, NUMBER_MAP, ARTICLES and
    PUNCTUATIONS are vqaEval.py's, which tests/vqa_reference.py holds)."""

    def word_tokenize(self, word):
        word = word.lower()
        word = word.replace(",", "").replace("?", "").replace("'s", " 's")
        return word.strip()

    def process_punctuation(self, in_text):
        out_text = in_text
        for p in ref.PUNCT:
            if (p + " " in in_text or " " + p in in_text) or (re.search(EVALAI_COMMA_STRIP, in_text) is not None):
                out_text = out_text.replace(p, "")
            else:
                out_text = out_text.replace(p, " ")
        out_text = EVALAI_PERIOD_STRIP.sub("", out_text, re.UNICODE)  # noqa: B034 (as written there)
        return out_text

    def __call__(self, item):
        item = self.word_tokenize(item)
        item = item.replace("\n", " ").replace("\t", " ").strip()
        item = self.process_punctuation(item)
        item = ref.process_digit_article(item)
        return item


def lmms_textvqa(prediction: str, answers: list[str]) -> float:
    """lmms_eval/tasks/textvqa/utils.py textvqa_process_results @ 75571cf (ok_vqa_process_results is the same)."""
    eval_ai_processor = EvalAIAnswerProcessor()
    res_ans = eval_ai_processor(prediction)
    answers = list(answers)
    gt_acc = []
    for i in range(len(answers)):
        answers[i] = eval_ai_processor(answers[i])
    for i in range(len(answers)):
        other = [answers[j] for j in range(len(answers)) if i != j]
        matching = [item for item in other if item == res_ans]
        gt_acc.append(min(1, float(len(matching)) / 3))
    return statistics.mean(gt_acc)


def vlmevalkit_process_punctuation(in_text):
    """vlmeval/smp/misc.py process_punctuation @ e8e78f0."""
    out_text = in_text
    comma_strip = re.compile(r"(\d)(,)(\d)")
    period_strip = re.compile(r"(?<!\d)\.(?!\d)")
    for p in ref.PUNCT:
        if (p + " " in in_text or " " + p in in_text) or (re.search(comma_strip, in_text) is not None):
            out_text = out_text.replace(p, "")
        else:
            out_text = out_text.replace(p, " ")
    return period_strip.sub("", out_text, re.UNICODE)  # noqa: B034 (as written there)


def vlmevalkit_process_answer(answer):
    answer = answer.replace("\n", " ").replace("\t", " ").strip()
    return ref.process_digit_article(vlmevalkit_process_punctuation(answer))


def vlmevalkit_vqa_score(prediction: str, answers: list[str]) -> float:
    """vqa_eval.py process_line(method='vqa_score') then hit_calculate's np.mean(match) @ e8e78f0."""
    gt = [vlmevalkit_process_answer(x) for x in answers]
    pred = vlmevalkit_process_answer(prediction)
    match = []
    for current_idx, _ in enumerate(gt):
        other = [item for idx, item in enumerate(gt) if idx != current_idx]
        match.append(min(1, float(len([item for item in other if item == pred])) / 3))
    return float(np.mean(match))


def official_vqaeval(answer: str, answers: list[str]) -> float:
    evaluation = ref.OfficialVQAEval({1: list(answers)}, {1: answer})
    evaluation.evaluate()
    return evaluation.evalQA[1]


def levenshtein_distance(s1, s2):
    """lmms_eval/api/metrics.py and vlmeval/dataset/utils/vqa_eval.py (the same function)."""
    if len(s1) > len(s2):
        s1, s2 = s2, s1
    distances = range(len(s1) + 1)
    for i2, c2 in enumerate(s2):
        distances_ = [i2 + 1]
        for i1, c1 in enumerate(s1):
            if c1 == c2:
                distances_.append(distances[i1])
            else:
                distances_.append(1 + min((distances[i1], distances[i1 + 1], distances_[-1])))
        distances = distances_
    return distances[-1]


def lmms_anls(references, prediction, thresh_hold=0.5):
    """lmms_eval/api/metrics.py anls @ 75571cf."""
    values = []
    for answer in references:
        gt_answer = " ".join(answer.strip().lower().split())
        det_answer = " ".join(prediction.strip().lower().split())
        dist = levenshtein_distance(gt_answer, det_answer)
        length = max(len(answer.upper()), len(prediction.upper()))
        values.append(0.0 if length == 0 else float(dist) / float(length))
    question_result = 1 - min(values)
    return 0 if question_result < thresh_hold else question_result


def vlmevalkit_anls(references, prediction, anls_threshold=0.5):
    """vqa_eval.py anls_compute per reference, then hit_calculate's DocVQA branch @ e8e78f0."""
    match = []
    for groundtruth in references:
        gt_answer = " ".join(groundtruth.strip().lower().split())
        det_answer = " ".join(prediction.strip().lower().split())
        dist = levenshtein_distance(gt_answer, det_answer)
        length = max(len(groundtruth.upper()), len(prediction.upper()))
        match.append(0.0 if length == 0 else float(dist) / float(length))
    return 0.0 if 1 - min(match) < anls_threshold else 1 - min(match)


REFERENCE_OF = {"vqaeval": official_vqaeval, "evalai": lmms_textvqa, "vlmevalkit": vlmevalkit_vqa_score}


# Answers that exercise every branch of vqaEval.py's normalisation: number words, articles, contractions (the
# capitalised keys that lower-casing never reaches), punctuation next to spaces or not, a comma between digits (which
# removes every sign), periods between and beside digits, more than 32 periods, tabs, newlines, unicode, empties.
HOSTILE = [
    "",
    " ",
    "\t\n",
    "Two",
    "two",
    "2",
    "the two",
    "A dog.",
    "dog",
    "Dog!",
    "dogs",
    "yes",
    "Yes",
    "YES.",
    "none",
    "zero",
    "ten",
    "Ten dogs",
    "dont",
    "don't",
    "Im",
    "im",
    "Ive",
    "I've",
    "cant",
    "yall'll",
    "1,000",
    "1000",
    "1,000 dogs, 2 cats",
    "3.5",
    "3. 5",
    "end.",
    "a.b.c",
    "." * 40 + "x",
    "x" + ".x" * 40,
    "red/blue",
    "red / blue",
    "left-hand",
    "left - hand",
    "(yes)",
    "[no]",
    '"quoted"',
    "a_b",
    "a=b+c",
    "@home",
    "why?!",
    "the the the",
    "an apple",
    "café",
    "naïve résumé",
    "東京",
    "yes\nno",
    "yes\tno",
    "stop sign",
    "Stop Sign.",
    "stop, sign",
    "o'clock",
    "oclock",
    "12:30",
    "$5",
    "50%",
    "a\\b",
    "<br>",
]
REFERENCE_SETS = [
    ["2"] * 3 + ["two"] * 7,
    ["yes"] * 10,
    ["Yes"] * 10,
    ["dog"] * 4 + ["dogs"] * 3 + ["puppy"] * 3,
    ["stop sign"] * 5 + ["stop"] * 5,
    ["1,000", "1000", "1000", "one thousand", "1k", "1,000", "1000", "thousand", "1000", "1,000"],
    ["none"] * 2 + ["0"] * 8,
    ["don't", "dont", "do not", "don't", "dont", "no", "don't", "dont", "no", "no"],
    ["red/blue", "red blue", "red and blue", "red", "blue", "red/blue", "red/blue", "purple", "red", "blue"],
    ["a.b.c", "abc", "a b c", "a.b.c", "abc", "a.b.c", "a.b.c", "abc", "abc", "abc"],
    ["café"] * 3 + ["cafe"] * 7,
    ["yes"],
    ["dog", "dog", "cat"],
    ["", "", "x", "x", "x", "", "", "", "", ""],
    ["3.5"] * 6 + ["3 5"] * 4,
    ["o'clock", "oclock"] * 5,
    ["Im", "I'm", "im"] * 3 + ["Im"],
]
