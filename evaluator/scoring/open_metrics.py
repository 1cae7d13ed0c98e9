"""Open answers, scored: metrics over an open run's free answers and its items' reference answers.

An entry scores items: ``score(ws, run_id, answers) -> {item id: score}`` over the run's answered items (with
references unless the entry says it needs none). Most read only the answer strings (``per_item`` wraps a function of
(response, references)); CIDEr needs the whole run (its IDF is corpus-level); an entry may also read the workspace
alone (an LLM judge's stored judgements) and return scores for the items it has. A metric applies to a run when it
scores at least one item. A run's value is the mean of its items' scores. Entries are modules declaring
``OPEN_METRICS = (OpenMetricEntry(…),)``, built in here or named in VLMDESK_PLUGINS (docs/architecture.md).

The rules restate their sources (tests/vqa_reference.py and tests/evaluator/test_open_metrics.py check them):
VQAv2's answer normalisation and accuracy (GT-Vision-Lab/VQA, vqaEval.py), LVLM-eHub's word match
(OpenGVLab/Multi-Modality-Arena, LVLM_evaluation/utils/tools.py), DocVQA's ANLS, and coco-caption's CIDEr-D
(pycocoevalcap's CiderScorer, with a Python tokenisation in place of Stanford's PTBTokenizer). docs/adr/0034.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from db import runs
from db.errors import InvalidInput, NotFound
from db.workspace import Workspace
from evaluator.registry import Registry, resolve


@dataclass(frozen=True)
class OpenAnswer:
    """One answered item of an open run: its free answer (pass 0) and its reference answers (maybe none)."""

    item_id: int
    response: str
    references: tuple[str, ...]


Score = Callable[[Workspace, int, Sequence[OpenAnswer]], dict[int, float]]
"""Scores of the items of run `run_id` among `answers` (an item it cannot score is left out)."""

Scale = Literal["fraction", "cider"]


@dataclass(frozen=True)
class OpenMetricEntry:
    """``score`` is a function or "module:function" (imported when first used). ``needs_references``: given only
    the items with references (False: every answered item, references maybe empty). ``scale``: "fraction" for
    scores in [0, 1], "cider" for CIDEr's own (0 to 10, usually under 2)."""

    name: str
    title: str
    help: str
    score: Score | str
    scale: Scale = "fraction"
    needs_references: bool = True


# --- VQAv2's answer normalisation (vqaEval.py, restated line by line) ------------------------------------------

_CONTRACTIONS = {
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
    "therere": "there're", "theres": "there's", "theyd": "they'd", "theyd've": "they'd've",
    "they'dve": "they'd've", "theyll": "they'll", "theyre": "they're", "theyve": "they've", "twas": "'twas",
    "wasnt": "wasn't", "wed've": "we'd've", "we'dve": "we'd've", "weve": "we've", "werent": "weren't",
    "whatll": "what'll", "whatre": "what're", "whats": "what's", "whatve": "what've", "whens": "when's",
    "whered": "where'd", "wheres": "where's", "whereve": "where've", "whod": "who'd", "whod've": "who'd've",
    "who'dve": "who'd've", "wholl": "who'll", "whos": "who's", "whove": "who've", "whyll": "why'll",
    "whyre": "why're", "whys": "why's", "wont": "won't", "wouldve": "would've", "wouldnt": "wouldn't",
    "wouldnt've": "wouldn't've", "wouldn'tve": "wouldn't've", "yall": "y'all", "yall'll": "y'all'll",
    "y'allll": "y'all'll", "yall'd've": "y'all'd've", "y'alld've": "y'all'd've", "y'all'dve": "y'all'd've",
    "youd": "you'd", "youd've": "you'd've", "you'dve": "you'd've", "youll": "you'll", "youre": "you're",
    "youve": "you've",
}  # fmt: skip
_NUMBERS = {
    "none": "0", "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10",
}  # fmt: skip
_ARTICLES = frozenset(("a", "an", "the"))
# "(?!<=\d)" is vqaEval.py's (a lookahead, not the lookbehind it meant): kept, since it decides which periods go.
_PERIOD = re.compile(r"(?!<=\d)(\.)(?!\d)")
_COMMA = re.compile(r"(\d)(\,)(\d)")
_PUNCT = (";", "/", "[", "]", '"', "{", "}", "(", ")", "=", "+", "\\", "_", "-", ">", "<", "@", "`", ",", "?", "!")
# vqaEval.py passes re.UNICODE where Pattern.sub takes its count: at most 32 periods are removed.
_PERIOD_COUNT = int(re.UNICODE)


def _punctuation(text: str) -> str:
    out = text
    spaced = _COMMA.search(text) is not None
    for p in _PUNCT:
        # Decided on the text as given, not as changed so far (as vqaEval.py does).
        out = out.replace(p, "") if (p + " " in text or " " + p in text) or spaced else out.replace(p, " ")
    return _PERIOD.sub("", out, count=_PERIOD_COUNT)


def _digits_articles(text: str) -> str:
    words = [_NUMBERS.get(w, w) for w in text.lower().split()]
    return " ".join(_CONTRACTIONS.get(w, w) for w in words if w not in _ARTICLES)


def _clean(text: str) -> str:
    return text.replace("\n", " ").replace("\t", " ").strip()


def normalize_answer(text: str) -> str:
    """VQAv2's normalisation: punctuation removed or spaced, lower case, number words as digits, articles dropped,
    contractions given their apostrophe."""
    return _digits_articles(_punctuation(_clean(text)))


def exact_match(response: str, references: Sequence[str]) -> float:
    """1 when the normalised answer equals a normalised reference."""
    answer = normalize_answer(response)
    return float(any(answer == normalize_answer(r) for r in references))


def word_match(response: str, references: Sequence[str]) -> float:
    """LVLM-eHub's rule (utils/tools.py, VQAEval.evaluate): both normalised as VQAv2 does, right when a reference
    occurs in the answer as whole words (``\\b<reference>\\b``)."""
    answer = normalize_answer(response)
    return float(any(re.search(r"\b" + re.escape(normalize_answer(r)) + r"\b", answer) for r in references))


def _submitted(text: str) -> str:
    """An answer as VQA's evaluation server reads a submission: EvalAI's answer processing (lower case, commas and
    question marks dropped, "'s" split off, then VQAv2's normalisation), as lmms-eval applies it to every answer."""
    return normalize_answer(text.lower().replace(",", "").replace("?", "").replace("'s", " 's").strip())


def vqa_accuracy(response: str, references: Sequence[str]) -> float:
    """VQAv2's accuracy as its evaluation server computes it: the answer read as a submission (`_submitted`), then
    vqaEval.py: over each leave-one-out subset of the references, min(#matching / 3, 1), averaged; the references
    normalised only when they are not all the same (and the answer again then), compared whole."""
    refs = [_clean(r) for r in references]
    answer = _submitted(response)
    if len(set(refs)) > 1:
        refs = [_digits_articles(_punctuation(r)) for r in refs]
        answer = _digits_articles(_punctuation(answer))
    if not refs:
        return 0.0
    matches = [r == answer for r in refs]
    total = sum(matches)
    return sum(min(1.0, (total - own) / 3) for own in matches) / len(refs)


# The least references with which an answer can score 1 (3 others agree in every leave-one-out subset): an item with
# fewer could never be right, which says nothing of the answer (VQAv2, TextVQA, OK-VQA and VizWiz keep ten).
VQA_MIN_REFERENCES = 4

ANLS_THRESHOLD = 0.5


def anls(response: str, references: Sequence[str]) -> float:
    """DocVQA's ANLS for one item: 1 - the smallest normalised Levenshtein distance to a reference (lower case,
    spaces collapsed), 0 when that similarity is under 0.5."""
    from rapidfuzz.distance import Levenshtein

    answer = " ".join(response.strip().lower().split())
    best = 1.0
    for ref in references:
        gt = " ".join(ref.strip().lower().split())
        length = max(len(gt), len(answer))
        best = min(best, Levenshtein.distance(gt, answer) / length if length else 0.0)
    similarity = 1.0 - best if references else 0.0
    return similarity if similarity >= ANLS_THRESHOLD else 0.0


def per_item(rule: Callable[[str, Sequence[str]], float], min_references: int = 1) -> Score:
    """A Score from a rule over one item's (response, references); items with fewer references are not scored."""

    def score(ws: Workspace, run_id: int, answers: Sequence[OpenAnswer]) -> dict[int, float]:
        return {a.item_id: rule(a.response, a.references) for a in answers if len(a.references) >= min_references}

    return score


# --- CIDEr-D (coco-caption's CiderScorer, restated) --------------------------------------------------------------

# coco-caption removes these after PTBTokenizer (ptbtokenizer.py's PUNCTUATIONS); -LRB- and kin are listed in upper
# case but the tokenizer runs with -lowerCase, so "-lrb-" stays a word there, and here.
_PTB_DROPPED = frozenset(("''", "'", "``", "`", ".", "?", "!", ",", ":", "-", "--", "...", ";"))
# Signs PTBTokenizer turns into one of those (quotes into `` and '', dashes into --, an ellipsis into ...).
_PTB_DROPPED_TOO = frozenset(('"', "\u2014", "\u2026"))
_PTB_BRACKETS = {"(": "-lrb-", ")": "-rrb-", "{": "-lcb-", "}": "-rcb-", "[": "-lsb-", "]": "-rsb-"}
_PTB_UNICODE = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'", "\u2013": " -- "})
_PTB_TOKEN = re.compile(
    r"""(?:https?|ftp)://\S+?(?=[.,;:!?]?(?:\s|$)) # a web address, whole
      | (?<![\w.+-])[\w.+-]{1,64}@[\w-]+(?:\.[\w-]+)+  # an e-mail address, whole (tried once per run of signs)
      | (?:[^\W\d_]\.){2,}                # u.s. e.g. a.m.
      | (?:mr|mrs|ms|dr|st|jr|sr|vs|prof|inc|ltd|co|corp|etc|ave|blvd|rd|mt|ft)\.(?=\s|$)
      | '(?:t(?=(?:is|was)\b)|\d\d\b)       # 'tis -> 't is, the year '99
      | \d+(?:[.,:]\d+)+                   # 3.14 1,000 3:30
      | [^\W_]+(?:[-'&.][^\W_]+)*'?        # words: hyphenated, inner apostrophes and periods (np.zeros)
      | \.{2,}|!+|\?+|-{2,}                # runs of punctuation
      | \S                                 # any other sign on its own
    """,
    re.VERBOSE,
)
_PTB_SPLIT = {"gonna": ["gon", "na"], "wanna": ["wan", "na"], "gotta": ["got", "ta"]}
_PTB_CLITIC = re.compile(r"^(.+?)(n't|'s|'m|'d|'re|'ve|'ll)$")


def ptb_tokenize(text: str) -> str:
    """A caption as coco-caption feeds CIDEr: Stanford PTBTokenizer's tokens (lower case, -preserveLines), less
    ptbtokenizer.py's punctuation list, joined by spaces. A Python restatement of PTBTokenizer's rules for what
    captions hold: words (hyphens, inner apostrophes and periods kept), clitics split (is n't, ca n't, man 's),
    numbers with inner . , : kept and split from what follows (3:30pm -> 3:30 pm), acronyms and common titles keep
    their period, web and e-mail addresses stay whole, gonna -> gon na, brackets become -lrb- and kin, quotes, dashes
    and ellipses are dropped. Rarer rules (rock 'n' roll,
    a title not listed) are not restated."""
    out: list[str] = []
    for token in _PTB_TOKEN.findall(text.replace("\n", " ").lower().translate(_PTB_UNICODE)):
        clitic = _PTB_CLITIC.match(token)
        if token in _PTB_SPLIT:
            out += _PTB_SPLIT[token]
        elif clitic:
            out += clitic.groups()
        elif token.endswith("'") and len(token) > 1:
            out.append(token[:-1])  # a closing quote, dropped
        else:
            out.append(_PTB_BRACKETS.get(token, token))
    return " ".join(t for t in out if t not in _PTB_DROPPED and t not in _PTB_DROPPED_TOO)


NGRAMS = 4
CIDER_SIGMA = 6.0


def _ngram_counts(sentence: str) -> dict[tuple[str, ...], int]:
    words = sentence.split()
    counts: dict[tuple[str, ...], int] = {}
    for k in range(1, NGRAMS + 1):
        for i in range(len(words) - k + 1):
            gram = tuple(words[i : i + k])
            counts[gram] = counts.get(gram, 0) + 1
    return counts


def cider_d(pairs: Sequence[tuple[str, Sequence[str]]]) -> list[float]:
    """CIDEr-D of each (tokenised candidate, tokenised references) as pycocoevalcap's CiderScorer computes it: tf-idf
    n-gram vectors (n = 1..4) with the document frequency over this corpus's references, clipped cosine, a Gaussian
    length penalty (sigma 6, on the count of bigrams, as there), mean over n, over references, times 10."""
    crefs = [[_ngram_counts(r) for r in refs] for _, refs in pairs]
    df: Counter[tuple[str, ...]] = Counter()
    for refs_counts in crefs:
        df.update({gram for ref in refs_counts for gram in ref})
    ref_len = math.log(float(len(crefs))) if crefs else 0.0

    def vector(counts: dict[tuple[str, ...], int]) -> tuple[list[dict[tuple[str, ...], float]], list[float], int]:
        vec: list[dict[tuple[str, ...], float]] = [{} for _ in range(NGRAMS)]
        norm = [0.0] * NGRAMS
        length = 0
        for gram, tf in counts.items():
            n = len(gram) - 1
            vec[n][gram] = float(tf) * (ref_len - math.log(max(1.0, float(df[gram]))))
            norm[n] += vec[n][gram] ** 2
            if n == 1:
                length += tf
        return vec, [math.sqrt(x) for x in norm], length

    scores = []
    for (candidate, refs), refs_counts in zip(pairs, crefs):
        vec, norm, length = vector(_ngram_counts(candidate))
        total = [0.0] * NGRAMS
        for ref in refs_counts:
            vec_ref, norm_ref, length_ref = vector(ref)
            delta = float(length - length_ref)
            for n in range(NGRAMS):
                val = 0.0
                for gram, weight in vec[n].items():
                    other = vec_ref[n].get(gram, 0.0)
                    val += min(weight, other) * other
                if norm[n] != 0 and norm_ref[n] != 0:
                    val /= norm[n] * norm_ref[n]
                total[n] += val * math.e ** (-(delta**2) / (2 * CIDER_SIGMA**2))
        scores.append(sum(total) / NGRAMS / len(refs) * 10.0 if refs else 0.0)
    return scores


def _cider(ws: Workspace, run_id: int, answers: Sequence[OpenAnswer]) -> dict[int, float]:
    pairs = [(ptb_tokenize(a.response), [ptb_tokenize(r) for r in a.references]) for a in answers]
    return {a.item_id: s for a, s in zip(answers, cider_d(pairs))}


OPEN_METRICS = (
    OpenMetricEntry(
        "exact_match", "exact", "the answer equals a reference after VQAv2's normalisation", per_item(exact_match)
    ),
    OpenMetricEntry(
        "word_match", "word", "a reference occurs in the answer as whole words (LVLM-eHub)", per_item(word_match)
    ),
    OpenMetricEntry(
        "vqa_accuracy",
        "VQA",
        "VQAv2 accuracy: min(#references matching / 3, 1) over the leave-one-out subsets (items with 4+ references)",
        per_item(vqa_accuracy, VQA_MIN_REFERENCES),
    ),
    OpenMetricEntry(
        "anls",
        "ANLS",
        "DocVQA's ANLS: 1 - normalised edit distance to the closest reference, 0 under 0.5",
        per_item(anls),
    ),
    OpenMetricEntry(
        "cider",
        "CIDEr",
        "CIDEr-D (coco-caption), IDF over the run's items; its own scale, not a fraction",
        _cider,
        "cider",
    ),
    OpenMetricEntry(
        "judge",
        "judge",
        "an LLM judge's verdicts (vlmdesk judge): right 1, partly 0.5, wrong 0; the judgement set stored last",
        "evaluator.scoring.open_judge:judge_scores",
    ),
)
REGISTRY: Registry[OpenMetricEntry] = Registry("open metric", "OPEN_METRICS", builtins=(__name__,))


def open_metric_help() -> str:
    return ", ".join(entry.name for entry in REGISTRY.help_entries())


def answers_of(ws: Workspace, run: runs.Run) -> tuple[list[OpenAnswer], int]:
    """(the run's answered items in file order, the count of its items not answered yet)."""
    by_item = {p.item_id: p.response or "" for p in runs.predictions_of(ws, run.id) if p.pass_ == 0}
    items = runs.items_of(ws, run)
    answers = [OpenAnswer(i.id, by_item[i.id], i.references) for i in items if i.id in by_item]
    return answers, len(items) - len(answers)


def score_answers(
    ws: Workspace, run_id: int, answers: Sequence[OpenAnswer], names: Sequence[str] | None = None
) -> dict[str, dict[int, float]]:
    """item_scores over given answers (the report reads them once for every figure)."""
    entries = REGISTRY.entries()
    if names is not None:
        unknown = [n for n in names if REGISTRY.get(n) is None]
        if unknown:
            raise InvalidInput(f"unknown open metric {unknown[0][:80]!r}; one of {open_metric_help()}")
        entries = tuple(e for e in entries if e.name in names)
    referenced = [a for a in answers if a.references]
    out: dict[str, dict[int, float]] = {}
    for entry in entries:
        given = referenced if entry.needs_references else list(answers)
        if not given and entry.needs_references:
            continue
        scores = resolve(entry.score)(ws, run_id, given)
        if scores:
            out[entry.name] = scores
    return out


def item_scores(ws: Workspace, run_id: int, names: Sequence[str] | None = None) -> dict[str, dict[int, float]]:
    """metric name -> item id -> score, for the open metrics that apply to run `run_id` (all, or those `names`
    lists): an item without references or without an answer is left out; a run that is not open gets {}. NotFound
    for no such run, InvalidInput for an unknown name."""
    run = runs.get_run(ws, run_id)
    if run is None:
        raise NotFound(f"no run {run_id} in {ws.path}")
    if run.strategy != "open":
        return {}
    answers, _ = answers_of(ws, run)
    return score_answers(ws, run_id, answers, names)
