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

import json
import math
import re
import statistics
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


def _punctuation_with(text: str, comma: re.Pattern[str], period: re.Pattern[str]) -> str:
    out = text
    spaced = comma.search(text) is not None
    for p in _PUNCT:
        # Decided on the text as given, not as changed so far (as vqaEval.py does).
        out = out.replace(p, "") if (p + " " in text or " " + p in text) or spaced else out.replace(p, " ")
    return period.sub("", out, count=_PERIOD_COUNT)


def _punctuation(text: str) -> str:
    return _punctuation_with(text, _COMMA, _PERIOD)


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


# --- VQA accuracy, one rule a reference tool (the tool whose figures a benchmark's leaderboard prints) -------------
# Each restated line by line from its source; tests/evaluator/test_open_metric_references.py holds each to its source:
#   vqaeval    GT-Vision-Lab/VQA PythonEvaluationTools/vqaEvaluation/vqaEval.py (a013f00): the answer as given, the
#              references normalised (and the answer with them) only when they are not all the same.
#   evalai     lmms-eval lmms_eval/tasks/{textvqa,ok_vqa}/utils.py (75571cf), i.e. MMF's TextVQAAccuracyEvaluator
#              (LLaVA's m4c_evaluator.py): EvalAIAnswerProcessor (_task_utils/vqa_eval_metric.py) on the answer and
#              on every reference, always.
#   vlmevalkit VLMEvalKit vlmeval/dataset/utils/vqa_eval.py process_line 'vqa_score' (e8e78f0): process_answer on
#              both, always, with vlmeval/smp/misc.py's process_punctuation (a true lookbehind for periods).
VQA_RULES = {
    "vqaeval": "vqaEval.py (GT-Vision-Lab/VQA), the answer as given",
    "evalai": "lmms-eval textvqa/ok_vqa (MMF's TextVQA evaluator): EvalAI's processing of answer and references",
    "vlmevalkit": "VLMEvalKit vqa_eval.py process_line (vqa_score)",
}
VQA_RULE_DEFAULT = "vqaeval"
# A benchmark's rule by its catalog name (evaluator/formats/importers/catalog.py), matched exactly: TextVQA_VAL
# (VLMEvalKit's TSV: the OpenVLM leaderboard's figures) and textvqa_val (lmms-lab's parquet: lmms-eval's figures, as
# MMF's evaluator and TextVQA's challenge compute them) differ only in case.
VQA_RULE_OF_BENCHMARK = {
    "vqav2_val": "vqaeval",
    "TextVQA_VAL": "vlmevalkit",
    "textvqa_val": "evalai",
    "ok_vqa_val2014": "evalai",
}
VQA_RULE_META = "vqa_rule"
"""A benchmark's meta key naming its rule outright (one of VQA_RULES): it wins over the name."""

_EVALAI_COMMA = re.compile(r"(?<=\d)(\,)+(?=\d)")
_VLMEVALKIT_PERIOD = re.compile(r"(?<!\d)\.(?!\d)")


def vqa_rule(name: str | None, meta: dict[str, object] | None = None) -> str:
    """The VQA accuracy rule of a benchmark: its meta's `vqa_rule`, else by its name, else by the file it was
    imported from (a catalog TSV imported under another --name), else vqaEval.py's (VQAv2's official rule)."""
    meta = meta or {}
    named = meta.get(VQA_RULE_META)
    if isinstance(named, str) and named in VQA_RULES:
        return named
    if name in VQA_RULE_OF_BENCHMARK:
        return VQA_RULE_OF_BENCHMARK[name]
    source = meta.get("source_file")
    stem = source.rsplit(".", 1)[0] if isinstance(source, str) else None
    return VQA_RULE_OF_BENCHMARK.get(stem or "", VQA_RULE_DEFAULT)


def evalai_answer(text: str) -> str:
    """EvalAIAnswerProcessor.__call__: lower case, commas and question marks dropped, "'s" split off, then the
    punctuation (with EvalAI's comma pattern) and number/article steps."""
    text = _clean(text.lower().replace(",", "").replace("?", "").replace("'s", " 's").strip())
    return _digits_articles(_punctuation_with(text, _EVALAI_COMMA, _PERIOD))


def vlmevalkit_answer(text: str) -> str:
    """VLMEvalKit's process_answer."""
    return _digits_articles(_punctuation_with(_clean(text), _COMMA, _VLMEVALKIT_PERIOD))


def _leave_one_out(answer: str, refs: Sequence[str], mean: Callable[[list[float]], float] | None = None) -> float:
    """The mean over each reference left out of min(#others equal to the answer / 3, 1); `mean` as the tool takes it
    (lmms-eval's statistics.mean rounds differently from vqaEval.py's sum / len in the last bit)."""
    if not refs:
        return 0.0
    matches = [r == answer for r in refs]
    total = sum(matches)
    accs = [min(1.0, (total - own) / 3) for own in matches]
    return mean(accs) if mean is not None else sum(accs) / len(accs)


def _np_mean(values: list[float]) -> float:
    """numpy's mean, as VLMEvalKit's hit_calculate takes it (its pairwise sum rounds unlike sum / len)."""
    import numpy as np

    return float(np.mean(values))


def vqa_accuracy(response: str, references: Sequence[str], rule: str = VQA_RULE_DEFAULT) -> float:
    """VQA accuracy by `rule` (VQA_RULES): over each leave-one-out subset of the references, min(#matching / 3, 1),
    averaged; the answer and references read as that rule's tool reads them (see above)."""
    if rule == "evalai":
        return _leave_one_out(evalai_answer(response), [evalai_answer(r) for r in references], statistics.mean)
    if rule == "vlmevalkit":
        return _leave_one_out(vlmevalkit_answer(response), [vlmevalkit_answer(r) for r in references], _np_mean)
    if rule != "vqaeval":
        raise InvalidInput(f"unknown VQA rule {rule[:40]!r}; one of {', '.join(VQA_RULES)}")
    refs = [_clean(r) for r in references]
    answer = _clean(response)
    if len(set(refs)) > 1:
        refs = [_digits_articles(_punctuation(r)) for r in refs]
        answer = _digits_articles(_punctuation(answer))
    return _leave_one_out(answer, refs)


# The least references with which an answer can score 1 (3 others agree in every leave-one-out subset): an item with
# fewer could never be right, which says nothing of the answer (VQAv2, TextVQA, OK-VQA and VizWiz keep ten).
VQA_MIN_REFERENCES = 4

ANLS_THRESHOLD = 0.5


def anls(response: str, references: Sequence[str]) -> float:
    """DocVQA's ANLS for one item as lmms-eval and VLMEvalKit compute it: 1 - the smallest Levenshtein distance to a
    reference (both lower case, spaces collapsed) over the longer of the two texts as given, 0 under 0.5."""
    from rapidfuzz.distance import Levenshtein

    answer = " ".join(response.strip().lower().split())
    best = 1.0
    for ref in references:
        gt = " ".join(ref.strip().lower().split())
        # The distance between the cleaned texts over the RAW lengths (upper-cased: "ß" counts 2), as lmms-eval
        # (lmms_eval/api/metrics.py anls, 75571cf) and VLMEvalKit (vqa_eval.py anls_compute, e8e78f0) divide.
        length = max(len(ref.upper()), len(response.upper()))
        best = min(best, Levenshtein.distance(gt, answer) / length if length else 0.0)
    similarity = 1.0 - best if references else 0.0
    return similarity if similarity >= ANLS_THRESHOLD else 0.0


Rule = Callable[[str, Sequence[str]], float]


@dataclass(frozen=True)
class PerItem:
    """A Score from a rule over one item's (response, references); items with fewer than `min_references` are not
    scored. `by_benchmark`: the rule also takes the benchmark's VQA rule name (`vqa_rule`), read from the run's
    benchmark (or given, for one item: evaluator/scoring/open_item.py)."""

    rule: Callable[..., float]
    min_references: int = 1
    by_benchmark: bool = False

    def rule_for(self, benchmark_name: str | None, meta: dict[str, object] | None = None) -> Rule:
        if not self.by_benchmark:
            return self.rule
        chosen = vqa_rule(benchmark_name, meta)
        return lambda response, references: self.rule(response, references, chosen)

    def __call__(self, ws: Workspace, run_id: int, answers: Sequence[OpenAnswer]) -> dict[int, float]:
        rule = self.rule_for(*_benchmark_of_run(ws, run_id)) if self.by_benchmark else self.rule
        return {a.item_id: rule(a.response, a.references) for a in answers if len(a.references) >= self.min_references}


def per_item(rule: Callable[..., float], min_references: int = 1, *, by_benchmark: bool = False) -> PerItem:
    """A Score from a rule over one item's (response, references) (see PerItem)."""
    return PerItem(rule, min_references, by_benchmark)


def _benchmark_of_run(ws: Workspace | None, run_id: int) -> tuple[str | None, dict[str, object] | None]:
    """(name, meta) of run `run_id`'s benchmark; (None, None) without a workspace or run (one item scored alone)."""
    if ws is None:
        return None, None
    rows = list(
        ws.db.query(
            "SELECT b.name, b.meta FROM runs r JOIN benchmarks b ON b.id = r.benchmark_id WHERE r.id = ?", [run_id]
        )
    )
    if not rows:
        return None, None
    meta = json.loads(rows[0]["meta"] or "{}")
    return rows[0]["name"], meta if isinstance(meta, dict) else {}


# --- CIDEr-D (coco-caption's CiderScorer, restated) --------------------------------------------------------------

# coco-caption removes these after PTBTokenizer (ptbtokenizer.py's PUNCTUATIONS); -LRB- and kin are listed in upper
# case but the tokenizer runs with -lowerCase, so "-lrb-" stays a word there, and here.
_PTB_DROPPED = frozenset(("''", "'", "``", "`", ".", "?", "!", ",", ":", "-", "--", "...", ";"))
# Signs PTBTokenizer turns into one of those (quotes into `` and '', dashes into --, an ellipsis into ...).
_PTB_DROPPED_TOO = frozenset(('"', "\u2014", "\u2026"))
_PTB_BRACKETS = {"(": "-lrb-", ")": "-rrb-", "{": "-lcb-", "}": "-rcb-", "[": "-lsb-", "]": "-rsb-"}
_PTB_UNICODE = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'", "\u2013": " -- "})
# Abbreviations whose period PTBTokenizer keeps (stanford-corenlp 3.4.1's PTBLexer: its ABBREV1, ABTITLE and ABBREV4
# lists, caseless; checked against the jar in tests/evaluator/test_open_metric_references.py), and ABBREV3, kept only
# before a number (No. 5, fig. 3, pp. 45).
_PTB_ABBREVIATIONS = (
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec|mon|tue|tues|wed|thu|thurs|fri|"
    "ala|ariz|az|ark|calif|colo|conn|ct|dak|del|fla|ga|ill|ind|kans?|ky|la|mass|md|mich|minn|miss|mo|mont|neb|nev|"
    "okla|ore|pa|penn|tenn|tex|va|vt|wash|wisc?|wyo|inc|cos?|corp|pp?t[ye]s?|ltd|plc|bancorp|dept|bhd|assn|univ|intl|"
    "sys|tel|est|ext|sq|jr|sr|bros|blvd|rd|esq|etc|al|seq|mrs?|ms|drs?|profs?|sens?|reps?|attys?|lt|col|gen|messrs|"
    "govs?|adm|rev|maj|sgt|cpl|pvt|mt|capt|ste?|ave|pres|lieut|hon|brig|co?mdr|pfc|spc|supts?|det|mm|mme|mmes|mlle|"
    "mlles|vs|alex|wm|jos|cie|cf|treas|invt|elec|natl|m[ft]g|ft"
)
_PTB_TOKEN = re.compile(
    r"""(?:https?|ftp)://\S+?(?=[.,;:!?]?(?:\s|$)) # a web address, whole
      | (?<![\w.+-])[\w.+-]{1,64}@[\w-]+(?:\.[\w-]+)+  # an e-mail address, whole (tried once per run of signs)
      | (?:[^\W\d_]\.){2,}                # u.s. e.g. a.m.
      | (?:ph|ed)\.d\.                     # ph.d.
      | (?:"""
    + _PTB_ABBREVIATIONS
    + r""")\.(?=\s|$)
      | (?:ca|figs?|prop|nos?|art|bldg|pp|op)\.(?=\s+\d)  # No. 5, fig. 3
      | [^\W\d_]\.(?!\w)                  # initials: j. r. smith, p. 12
      | \(\d{2,3}\)(?=[ \u00a0]?\d)          # a phone number's area code: (212) 555-1234
      | \+\+?\d+                           # +44
      | '(?:t(?=(?:is|was)\b)|\d\d\b)       # 'tis -> 't is, the year '99
      | 'n'|'(?:s|m|d|re|ve|ll|em|n)(?![^\W_])  # a clitic on its own: man 's, rock 'n' roll
      | \d+/\d+(?:/\d+)?                    # 3/3/98, 1/2
      | \d+(?:[.,:]\d+)+                   # 3.14 1,000 3:30
      | [^\W_]+(?:[-'&./][^\W_]+)*'?       # words: hyphenated, inner apostrophes, periods, slashes (red/white)
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
        elif token[0] == "(" and len(token) > 1:
            out.append("-lrb-" + token[1:-1] + "-rrb-")  # an area code: one token, its brackets escaped in place
        elif token.endswith("'") and len(token) > 1 and token != "'n'":
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
        "VQA accuracy: min(#references matching / 3, 1) over the leave-one-out subsets (items with 4+ references), "
        "answers read as the tool whose figures the benchmark publishes reads them (vqa_rule)",
        per_item(vqa_accuracy, VQA_MIN_REFERENCES, by_benchmark=True),
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
