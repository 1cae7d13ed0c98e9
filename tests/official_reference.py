"""The reference code the official metrics restate, ported as literally as Python allows (the tests hold
evaluator/scoring/official_*.py to these, item for item):

- MMMU: MMMU-Benchmark/MMMU, mmmu/utils/eval_utils.py at commit bb0b95a945998d91dfef37e969e07d49d1139438
  (parse_multi_choice_response, check_is_number, normalize_str, extract_numbers, parse_open_response, eval_open,
  eval_multi_choice), copied with its module-level `random.seed(42)` made an explicit reseed.
- OCRBench: open-compass/VLMEvalKit, vlmeval/dataset/image_vqa.py (OCRBench.evaluate) at commit
  e8e78f05f3080fe28154f2130321f17951c3be94, on a list of dicts instead of a DataFrame.
- HallusionBench: the same VLMEvalKit commit, vlmeval/dataset/utils/yorn.py (YOrN_Extraction, Hallusion_rating)
  and vlmeval/smp/misc.py (process_punctuation), on a list of dicts instead of a DataFrame.
"""

# ruff: noqa
from __future__ import annotations

import random
import re
from collections import defaultdict

import numpy as np


# --- MMMU eval_utils.py -----------------------------------------------------------------------------------------
def mmmu_reseed():
    random.seed(42)


def parse_multi_choice_response(response, all_choices, index2ans):
    for char in [",", ".", "!", "?", ";", ":", "'"]:
        response = response.strip(char)
    response = " " + response + " "  # add space to avoid partial match

    index_ans = True
    ans_with_brack = False
    candidates = []
    for choice in all_choices:  # e.g., (A) (B) (C) (D)
        if f"({choice})" in response:
            candidates.append(choice)
            ans_with_brack = True

    if len(candidates) == 0:
        for choice in all_choices:  # e.g., A B C D
            if f" {choice} " in response:
                candidates.append(choice)

    if len(candidates) == 0 and len(response.split()) > 5:
        for index, ans in index2ans.items():
            if ans.lower() in response.lower():
                candidates.append(index)
                index_ans = False  # it's content ans.

    if len(candidates) == 0:  # still not get answer, randomly choose one.
        pred_index = random.choice(all_choices)
    elif len(candidates) > 1:
        start_indexes = []
        if index_ans:
            if ans_with_brack:
                for can in candidates:
                    index = response.rfind(f"({can})")
                    start_indexes.append(index)
            else:
                for can in candidates:
                    index = response.rfind(f" {can} ")
                    start_indexes.append(index)
        else:
            for can in candidates:
                index = response.lower().rfind(index2ans[can].lower())
                start_indexes.append(index)
        pred_index = candidates[np.argmax(start_indexes)]
    else:
        pred_index = candidates[0]
    return pred_index


def check_is_number(string):
    try:
        float(string.replace(",", ""))
        return True
    except ValueError:
        return False


def normalize_str(string):
    string = string.strip()
    is_number = check_is_number(string)
    if is_number:
        string = string.replace(",", "")
        string = float(string)
        string = round(string, 2)
        return [string]
    else:
        string = string.lower()
        if len(string) == 1:
            return [" " + string, string + " "]
        return [string]


def extract_numbers(string):
    pattern_commas = r"-?\b\d{1,3}(?:,\d{3})+\b"
    pattern_scientific = r"-?\d+(?:\.\d+)?[eE][+-]?\d+"
    pattern_simple = r"-?(?:\d+\.\d+|\.\d+|\d+\b)(?![eE][+-]?\d+)(?![,\d])"
    numbers_with_commas = re.findall(pattern_commas, string)
    numbers_scientific = re.findall(pattern_scientific, string)
    numbers_simple = re.findall(pattern_simple, string)
    all_numbers = numbers_with_commas + numbers_scientific + numbers_simple
    return all_numbers


def parse_open_response(response):
    def get_key_subresponses(response):
        key_responses = []
        response = response.strip().strip(".").lower()
        sub_responses = re.split(r"\.\s(?=[A-Z])|\n", response)
        indicators_of_keys = ["could be ", "so ", "is ", "thus ", "therefore ", "final ", "answer ", "result "]
        key_responses = []
        for index, resp in enumerate(sub_responses):
            if index == len(sub_responses) - 1:
                indicators_of_keys.extend(["="])
            shortest_key_response = None
            for indicator in indicators_of_keys:
                if indicator in resp:
                    if not shortest_key_response:
                        shortest_key_response = resp.split(indicator)[-1].strip()
                    else:
                        if len(resp.split(indicator)[-1].strip()) < len(shortest_key_response):
                            shortest_key_response = resp.split(indicator)[-1].strip()
            if shortest_key_response:
                if shortest_key_response.strip() not in [":", ",", ".", "!", "?", ";", ":", "'"]:
                    key_responses.append(shortest_key_response)
        if len(key_responses) == 0:
            return [response]
        return key_responses

    key_responses = get_key_subresponses(response)
    pred_list = key_responses.copy()
    for resp in key_responses:
        pred_list.extend(extract_numbers(resp))
    tmp_pred_list = []
    for i in range(len(pred_list)):
        tmp_pred_list.extend(normalize_str(pred_list[i]))
    pred_list = tmp_pred_list
    pred_list = list(set(pred_list))
    return pred_list


def eval_multi_choice(gold_i, pred_i):
    correct = False
    if isinstance(gold_i, list):
        for answer in gold_i:
            if answer == pred_i:
                correct = True
                break
    else:
        if gold_i == pred_i:
            correct = True
    return correct


def eval_open(gold_i, pred_i):
    correct = False
    if isinstance(gold_i, list):
        norm_answers = []
        for answer in gold_i:
            norm_answers.extend(normalize_str(answer))
    else:
        norm_answers = normalize_str(gold_i)
    for pred in pred_i:
        if isinstance(pred, str):
            for norm_ans in norm_answers:
                if isinstance(norm_ans, str) and norm_ans in pred:
                    if not correct:
                        correct = True
                    break
        else:
            if pred in norm_answers:
                if not correct:
                    correct = True
                break
    return correct


# --- VLMEvalKit OCRBench.evaluate ------------------------------------------------------------------------------
def ocrbench_evaluate(lines):
    OCRBench_score = {
        "Regular Text Recognition": 0,
        "Irregular Text Recognition": 0,
        "Artistic Text Recognition": 0,
        "Handwriting Recognition": 0,
        "Digit String Recognition": 0,
        "Non-Semantic Text Recognition": 0,
        "Scene Text-centric VQA": 0,
        "Doc-oriented VQA": 0,
        "Key Information Extraction": 0,
        "Handwritten Mathematical Expression Recognition": 0,
    }
    for line in lines:
        predict = str(line["prediction"])
        answers = eval(line["answer"])
        category = line["category"]
        if category == "Handwritten Mathematical Expression Recognition":
            for j in range(len(answers)):
                answer = answers[j].strip().replace("\n", " ").replace(" ", "")
                predict = predict.strip().replace("\n", " ").replace(" ", "")
                if answer in predict:
                    OCRBench_score[category] += 1
                    break
        else:
            for j in range(len(answers)):
                answer = answers[j].lower().strip().replace("\n", " ")
                predict = predict.lower().strip().replace("\n", " ")
                if answer in predict:
                    OCRBench_score[category] += 1
                    break
    final_score_dict = {}
    final_score_dict["Text Recognition"] = (
        OCRBench_score["Regular Text Recognition"]
        + OCRBench_score["Irregular Text Recognition"]
        + OCRBench_score["Artistic Text Recognition"]
        + OCRBench_score["Handwriting Recognition"]
        + OCRBench_score["Digit String Recognition"]
        + OCRBench_score["Non-Semantic Text Recognition"]
    )
    final_score_dict["Scene Text-centric VQA"] = OCRBench_score["Scene Text-centric VQA"]
    final_score_dict["Doc-oriented VQA"] = OCRBench_score["Doc-oriented VQA"]
    final_score_dict["Key Information Extraction"] = OCRBench_score["Key Information Extraction"]
    final_score_dict["Handwritten Mathematical Expression Recognition"] = OCRBench_score[
        "Handwritten Mathematical Expression Recognition"
    ]
    final_score_dict["Final Score"] = (
        final_score_dict["Text Recognition"]
        + final_score_dict["Scene Text-centric VQA"]
        + final_score_dict["Doc-oriented VQA"]
        + final_score_dict["Key Information Extraction"]
        + final_score_dict["Handwritten Mathematical Expression Recognition"]
    )
    final_score_dict["Final Score Norm"] = float(final_score_dict["Final Score"]) / 10
    return final_score_dict


# --- VLMEvalKit yorn.py / misc.py ------------------------------------------------------------------------------
def process_punctuation(inText):
    outText = inText
    punct = [";", r"/", "[", "]", '"', "{", "}", "(", ")", "=", "+", "\\", "_", "-", ">", "<", "@", "`", ",", "?", "!"]
    commaStrip = re.compile(r"(\d)(,)(\d)")
    periodStrip = re.compile(r"(?<!\d)\.(?!\d)")
    for p in punct:
        if (p + " " in inText or " " + p in inText) or (re.search(commaStrip, inText) is not None):
            outText = outText.replace(p, "")
        else:
            outText = outText.replace(p, " ")
    outText = periodStrip.sub("", outText, re.UNICODE)
    return outText


def YOrN_Extraction(output):
    s = output.lower()
    words = process_punctuation(s).split()
    if "yes" in words and "no" not in words:
        return "Yes"
    if "yes" not in words and "no" in words:
        return "No"
    return "Unknown"


def hallusion_rating(rows):
    """rows: dicts with index, l2-category, answer, prediction; `score` as ImageYORNDataset.evaluate sets it."""
    data = [dict(r, score=(r["answer"] == YOrN_Extraction(str(r["prediction"])))) for r in rows]

    def calc_fAcc(data):
        res = defaultdict(list)
        for line in data:
            res[f"{line['l2-category']}_{line['set_id']}_{line['figure_id']}"].append(line["score"])
        return np.mean([np.all(x) for x in res.values()]) * 100

    def calc_qAcc(data):
        res = defaultdict(list)
        for line in data:
            res[f"{line['l2-category']}_{line['set_id']}_{line['question_id']}"].append(line["score"])
        return np.mean([np.all(x) for x in res.values()]) * 100

    def calc_aAcc(data):
        return np.mean([line["score"] for line in data]) * 100

    for line in data:
        line["set_id"] = line["index"].split("_")[3]
        line["figure_id"] = line["index"].split("_")[4]
        line["question_id"] = line["index"].split("_")[5]
    return {"aAcc": calc_aAcc(data), "fAcc": calc_fAcc(data), "qAcc": calc_qAcc(data)}
