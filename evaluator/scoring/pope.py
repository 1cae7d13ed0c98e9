"""POPE (Polling-based Object Probing Evaluation) without a database: answer parsers, metrics, question and
answer files, and building new POPE question sets from object annotations.

Two parsers are kept side by side (as lm-evaluation-harness keeps "strict" and "flexible" pipelines) so stored
responses can be re-scored either way: `parse_official` reproduces the published numbers, `parse_strict`
reads what the model meant and admits "unknown" instead of guessing.
"""

from __future__ import annotations

import json
import os
import random
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, BinaryIO

from db.errors import InvalidInput
from evaluator.formats.importers.common import (
    MAX_JSON_ARRAY_BYTES,
    decoded_lines,
    json_loads,
    open_input,
    read_input_text,
)
from evaluator.formats.outfiles import AtomicOutput
from evaluator.types import POPE_SETTINGS, PopeParser

SETTINGS = POPE_SETTINGS
YES_NO = ("yes", "no")
"""POPE's labels, and the answer keys of every yes/no item as vlmdesk stores them."""
FRACTION_METRICS = ("accuracy", "precision", "recall", "f1", "yes_ratio")

# --------------------------------------------------------------------------------------------------- parsers


def parse_official(text: str) -> str:
    """The answer as RUCAIBox/POPE evaluate.py reads it: "yes" or "no".

    A literal port: first sentence only, commas dropped, split on single spaces, and only the exact tokens
    "No", "no" and "not" mean no. So "NO", "No!", "nope" and "" all count as yes — kept on purpose, because
    these are the rules behind every published POPE number.
    """
    if text.find(".") != -1:
        text = text.split(".")[0]
    words = text.replace(",", "").split(" ")
    return "no" if ("No" in words or "not" in words or "no" in words) else "yes"


# "no doubt" is an intensifier, not an answer: rewrite it to an affirmation before the rules below see "no".
_NO_DOUBT = re.compile(r"\b(?:no\s+doubt|without\s+(?:a\s+)?doubt|undoubtedly|doubtless)\b")
# A committed answer at the start of a sentence wins over anything after it ("Yes, maybe" -> yes).
# "no idea", "no way to tell" and "yes and no" are hedges, not answers.
_LEADING = re.compile(
    r"^\W*(?:(yes|yeah|yep|yup)\b(?!\s+and\s+no\b)"
    r"|(no|nope|nah)\b(?!\s+(?:idea|way\s+to)\b)|(不(?!确定|清楚|知道)))"
)
_HEDGE = re.compile(
    r"\b(?:not\s+(?:sure|certain|clear|possible\s+to\s+(?:tell|say|determine))|unsure|uncertain|unclear"
    r"|ambiguous|maybe|perhaps|possibly|might\s+be|could\s+be"
    r"|(?:hard|difficult|impossible)\s+to\s+(?:tell|say|determine|know|see\s+(?:if|whether))"
    r"|(?:cannot|can't|can\s+not|unable\s+to|not\s+able\s+to)\s+(?:tell|determine|say|confirm|be\s+sure|know)"
    # A refusal to look at the picture says nothing about the object.
    r"|(?:cannot|can't|can\s+not|unable\s+to)\s+(?:see|view|access|process)\s+(?:the\s+|this\s+|any\s+)?"
    r"(?:image|picture|photo)s?"
    r"|(?:don't|do\s+not)\s+know|no\s+idea|no\s+way\s+to\s+(?:tell|know|say|determine)|yes\s+and\s+no"
    r"|as\s+an\s+ai)\b"
    r"|不确定|无法确定|无法判断|不知道|不清楚|看不清"
)
_YES_WORD = re.compile(r"\b(?:yes|yeah|yep|yup)\b")
_NEGATION = re.compile(
    r"\b(?:no|not|none|nothing|nobody|nowhere|neither|nor|never|cannot|absent|false|incorrect|negative"
    r"|nope|nah|dont|doesnt|isnt|arent|cant|wasnt|werent)\b|n't\b|\bcan\s+not\b"
    r"|不是|没有|没|否|不存在|不在|无"
)
_AFFIRMATION = re.compile(
    r"\b(?:true|correct|indeed|certainly|definitely|absolutely|affirmative|of\s+course"
    r"|there\s+(?:is|are|was|were|exists?)|there's|i\s+(?:can\s+)?(?:see|spot|notice|observe)"
    r"|(?:we|you)\s+can\s+see|can\s+be\s+seen|visible|present|appears?|shows?|showing|contains?|containing"
    r"|depicts?|features?|think\s+so|believe\s+so)\b"
    r"|是|有|存在|对|可以看到"
)
_SENTENCES = re.compile(r"[^.!?;\n。！？；]+[.!?;\n。！？；]*")


def parse_strict(text: str) -> str:
    """What a free-form yes/no answer means: "yes", "no" or "unknown" (never a guess).

    Case-insensitive and punctuation tolerant. Sentences are read in order and the first one that decides
    wins; questions ("Is there a dog?") are skipped; within a sentence: a leading yes/no > a hedge
    (-> unknown) > a standalone "yes" ("Sure! Yes", "The answer is yes") > a negation ("there is no",
    "isn't", "I don't see", "not present") > an affirmative statement ("There is a dog", "I can see a cat").
    Negation is checked before affirmation because "there is no dog" contains "there is". Decisions on ambiguous
    phrasings: "No doubt, there is a cat" -> yes ("no doubt" is an intensifier); "No idea" -> unknown;
    "Yes and no" -> unknown; "Yes, maybe" -> yes (the leading answer commits); "There might be a dog" ->
    unknown (hedged); "There is a dog, not a cat" -> no (a contrast is read as its negation: the object asked
    about is unknown here); a bare description without an existence marker ("A dog sits on the couch") or
    a lone "Sure" -> unknown; "I can't see the image" -> unknown (a refusal). Chinese: 是/有/对 yes,
    不是/没有/否/不 no, 不确定/不知道 unknown.
    """
    # "是否" is "whether" (an echoed question), not an answer: drop it before 是 / 否 are read.
    normal = text.replace("\u2019", "'").replace("\u2018", "'").replace("是否", "").lower()
    for sentence in _SENTENCES.findall(normal):
        if sentence.rstrip()[-1:] in ("?", "？"):
            continue  # an echoed question ("Is there a dog? Yes.") is not an answer
        sentence = _NO_DOUBT.sub("certainly", sentence.strip(" \t\n.!;。！；"))
        if not sentence:
            continue
        leading = _LEADING.match(sentence)
        if leading:
            return "yes" if leading.group(1) else "no"
        if _HEDGE.search(sentence):
            return "unknown"
        if _YES_WORD.search(sentence):
            return "yes"
        if _NEGATION.search(sentence):
            return "no"
        if _AFFIRMATION.search(sentence):
            return "yes"
    return "unknown"


PARSERS: dict[PopeParser, Callable[[str], str]] = {"official": parse_official, "strict": parse_strict}
"""The POPE answer parsers by name, in the order reports list them."""

# --------------------------------------------------------------------------------------------------- metrics


def _ratio(numerator: float, denominator: float) -> float | None:
    # A metric over nothing is undefined, not 0: None keeps "no data" apart from "all wrong".
    return None if denominator == 0 else numerator / denominator


@dataclass(frozen=True)
class PopeMetrics:
    """POPE's figures over one set of answers, "yes" the positive class; fractions are None when a denominator
    is zero. `to_json()` is the object `report --json` and `pope score --json` print (keys in this order)."""

    questions: int
    tp: int
    fp: int
    tn: int
    fn: int
    unknown: int
    accuracy: float | None
    precision: float | None
    recall: float | None
    f1: float | None
    yes_ratio: float | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PopeMeans:
    """Each fraction of PopeMetrics averaged over settings (settings where it is None left out)."""

    accuracy: float | None
    precision: float | None
    recall: float | None
    f1: float | None
    yes_ratio: float | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def pope_metrics(labels: Sequence[str], answers: Sequence[str]) -> PopeMetrics:
    """Confusion counts and fractions with "yes" as the positive class.

    `labels` are "yes"/"no"; `answers` are parsed answers "yes"/"no"/"unknown". Unknown answers count in
    `questions` (so they lower accuracy) and against recall when the label is yes (recall divides by the
    questions labelled yes, not by tp + fn). With `parse_official` there are no unknowns and every number
    equals the official script's, operation for operation.
    """
    if len(labels) != len(answers):
        raise ValueError(f"{len(labels)} labels but {len(answers)} answers")
    tp = fp = tn = fn = unknown = labelled_yes = 0
    for index, (label, answer) in enumerate(zip(labels, answers)):
        if label not in YES_NO:
            raise ValueError(f"label {index}: {label!r} is not 'yes' or 'no'")
        if answer not in (*YES_NO, "unknown"):
            raise ValueError(f"answer {index}: {answer!r} is not 'yes', 'no' or 'unknown'")
        labelled_yes += label == "yes"
        if answer == "unknown":
            unknown += 1
        elif answer == "yes":
            tp, fp = (tp + 1, fp) if label == "yes" else (tp, fp + 1)
        else:
            tn, fn = (tn + 1, fn) if label == "no" else (tn, fn + 1)
    return confusion_metrics(tp, fp, tn, fn, unknown, labelled_yes)


def confusion_metrics(tp: int, fp: int, tn: int, fn: int, unknown: int, labelled_yes: int) -> PopeMetrics:
    """POPE's figures from its confusion counts (pope_metrics counts them; a run's report reads them kept)."""
    questions = tp + fp + tn + fn + unknown
    precision = _ratio(tp, tp + fp)
    recall = _ratio(tp, labelled_yes)
    f1 = None
    if precision is not None and recall is not None and precision + recall != 0:
        f1 = 2 * precision * recall / (precision + recall)  # same operation order as the script: equal floats
    return PopeMetrics(
        questions,
        tp,
        fp,
        tn,
        fn,
        unknown,
        accuracy=_ratio(tp + tn, questions),
        precision=precision,
        recall=recall,
        f1=f1,
        yes_ratio=_ratio(tp + fp, questions),
    )


def mean_over_settings(metrics: Sequence[PopeMetrics]) -> PopeMeans:
    """The mean of each fraction metric over settings, leaving out settings where it is None (None if all are),
    as the paper's tables average the three settings' figures."""
    mean = {}
    for metric in FRACTION_METRICS:
        values = [v for m in metrics if (v := getattr(m, metric)) is not None]
        mean[metric] = sum(values) / len(values) if values else None
    return PopeMeans(**mean)


# ----------------------------------------------------------------------------------------------------- files


@dataclass(frozen=True)
class PopeAnswer:
    """One model answer read from a file; `source` and `line` exist so errors can point at it."""

    text: str
    question_id: int | str | None
    source: str
    line: int


# Bounds of the files read here, each well above real ones: the official question files are 0.4 MB, a POPE record or
# answer line under 1 KB (a stored response at most 64 K characters), COCO's instances_train2017.json 448 MB.
MAX_POPE_FILE_BYTES = MAX_JSON_ARRAY_BYTES  # a question, answer or objects file; a JSON array one is read whole
MAX_POPE_LINE_BYTES = 2**20
MAX_COCO_BYTES = 2**30


def _json(text: str, path: Path, where: str) -> object:
    """json_loads (bounded depth, no key given twice) with its errors naming the file and where in it."""
    try:
        return json_loads(text)
    except json.JSONDecodeError as error:
        raise InvalidInput(f"{path}, {where or f'line {error.lineno}'}: not valid JSON ({error.msg})") from None
    except ValueError as error:  # too deep, a key given twice, a number of over 4,300 digits
        raise InvalidInput(f"{path}, {where or 'the file'}: {error}") from None


def _json_lines(path: Path, raw: BinaryIO | None = None) -> Iterator[tuple[int, object]]:
    """(line number, value) of each non-blank line of a JSON Lines file, read through the bounded door."""
    with raw or open_input(path, MAX_POPE_FILE_BYTES, "limit for a POPE file") as f:
        for number, line in enumerate(decoded_lines(f, path, max_line=MAX_POPE_LINE_BYTES), start=1):
            if line.strip():
                yield number, _json(line, path, f"line {number}")


def read_pope_questions(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Questions from JSON Lines (the COCO files) or one JSON array (the pretty-printed GQA file).

    Each record needs question_id, image, text and label ("yes"/"no", case-insensitive; normalised to lower
    case). Other fields (e.g. "object") are kept. Question ids must be unique.
    """
    path = Path(path)
    raw = open_input(path, MAX_POPE_FILE_BYTES, "limit for a POPE file")
    head = raw.read(4096).lstrip()
    raw.seek(0)
    if head.startswith((b"[", b"\xef\xbb\xbf[")):
        raw.close()
        items = _json(read_input_text(path, MAX_POPE_FILE_BYTES, "limit for a POPE file"), path, "")
        if not isinstance(items, list):
            raise InvalidInput(f"{path}: expected a JSON array of questions")
        located = [(f"item {index}", item) for index, item in enumerate(items, start=1)]
    else:
        located = [(f"line {number}", item) for number, item in _json_lines(path, raw)]
    questions: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for where, item in located:
        if not isinstance(item, dict):
            raise InvalidInput(f"{path}, {where}: expected a JSON object")
        for field, kind, says in (
            ("question_id", (int, str), "an integer or string"),
            ("image", str, "a string"),
            ("text", str, "a string"),
            ("label", str, "a string"),
        ):
            if not isinstance(item.get(field), kind) or isinstance(item.get(field), bool):
                raise InvalidInput(f"{path}, {where}: field '{field}' missing or not {says}")
        label = item["label"].strip().lower()
        if label not in YES_NO:
            raise InvalidInput(f"{path}, {where}: field 'label' is {item['label']!r}, not yes/no")
        key = str(item["question_id"])
        if key in seen:
            raise InvalidInput(f"{path}, {where}: question_id {item['question_id']} repeats {seen[key]}")
        seen[key] = where
        questions.append({**item, "label": label})
    return questions


def read_pope_answers(path: str | os.PathLike[str]) -> list[PopeAnswer]:
    """Answers from JSON Lines: the response in "answer" or else "text", optional "question_id".

    "answer" wins over "text" because answer files often copy the question record (whose "text" is the
    question) and add the response as "answer".
    """
    path = Path(path)
    answers = []
    for number, item in _json_lines(path):
        if not isinstance(item, dict):
            raise InvalidInput(f"{path}, line {number}: expected a JSON object")
        field = "answer" if "answer" in item else "text"
        if not isinstance(item.get(field), str):
            raise InvalidInput(f"{path}, line {number}: field 'answer' or 'text' missing or not a string")
        question_id = item.get("question_id")
        if question_id is not None and (isinstance(question_id, bool) or not isinstance(question_id, (int, str))):
            raise InvalidInput(f"{path}, line {number}: field 'question_id' is not an integer or string")
        answers.append(PopeAnswer(item[field], question_id, str(path), number))
    return answers


def match_answers(
    questions: Sequence[dict[str, Any]], answers: Sequence[PopeAnswer]
) -> list[tuple[dict[str, Any], PopeAnswer]]:
    """Pairs each question (in question order) with its answer.

    By question_id when every answer has one; when none has one, by line order, as the official script does
    (but where the script's zip() would silently drop the tail, a count mismatch is an error here). Mixed
    files, unknown or repeated ids and unanswered questions are errors naming the answer file and line.
    """
    source = answers[0].source if answers else "<answers>"
    with_ids = [a for a in answers if a.question_id is not None]
    if not with_ids:
        if len(answers) < len(questions):
            last = f"ends at line {answers[-1].line}" if answers else "is empty"
            raise InvalidInput(f"{source}: {len(answers)} answers for {len(questions)} questions (the file {last})")
        if len(answers) > len(questions):
            extra = answers[len(questions)]
            raise InvalidInput(
                f"{extra.source}, line {extra.line}: answer without a question (only {len(questions)} questions)"
            )
        return list(zip(questions, answers))
    if len(with_ids) != len(answers):
        missing = next(a for a in answers if a.question_id is None)
        raise InvalidInput(f"{missing.source}, line {missing.line}: answer has no question_id while others do")
    by_id = {str(q["question_id"]): q for q in questions}
    answered: dict[str, PopeAnswer] = {}
    for answer in answers:
        key = str(answer.question_id)
        if key not in by_id:
            raise InvalidInput(
                f"{answer.source}, line {answer.line}: question_id {answer.question_id} is not among the questions"
            )
        if key in answered:
            raise InvalidInput(
                f"{answer.source}, line {answer.line}: question_id {answer.question_id} "
                f"already answered on line {answered[key].line}"
            )
        answered[key] = answer
    unanswered = [key for key in by_id if key not in answered]
    if unanswered:
        more = f" and {len(unanswered) - 1} more" if len(unanswered) > 1 else ""
        raise InvalidInput(
            f"{source}: no answer for question_id {unanswered[0]}{more} "
            f"({len(answers)} answers for {len(questions)} questions)"
        )
    return [(q, answered[str(q["question_id"])]) for q in questions]


def score_matched(
    pairs: Sequence[tuple[dict[str, Any], PopeAnswer]], parse: Callable[[str], str] = parse_strict
) -> PopeMetrics:
    """pope_metrics over matched (question, answer) pairs, answers read with `parse`."""
    return pope_metrics([q["label"] for q, _ in pairs], [parse(a.text) for _, a in pairs])


def write_pope_jsonl(records: Iterable[dict[str, Any]], path: str | os.PathLike[str]) -> None:
    """Writes records as JSON Lines under evaluator/formats/outfiles.py's rule (no half-written files)."""
    with AtomicOutput(path) as file:
        for record in records:
            file.write(json.dumps(record, ensure_ascii=False) + "\n")


# ------------------------------------------------------------------------------------------------ annotations


def _field(item: object, field: str, where: str) -> Any:
    if not isinstance(item, dict) or field not in item:
        raise InvalidInput(f"{where}: field '{field}' missing")
    return item[field]


def load_coco_instances(path: str | os.PathLike[str]) -> dict[str, list[str]]:
    """image file name -> sorted distinct category names, from a COCO `instances_*.json`.

    Images without annotations are kept (with no objects) so the caller sees the whole split.
    """
    path = Path(path)
    data = _json(read_input_text(path, MAX_COCO_BYTES, "limit for a COCO instances file"), path, "")
    files = {
        _field(i, "id", f"{path}: images[{n}]"): _field(i, "file_name", f"{path}: images[{n}]")
        for n, i in enumerate(_field(data, "images", str(path)))
    }
    names = {
        _field(c, "id", f"{path}: categories[{n}]"): _field(c, "name", f"{path}: categories[{n}]")
        for n, c in enumerate(_field(data, "categories", str(path)))
    }
    present: dict[str, set[str]] = {name: set() for name in files.values()}
    for n, annotation in enumerate(_field(data, "annotations", str(path))):
        where = f"{path}: annotations[{n}]"
        image_id, category_id = _field(annotation, "image_id", where), _field(annotation, "category_id", where)
        if image_id not in files:
            raise InvalidInput(f"{where}: image_id {image_id} is not in images")
        if category_id not in names:
            raise InvalidInput(f"{where}: category_id {category_id} is not in categories")
        present[files[image_id]].add(names[category_id])
    return {image: sorted(objects) for image, objects in present.items()}


def load_object_jsonl(path: str | os.PathLike[str]) -> dict[str, list[str]]:
    """image -> sorted distinct objects, from lines {"image": "x.jpg", "objects": ["dog", "person"]}.

    An image on several lines gets the union of its objects (one line per detection source is common).
    """
    path = Path(path)
    present: dict[str, set[str]] = defaultdict(set)
    for number, item in _json_lines(path):
        where = f"{path}, line {number}"
        image, objects = _field(item, "image", where), _field(item, "objects", where)
        if not (isinstance(image, str) and isinstance(objects, list) and all(isinstance(o, str) for o in objects)):
            raise InvalidInput(f"{path}, line {number}: 'image' must be a string and 'objects' a list of strings")
        present[image].update(objects)
    return {image: sorted(objects) for image, objects in present.items()}


# ---------------------------------------------------------------------------------------------------- English

# Plural-only nouns: "a skis" is wrong and "Is there skis" sounds off; "a pair of skis" is what people say.
_PAIR_NOUNS = frozenset(
    "skis scissors glasses sunglasses eyeglasses goggles binoculars jeans pants trousers shorts pajamas tights "
    "headphones earphones earbuds pliers tongs tweezers chopsticks skates boots shoes sneakers socks gloves "
    "mittens earrings slippers sandals handcuffs".split()
)
# Uncountable nouns take no article ("Is there broccoli in the image?").
_MASS_NOUNS = frozenset(
    "broccoli grass water snow sand rice bread cheese food furniture luggage hair smoke "
    "lettuce spinach sky dirt mud gravel foliage".split()
)
# Spelled with a vowel but said with a consonant sound ("a unicorn", "a one-way sign") ...
_A_PREFIXES = (
    "unic",
    "unif",
    "unio",
    "uniq",
    "unis",
    "unit",
    "univ",
    "use",
    "usu",
    "uten",
    "util",
    "ukul",
    "urin",
    "uran",
    "eu",
    "ewe",
    "one",
    "once",
)
# ... and the reverse: a silent h ("an hour").
_AN_PREFIXES = ("hour", "honest", "honor", "honour", "heir")


def indefinite_article(word: str) -> str:
    """ "a" or "an" by the sound of the first word (a small exception list, not a pronouncing dictionary)."""
    first = word.split()[0].lower() if word.split() else ""
    if first.startswith(_AN_PREFIXES):
        return "an"
    if first.startswith(_A_PREFIXES):
        return "a"
    return "an" if first[:1] in ("a", "e", "i", "o", "u") else "a"


def object_phrase(name: str) -> str:
    """ "a dog", "an apple", "a pair of skis", "broccoli"."""
    words = name.split()
    if words and words[-1].lower() in _PAIR_NOUNS:
        return f"a pair of {name}"
    if name.lower() in _MASS_NOUNS:
        return name
    return f"{indefinite_article(name)} {name}"


def pope_question(name: str) -> str:
    return f"Is there {object_phrase(name)} in the image?"


# ---------------------------------------------------------------------------------------------------- building

# Where negatives come from when a setting's own pool runs out: the next, less demanding setting, then any
# object of the whole vocabulary.
_FALLBACKS = {
    "random": ("random", "vocabulary"),
    "popular": ("popular", "random", "vocabulary"),
    "adversarial": ("adversarial", "popular", "random", "vocabulary"),
}


def build_pope(
    annotations: Mapping[str, Sequence[str]], *, setting: str, images_count: int, per_image: int, seed: int
) -> list[dict[str, Any]]:
    """A POPE question set in the official format {question_id, image, text, label, object}.

    `annotations` maps image -> objects present. Chooses `images_count` images with at least `per_image`
    distinct objects (seeded; output in sorted image order), asks about `per_image` present objects and as many
    absent ones per image, alternating yes/no like the official files. Negatives per setting:
    random — uniform over the objects of the chosen images; popular — the objects present in most chosen
    images; adversarial — the objects that co-occur most (summed over the image's objects, counted over the
    whole dataset) with the image's objects. Never an object of the image, never twice for one image; when a
    pool runs out the next pool in _FALLBACKS continues. The image choice and positives depend on the seed only,
    so the three settings of one seed share images and positives, like the official files.
    """
    if setting not in SETTINGS:
        raise InvalidInput(f"unknown POPE setting {setting!r} (one of {', '.join(SETTINGS)})")
    if images_count < 1 or per_image < 1:
        raise InvalidInput("images_count and per_image must be at least 1")
    objects = {image: sorted(set(names)) for image, names in annotations.items()}
    eligible = sorted(image for image, names in objects.items() if len(names) >= per_image)
    if len(eligible) < images_count:
        raise InvalidInput(
            f"only {len(eligible)} images have at least {per_image} distinct objects; {images_count} requested"
        )
    pick = random.Random(seed)
    chosen = sorted(pick.sample(eligible, images_count))
    positives = {image: pick.sample(objects[image], per_image) for image in chosen}
    # A separate stream for negatives keeps images and positives identical across settings.
    draw = random.Random(f"pope-negatives:{seed}")

    chosen_frequency = Counter(name for image in chosen for name in objects[image])
    dataset_frequency = Counter(name for names in objects.values() for name in names)
    vocabulary = sorted(dataset_frequency)
    co_occurrence: dict[str, Counter[str]] = defaultdict(Counter)
    if setting == "adversarial":  # only this setting pays for the pair counts
        for names in objects.values():
            for name in names:
                co_occurrence[name].update(other for other in names if other != name)

    def pool(kind: str, present: set[str]) -> list[str]:
        """Absent candidates of one kind, best first."""
        if kind == "adversarial":
            score: Counter[str] = Counter()
            for name in present:
                score.update(co_occurrence[name])
            ranked = [c for c in score if c not in present and score[c] > 0]
            return sorted(ranked, key=lambda c: (-score[c], -dataset_frequency[c], c))
        if kind == "popular":
            return sorted((c for c in chosen_frequency if c not in present), key=lambda c: (-chosen_frequency[c], c))
        candidates = sorted(chosen_frequency if kind == "random" else vocabulary)
        candidates = [c for c in candidates if c not in present]
        return draw.sample(candidates, len(candidates))

    records: list[dict[str, Any]] = []
    for image in chosen:
        present = set(objects[image])
        negatives: list[str] = []
        for kind in _FALLBACKS[setting]:
            for name in pool(kind, present):
                if len(negatives) < per_image and name not in negatives:
                    negatives.append(name)
            if len(negatives) == per_image:
                break
        if len(negatives) < per_image:
            raise InvalidInput(
                f"image {image}: only {len(negatives)} absent objects in the whole vocabulary, {per_image} needed"
            )
        for positive, negative in zip(positives[image], negatives):
            for name, label in ((positive, "yes"), (negative, "no")):
                records.append(
                    {
                        "question_id": len(records) + 1,
                        "image": image,
                        "text": pope_question(name),
                        "label": label,
                        "object": name,
                    }
                )
    return records
