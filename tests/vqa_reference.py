"""The reference rules the open metrics restate, written here the way their sources compute them (Python 3), for
tests that check evaluator/scoring/open_metrics.py against them on many inputs.

- `OfficialVQAEval`: GT-Vision-Lab/VQA, PythonEvaluationTools/vqaEvaluation/vqaEval.py (commit a013f00): `evaluate`
  over `gts[quesId]['answers']` (answer dicts) and `res[quesId]['answer']`, with `processPunctuation` and
  `processDigitArticle` as written there (its "(?!<=\\d)" lookahead, the re.UNICODE passed as Pattern.sub's count,
  normalising only when the ten answers differ, the leave-one-out over answer dicts); `evalQA` unrounded.
- `evalai_submission`: EvolvingLMMs-Lab/lmms-eval, lmms_eval/tasks/_task_utils/vqa_eval_metric.py
  (`EvalAIAnswerProcessor.__call__`, commit 61e5060), the processing EvalAI's VQA server applies to a submitted answer
  before vqaEval.py (lmms-eval applies it to every answer of VQAv2, TextVQA, OK-VQA and VizWiz).
- `lvlm_ehub_evaluate`: OpenGVLab/Multi-Modality-Arena, LVLM_evaluation/utils/tools.py (commit bd2999a),
  `VQAEval.evaluate` with `has_word`: 1 when a normalised reference occurs in the normalised answer as whole words.
- `docvqa_anls`: the DocVQA / ST-VQA evaluation's ANLS for one question, with a plain dynamic-programming
  Levenshtein distance (no library).
"""

from __future__ import annotations

import re

CONTRACTIONS = {
    "aint": "ain't", "arent": "aren't", "cant": "can't", "couldve": "could've", "couldnt": "couldn't",
    "couldn'tve": "couldn't've", "couldnt've": "couldn't've", "didnt": "didn't", "doesnt": "doesn't",
    "dont": "don't", "hadnt": "hadn't", "hadnt've": "hadn't've", "hadn'tve": "hadn't've", "hasnt": "hasn't",
    "havent": "haven't", "hed": "he'd", "hed've": "he'd've", "he'dve": "he'd've", "hes": "he's", "howd": "how'd",
    "howll": "how'll", "hows": "how's", "Id've": "I'd've", "I'dve": "I'd've", "Im": "I'm", "Ive": "I've",
    "isnt": "isn't", "itd": "it'd", "itd've": "it'd've", "it'dve": "it'd've", "itll": "it'll", "let's": "let's",
    "maam": "ma'am", "mightnt": "mightn't", "mightnt've": "mightn't've", "mightn'tve": "mightn't've",
    "mightve": "might've", "mustnt": "mustn't", "mustve": "must've", "neednt": "needn't", "notve": "not've",
    "oclock": "o'clock", "oughtnt": "oughtn't", "ow's'at": "'ow's'at", "'ows'at": "'ow's'at", "'ow'sat": "'ow's'at",
    "shant": "shan't", "shed've": "she'd've", "she'dve": "she'd've", "she's": "she's", "shouldve": "should've",
    "shouldnt": "shouldn't", "shouldnt've": "shouldn't've", "shouldn'tve": "shouldn't've",
    "somebody'd": "somebodyd", "somebodyd've": "somebody'd've", "somebody'dve": "somebody'd've",
    "somebodyll": "somebody'll", "somebodys": "somebody's", "someoned": "someone'd", "someoned've": "someone'd've",
    "someone'dve": "someone'd've", "someonell": "someone'll", "someones": "someone's", "somethingd": "something'd",
    "somethingd've": "something'd've", "something'dve": "something'd've", "somethingll": "something'll",
    "thats": "that's", "thered": "there'd", "thered've": "there'd've", "there'dve": "there'd've",
    "therere": "there're", "theres": "there's", "theyd": "they'd", "theyd've": "they'd've", "they'dve": "they'd've",
    "theyll": "they'll", "theyre": "they're", "theyve": "they've", "twas": "'twas", "wasnt": "wasn't",
    "wed've": "we'd've", "we'dve": "we'd've", "weve": "we've", "werent": "weren't", "whatll": "what'll",
    "whatre": "what're", "whats": "what's", "whatve": "what've", "whens": "when's", "whered": "where'd",
    "wheres": "where's", "whereve": "where've", "whod": "who'd", "whod've": "who'd've", "who'dve": "who'd've",
    "wholl": "who'll", "whos": "who's", "whove": "who've", "whyll": "why'll", "whyre": "why're", "whys": "why's",
    "wont": "won't", "wouldve": "would've", "wouldnt": "wouldn't", "wouldnt've": "wouldn't've",
    "wouldn'tve": "wouldn't've", "yall": "y'all", "yall'll": "y'all'll", "y'allll": "y'all'll",
    "yall'd've": "y'all'd've", "y'alld've": "y'all'd've", "y'all'dve": "y'all'd've", "youd": "you'd",
    "youd've": "you'd've", "you'dve": "you'd've", "youll": "you'll", "youre": "you're", "youve": "you've",
}  # fmt: skip
MANUAL_MAP = {
    "none": "0", "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10",
}  # fmt: skip
ARTICLES = ["a", "an", "the"]
PERIOD_STRIP = re.compile(r"(?!<=\d)(\.)(?!\d)")
COMMA_STRIP = re.compile(r"(\d)(\,)(\d)")
PUNCT = [";", r"/", "[", "]", '"', "{", "}", "(", ")", "=", "+", "\\", "_", "-", ">", "<", "@", "`", ",", "?", "!"]


def process_punctuation(in_text: str) -> str:
    out_text = in_text
    for p in PUNCT:
        if (p + " " in in_text or " " + p in in_text) or (re.search(COMMA_STRIP, in_text) is not None):
            out_text = out_text.replace(p, "")
        else:
            out_text = out_text.replace(p, " ")
    return PERIOD_STRIP.sub("", out_text, re.UNICODE)  # noqa: B034 (vqaEval.py's call: count=32, as written there)


def process_digit_article(in_text: str) -> str:
    manual_map = dict(MANUAL_MAP)
    out_text = []
    for word in in_text.lower().split():
        word = manual_map.setdefault(word, word)
        if word not in ARTICLES:
            out_text.append(word)
    for word_id, word in enumerate(out_text):
        if word in CONTRACTIONS:
            out_text[word_id] = CONTRACTIONS[word]
    return " ".join(out_text)


class OfficialVQAEval:
    """vqaEval.py's VQAEval.evaluate over {quesId: {'answers': [{'answer_id', 'answer'}, …]}} and {quesId: answer}."""

    def __init__(self, gts: dict[int, list[str]], res: dict[int, str]):
        self.gts = {
            q: {"answers": [{"answer_id": i + 1, "answer": a} for i, a in enumerate(answers)]}
            for q, answers in gts.items()
        }
        self.res = {q: {"answer": a} for q, a in res.items()}
        self.evalQA: dict[int, float] = {}

    def evaluate(self) -> float:
        acc_qa = []
        for ques_id in self.gts:
            for ans_dic in self.gts[ques_id]["answers"]:
                ans_dic["answer"] = ans_dic["answer"].replace("\n", " ")
                ans_dic["answer"] = ans_dic["answer"].replace("\t", " ")
                ans_dic["answer"] = ans_dic["answer"].strip()
            res_ans = self.res[ques_id]["answer"]
            res_ans = res_ans.replace("\n", " ")
            res_ans = res_ans.replace("\t", " ")
            res_ans = res_ans.strip()
            gt_acc = []
            gt_answers = [ans["answer"] for ans in self.gts[ques_id]["answers"]]
            if len(set(gt_answers)) > 1:
                for ans_dic in self.gts[ques_id]["answers"]:
                    ans_dic["answer"] = process_punctuation(ans_dic["answer"])
                    ans_dic["answer"] = process_digit_article(ans_dic["answer"])
                res_ans = process_punctuation(res_ans)
                res_ans = process_digit_article(res_ans)
            for gt_ans_datum in self.gts[ques_id]["answers"]:
                other_gt_ans = [item for item in self.gts[ques_id]["answers"] if item != gt_ans_datum]
                matching_ans = [item for item in other_gt_ans if item["answer"] == res_ans]
                acc = min(1, float(len(matching_ans)) / 3)
                gt_acc.append(acc)
            avg_gt_acc = float(sum(gt_acc)) / len(gt_acc)
            acc_qa.append(avg_gt_acc)
            self.evalQA[ques_id] = avg_gt_acc
        return float(sum(acc_qa)) / len(acc_qa)


EVALAI_COMMA_STRIP = re.compile(r"(?<=\d)(\,)+(?=\d)")


def evalai_submission(item: str) -> str:
    item = item.lower()
    item = item.replace(",", "").replace("?", "").replace("'s", " 's").strip()  # word_tokenize
    item = item.replace("\n", " ").replace("\t", " ").strip()
    out_text = item
    for p in PUNCT:  # process_punctuation, with EvalAI's COMMA_STRIP
        if (p + " " in item or " " + p in item) or (re.search(EVALAI_COMMA_STRIP, item) is not None):
            out_text = out_text.replace(p, "")
        else:
            out_text = out_text.replace(p, " ")
    out_text = PERIOD_STRIP.sub("", out_text, re.UNICODE)  # noqa: B034 (as written there)
    return process_digit_article(out_text)


def has_word(sentence: str, word: str) -> bool:
    pattern = r"\b" + re.escape(word) + r"\b"
    return re.search(pattern, sentence) is not None


def lvlm_ehub_evaluate(answer: str, gt_answers: list[str]) -> int:
    answer = answer.replace("\n", " ").replace("\t", " ").strip()
    answer = process_digit_article(process_punctuation(answer))
    gt_answers = list(gt_answers)
    for i in range(len(gt_answers)):
        gt_answers[i] = gt_answers[i].replace("\n", " ").replace("\t", " ").strip()
        gt_answers[i] = process_digit_article(process_punctuation(gt_answers[i]))
        if has_word(answer, gt_answers[i]):
            return 1
    return 0


def levenshtein(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def docvqa_anls(answer: str, gt_answers: list[str], threshold: float = 0.5) -> float:
    values = []
    for gt in gt_answers:
        gt_answer = " ".join(gt.strip().lower().split())
        det_answer = " ".join(answer.strip().lower().split())
        dist = levenshtein(gt_answer, det_answer)
        length = max(len(gt_answer), len(det_answer))
        values.append(0.0 if length == 0 else float(dist) / float(length))
    question_result = 1 - min(values)
    return 0.0 if question_result < threshold else question_result
