"""Run variants (ChEF's desiderata as run settings): label maps, image and text corruptions, k-shot prompts and
chain of thought. Each is a RunSettings field; this module turns an item's pass into its query and reads the
answers back, so the engine calls it in one place (`Variants.query`, `Variants.read_many`, `Variants.letter_of`).

Whatever labels a prompt used, a pass stores the standard letter (A, B, …) of the shown option chosen; the raw
label goes in the extraction's reason (contracts with the metrics: MR compares choices across runs).
Corruptions are applied when a query is built, seeded by (run seed, item index, pass), and never stored as
images: the run's settings say how to make them again.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from random import Random
from typing import TYPE_CHECKING, Any

from db import catalog
from db.catalog import Item
from db.errors import InvalidInput
from db.workspace import Workspace
from evaluator.backends import Query
from evaluator.backends.base import IMAGE_PLACEHOLDER, MAX_QUERY_IMAGES, shift_placeholders
from evaluator.engine.prompt_presets import place_images
from evaluator.engine.prompts import PromptTemplate
from evaluator.scoring.choices import (
    CHEF_ANSWER_QUERY,
    CHEF_COT_PROMPT,
    CHEF_OPTION_LINE,
    LETTERS,
    NONE_OF_THEM,
    YESNO_CANDIDATES,
    letters,
    rotation,
    shown_options,
)
from evaluator.scoring.extraction import Extraction, extract_by_rules

if TYPE_CHECKING:
    from evaluator.scoring.llm_extraction import Extractor

# ------------------------------------------------------------------------------------------------- label maps

# ChEF's OPTION_MAP (src/ChEF/scenario/MMBench_dataset.py); its first entries verbatim, then continued in kind so
# that an item with up to 25 options (A–Y) has a label for each.
_ROMAN = "I II III IV V VI VII VIII IX X XI XII XIII XIV XV XVI XVII XVIII XIX XX XXI XXII XXIII XXIV XXV".split()
_ORDINALS = (
    "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth fourteenth "
    "fifteenth sixteenth seventeenth eighteenth nineteenth twentieth twenty-first twenty-second twenty-third "
    "twenty-fourth twenty-fifth"
).split()
_GREEK = list("αβγδεζηθικλμνξοπρστυφχψω") + ["αα"]
LABEL_MAPS: dict[str, tuple[tuple[str, ...], ...]] = {
    "natural": (
        tuple(str(n) for n in range(1, 26)),
        tuple(_ROMAN),
        tuple(_ORDINALS),
        tuple(f"({n})" for n in range(1, 26)),
        tuple(_GREEK),
    ),
    "neutral": (
        tuple(
            "Smith Johnson Williams Jones Brown Davis Miller Wilson Moore Taylor Anderson Thomas Jackson White Harris "
            "Martin Thompson Garcia Martinez Robinson Clark Rodriguez Lewis Lee Walker".split()
        ),
        tuple(
            "foo dog hip oh cat lake river joy tree sun moon rock wind bird fish star leaf rain sand wave hill road "
            "bell milk cup".split()
        ),
        tuple("~ @ # $ % ^ & * + = | ; ? ! < > ` / : ' _ { } [ ]".split()),
    ),
    "unnatural": ((), ()),  # a cyclic shift of the letters: 0 shows A as "B", 1 shows A as the last letter
}
# The settings ChEF evaluates (natural 0–2, neutral 0–1, unnatural 0); the others are offered as well.
CHEF_SETTINGS = ("natural:0", "natural:1", "natural:2", "neutral:0", "neutral:1", "unnatural:0")


@dataclass(frozen=True)
class LabelMap:
    kind: str
    index: int

    @classmethod
    def parse(cls, spec: str) -> LabelMap:
        kind, _, index = spec.partition(":")
        if kind not in LABEL_MAPS:
            raise InvalidInput(f"label map {spec[:40]!r}: kind is not {', '.join(LABEL_MAPS)}")
        if not index.isdigit() or int(index) >= len(LABEL_MAPS[kind]):
            raise InvalidInput(f"label map {spec[:40]!r}: index is not 0..{len(LABEL_MAPS[kind]) - 1}")
        return cls(kind, int(index))

    def labels(self, n: int) -> tuple[str, ...]:
        """The labels shown for options A… of a pass with n options."""
        if self.kind == "unnatural":
            return tuple(LETTERS[j] for j in rotation(n, 1 if self.index == 0 else n - 1))
        return LABEL_MAPS[self.kind][self.index][:n]


def label_spec_problem(spec: str) -> str | None:
    try:
        LabelMap.parse(spec)
    except InvalidInput as exc:
        return str(exc)
    return None


# ---------------------------------------------------------------------------------------------- corruptions

TEXT_CORRUPTIONS = ("lowercase", "contractions", "misspell", "extra_spaces", "mild_mix")
DEFAULT_MISSPELL = 0.1
MAX_SPACES = 3  # HELM's SpacePerturbation(max_spaces=3) in its mild mix


@dataclass(frozen=True)
class ImageCorruption:
    name: str
    severity: int


@dataclass(frozen=True)
class TextCorruption:
    name: str
    p: float = DEFAULT_MISSPELL  # misspell's probability per word (mild_mix uses 0.1 as HELM does)


def parse_corruption(spec: str) -> ImageCorruption | TextCorruption:
    """`image:NAME:SEVERITY` or `text:NAME[:P]`; InvalidInput naming what is wrong."""
    parts = spec.split(":")
    where = f"corruption {spec[:60]!r}"
    if parts[0] == "image":
        # Imported here, as below: numpy and Pillow are for runs that corrupt images, not every command's start.
        from evaluator.engine.corruptions import EXTRA_CORRUPTIONS, IMAGE_CORRUPTIONS, SEVERITIES

        names = {**IMAGE_CORRUPTIONS, **EXTRA_CORRUPTIONS}
        if len(parts) != 3 or parts[1] not in names:
            raise InvalidInput(f"{where}: use image:NAME:SEVERITY with NAME one of {', '.join(names)}")
        if not parts[2].isdigit() or int(parts[2]) not in SEVERITIES:
            raise InvalidInput(f"{where}: severity is not 1..5")
        return ImageCorruption(parts[1], int(parts[2]))
    if parts[0] == "text":
        if len(parts) not in (2, 3) or parts[1] not in TEXT_CORRUPTIONS:
            raise InvalidInput(f"{where}: use text:NAME[:P] with NAME one of {', '.join(TEXT_CORRUPTIONS)}")
        if len(parts) == 3:
            if parts[1] != "misspell":
                raise InvalidInput(f"{where}: only misspell takes a probability")
            try:
                p = float(parts[2])
            except ValueError:
                p = -1.0
            if not 0 < p <= 1:
                raise InvalidInput(f"{where}: probability is not in (0, 1]")
            return TextCorruption("misspell", p)
        return TextCorruption(parts[1])
    raise InvalidInput(f"{where}: starts with neither image: nor text:")


# Expanded → contracted, as HELM's ContractionPerturbation does (a short list of the common ones).
_CONTRACTIONS = {
    "is not": "isn't",
    "are not": "aren't",
    "was not": "wasn't",
    "were not": "weren't",
    "do not": "don't",
    "does not": "doesn't",
    "did not": "didn't",
    "can not": "can't",
    "cannot": "can't",
    "could not": "couldn't",
    "would not": "wouldn't",
    "should not": "shouldn't",
    "will not": "won't",
    "have not": "haven't",
    "has not": "hasn't",
    "had not": "hadn't",
    "it is": "it's",
    "that is": "that's",
    "there is": "there's",
    "what is": "what's",
    "who is": "who's",
    "where is": "where's",
    "how is": "how's",
    "they are": "they're",
    "we are": "we're",
    "you are": "you're",
    "i am": "i'm",
    "let us": "let's",
}
_CONTRACTION = re.compile(r"\b(" + "|".join(re.escape(k) for k in _CONTRACTIONS) + r")\b", re.I)
_KEYBOARD = "qwertyuiop asdfghjkl zxcvbnm".split()


def _contract(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        short = _CONTRACTIONS[m.group(0).lower()]
        return short[0].upper() + short[1:] if m.group(0)[0].isupper() else short

    return _CONTRACTION.sub(one, text)


def _neighbour(ch: str, rng: Random) -> str:
    for row in _KEYBOARD:
        at = row.find(ch.lower())
        if at >= 0:
            near = [row[j] for j in (at - 1, at + 1) if 0 <= j < len(row)]
            pick = rng.choice(near)
            return pick.upper() if ch.isupper() else pick
    return ch


def _misspell_word(word: str, rng: Random) -> str:
    """One typo: two letters swapped, one dropped, one doubled, or one replaced by its keyboard neighbour."""
    at = rng.randrange(len(word) - 1)
    kind = rng.randrange(4)
    if kind == 0:
        return word[:at] + word[at + 1] + word[at] + word[at + 2 :]
    if kind == 1:
        return word[:at] + word[at + 1 :]
    if kind == 2:
        return word[: at + 1] + word[at] + word[at + 1 :]
    return word[:at] + _neighbour(word[at], rng) + word[at + 1 :]


_WORD = re.compile(r"[A-Za-z]{3,}")


def _misspell(text: str, p: float, rng: Random) -> str:
    return _WORD.sub(lambda m: _misspell_word(m.group(0), rng) if rng.random() < p else m.group(0), text)


def _extra_spaces(text: str, rng: Random) -> str:
    return re.sub(r" +", lambda m: " " * rng.randint(1, MAX_SPACES), text)


def corrupt_around_images(text: str, steps: Sequence[TextCorruption], rng: Random) -> str:
    """The text corrupted by each step in turn, its `<image N>` placeholders left as they are (a misspelt or spaced
    placeholder would no longer place its image); a text without placeholders is corrupted exactly as a whole."""
    cuts = [(m.start(), m.end()) for m in IMAGE_PLACEHOLDER.finditer(text)]
    if not cuts:
        for step in steps:
            text = corrupt_text(text, step, rng)
        return text
    bounds = [0, *(x for cut in cuts for x in cut), len(text)]
    pieces = [text[a:b] for a, b in zip(bounds, bounds[1:])]  # text, placeholder, text, …, text
    for step in steps:
        pieces = [corrupt_text(t, step, rng) if j % 2 == 0 else t for j, t in enumerate(pieces)]
    return "".join(pieces)


def corrupt_text(text: str, corruption: TextCorruption, rng: Random) -> str:
    if corruption.name == "lowercase":
        return text.lower()
    if corruption.name == "contractions":
        return _contract(text)
    if corruption.name == "misspell":
        return _misspell(text, corruption.p, rng)
    if corruption.name == "extra_spaces":
        return _extra_spaces(text, rng)
    # HELM's mild mix, in its order: lower-case, contractions, extra spaces (≤ 3), misspellings (p = 0.1)
    text = _contract(text.lower())
    return _misspell(_extra_spaces(text, rng), DEFAULT_MISSPELL, rng)


def _seed(*parts: object) -> int:
    """A stable 64-bit seed from the parts (Python's hash() is salted per process)."""
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:8], "big")


# ------------------------------------------------------------------------------------------------------ shots

SHOT_SELECTIONS = ("random", "fixed", "similar")
MAX_SHOTS = 3


def _key_of(item: Item) -> str | None:
    return item.answer


class ShotPicker:
    """Chooses an item's k examples from the benchmark: never the item, a copy of it (the same question and
    options) or an item showing the same image — the leaks ChEF's random and fixed retrievers allow."""

    def __init__(self, pool: Sequence[Item], k: int, selection: str, seed: int):
        self.pool = [i for i in pool if i.answer is not None]
        self.k, self.selection, self.seed = k, selection, seed
        self._fixed = list(self.pool)
        Random(_seed(seed, "fixed")).shuffle(self._fixed)
        self._tfidf: Any = None

    @staticmethod
    def allowed(example: Item, item: Item) -> bool:
        if example.id == item.id:
            return False
        if set(example.images) & set(item.images):
            return False
        return not (example.question == item.question and sorted(example.options) == sorted(item.options))

    def pick(self, item: Item) -> list[Item]:
        if self.k == 0:
            return []
        if self.selection == "fixed":
            ranked = self._fixed
        elif self.selection == "random":
            ranked = list(self.pool)
            Random(_seed(self.seed, "random", item.index)).shuffle(ranked)
        else:
            ranked = self._similar(item)
        return [e for e in ranked if self.allowed(e, item)][: self.k]

    def _similar(self, item: Item) -> list[Item]:
        from sklearn.feature_extraction.text import TfidfVectorizer

        if self._tfidf is None:
            vectorizer = TfidfVectorizer()
            self._tfidf = (vectorizer, vectorizer.fit_transform([e.question for e in self.pool]))
        vectorizer, matrix = self._tfidf
        similarity = (matrix @ vectorizer.transform([item.question]).T).toarray().ravel()
        order = sorted(range(len(self.pool)), key=lambda j: (-similarity[j], self.pool[j].position))
        return [self.pool[j] for j in order]


# ------------------------------------------------------------------------------------------ chain of thought

COT_INSTRUCTION = {
    "en": 'Think step by step, then give the final answer on the last line as "Answer: X", where X is one of {keys}.',
    "zh": "请一步一步地思考，然后在最后一行以“答案: X”的形式给出最终答案，X 为 {keys} 之一。",
}
COT_MAX_NEW_TOKENS = 512  # the CLI's and launcher's default for --cot (a direct answer needs 32)
# An answer statement; what follows it on its line is the final answer ("Answer: C", "the final answer is (b)").
_FINAL_CUE = re.compile(r"\b(?:final\s+answer|answer)\s*(?:is\b|would\s+be\b|[:=])|(?:最终)?答案\s*(?:是|为|:)", re.I)
SHOT_ANSWER = {"en": "Answer: {key}", "zh": "答案: {key}"}
SHOT_HEADER = {"en": "Example {n} (image {n}):", "zh": "示例 {n}（图 {n}）:"}
SHOT_HEADER_TEXT = {"en": "Example {n}:", "zh": "示例 {n}:"}
SHOT_QUESTION = {"en": "Now answer this question (image {n}):", "zh": "现在回答这个问题（图 {n}）:"}
SHOT_QUESTION_TEXT = {"en": "Now answer this question:", "zh": "现在回答这个问题:"}


def final_answer_text(response: str) -> str | None:
    """What the last answer statement of a response says, up to the end of its line (None when it has none)."""
    text = unicodedata.normalize("NFKC", response or "")
    cues = list(_FINAL_CUE.finditer(text))
    if not cues:
        return None
    rest = text[cues[-1].end() :].split("\n", 1)[0].strip()
    return rest or None


# ------------------------------------------------------------------------------------------- reading labels

_EDGE = " \t\r\n.,;:!?\"'“”‘’「」『』*`"


def _bare_label(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).strip(_EDGE)
    if len(text) > 2 and text[0] in "([" and text[-1] in ")]":
        text = text[1:-1].strip()
    return text.casefold()


def _label_pattern(label: str) -> re.Pattern[str]:
    """A label found as a token: not inside a word or a number ("1" is not in "12" nor "1.5")."""
    bare = _bare_label(label)
    body = re.escape(bare)
    if bare.isalnum() or bare.replace("-", "").isalnum():
        return re.compile(rf"(?<![\w.-])[(\[]?{body}[)\]]?(?![\w]|[.,]\d)", re.I)
    return re.compile(rf"(?<![^\s(\[\"'“]){body}(?![^\s)\]\"'”.,;:!?])", re.I)


def read_labels(response: str, options: Mapping[str, str], labels: Sequence[str]) -> Extraction:
    """Which shown option a response chose when the prompt asked for `labels` (label i = the i-th shown option):
    the whole response, else the last answer statement naming one label, else the one label mentioned, else the
    option's text. The choice is the standard letter; the reason quotes the label."""
    keys = list(options)
    by_bare = {_bare_label(label): i for i, label in enumerate(labels)}
    if len(by_bare) != len(labels):
        raise AssertionError("a label map's labels are distinct")
    text = unicodedata.normalize("NFKC", response or "")
    if not text.strip():
        return Extraction(None, "none", "empty response")

    def decided(i: int, how: str) -> Extraction:
        return Extraction(keys[i], "rules", f'{how} label "{labels[i]}" → {keys[i]}')

    whole = by_bare.get(_bare_label(text))
    if whole is not None:
        return decided(whole, "whole response:")
    final = final_answer_text(text)
    if final is not None:
        head = by_bare.get(_bare_label(final))
        if head is None:
            named = _mentioned(final, labels)
            head = named[0] if len(named) == 1 else None
        if head is not None:
            return decided(head, "answer line:")
    named = _mentioned(text, labels)
    if len(named) == 1:
        return decided(named[0], "the one")
    if len(named) > 1:
        return Extraction(None, "none", "several labels named: " + ", ".join(labels[i] for i in named))
    by_text = extract_by_rules(text, {f"_{k}": v for k, v in options.items()})  # keys no letter reads
    if by_text.choice is not None and by_text.choice != NONE_OF_THEM and by_text.reason.startswith("option text"):
        return Extraction(by_text.choice[1:], "rules", by_text.reason)
    if by_text.choice == NONE_OF_THEM:
        return by_text
    return Extraction(None, "none", "no label named")


def _mentioned(text: str, labels: Sequence[str]) -> list[int]:
    found = []
    for i, label in enumerate(labels):
        pattern = _label_pattern(label)
        hits = [m for m in pattern.finditer(text)]
        if label == "I":  # the pronoun: "I think" is no label
            hits = [m for m in hits if not re.match(r"\s+[a-z']", text[m.end() :]) and m.group(0) == "I"]
        if hits:
            found.append(i)
    return found


def read_final_answer(response: str, options: Mapping[str, str]) -> Extraction:
    """A chain-of-thought response: its last "Answer: …" line first, else the whole response by the rules."""
    final = final_answer_text(response)
    if final is not None:
        first = extract_by_rules(final, options)
        if first.choice is not None:
            return Extraction(first.choice, first.stage, f"final answer line: {first.reason}")
    return extract_by_rules(response, options)


# -------------------------------------------------------------------------------------------------- the engine


@dataclass(frozen=True)
class VariantSettings:
    """The variant fields of RunSettings (evaluator.engine.runner), read once."""

    label_map: str | None = None
    corrupt: tuple[str, ...] = ()
    corrupt_options: bool = False
    shots: int = 0
    shot_selection: str = "random"
    cot: bool = False

    @classmethod
    def of(cls, settings: Any) -> VariantSettings:
        return cls(**{f: getattr(settings, f) for f in cls.__dataclass_fields__})

    @property
    def any(self) -> bool:
        return self != VariantSettings()


def problems(settings: Any) -> list[str]:
    """What is wrong with a RunSettings' variant fields (each a line for InvalidInput)."""
    v = VariantSettings.of(settings)
    found = []
    if v.label_map is not None:
        if not isinstance(v.label_map, str):
            found.append("label_map: not text")
        elif (problem := label_spec_problem(v.label_map)) is not None:
            found.append(f"label_map: {problem}")
    if not isinstance(v.corrupt, tuple) or not all(isinstance(c, str) for c in v.corrupt):
        found.append("corrupt: not a list of texts")
    else:
        for spec in v.corrupt:
            try:
                parse_corruption(spec)
            except InvalidInput as exc:
                found.append(f"corrupt: {exc}")
        if len(v.corrupt) > 8:
            found.append("corrupt: more than 8 corruptions")
    if not isinstance(v.corrupt_options, bool) or not isinstance(v.cot, bool):
        found.append("corrupt_options/cot: not true/false")
    if (
        isinstance(v.corrupt_options, bool)
        and v.corrupt_options
        and not any(isinstance(c, str) and c.startswith("text:") for c in v.corrupt)
    ):
        found.append("corrupt_options: needs a text corruption")
    if not isinstance(v.shots, int) or isinstance(v.shots, bool) or not 0 <= v.shots <= MAX_SHOTS:
        found.append(f"shots: {str(v.shots)[:20]!r} is not 0..{MAX_SHOTS}")
    if v.cot is True and getattr(settings, "likelihood", False):
        found.append("cot: a likelihood run scores the options and generates no chain of thought")
    if v.label_map is not None and getattr(settings, "likelihood_score", "sum") == "chef":
        found.append('label_map: ChEF\'s calibration scores the candidates "(A", "(B"…, not mapped labels')
    if v.shot_selection not in SHOT_SELECTIONS:
        found.append(f"shot_selection: {str(v.shot_selection)[:20]!r} is not {', '.join(SHOT_SELECTIONS)}")
    if getattr(settings, "multi_turn", None) is not None:
        found += _multi_turn_problems(v)
    return found


def _multi_turn_problems(v: VariantSettings) -> list[str]:
    """Variants a multi-turn pass cannot honour: the asking LLM reads the question and options and answers with a
    letter after its own reasoning; the model is asked sub-questions about one image. Corruptions do apply (the
    image the model sees; the question and options the asker reads)."""
    found = []
    if v.label_map is not None:
        found.append("label_map: not with multi_turn (the asking LLM answers with the option letters)")
    if isinstance(v.shots, int) and v.shots:
        found.append("shots: not with multi_turn (the model is asked sub-questions about one image, not the question)")
    if v.cot is True:
        found.append("cot: not with multi_turn (the asking LLM reasons step by step already)")
    return found


class Variants:
    """One run's variants: builds each pass's query and reads its answers (the identity when there are none)."""

    def __init__(self, ws: Workspace, settings: Any, template: PromptTemplate, kind: str, benchmark_id: int, seed: int):
        self.ws, self.template, self.kind, self.seed = ws, template, kind, seed
        self.text_only = bool(settings.text_only)
        # A VLMEvalKit preset's class may put an item's images first (prompt_presets.place_images).
        self.preset: str | None = getattr(settings, "prompt_preset", None)
        # ChEF's calibration recipe: options shown "(A) text", the scored turn asks ChEF's answer query.
        self.chef = bool(settings.likelihood) and getattr(settings, "likelihood_score", "sum") == "chef"
        self.option_line = CHEF_OPTION_LINE if self.chef else "{letter}. {text}"
        v = VariantSettings.of(settings)
        self.v = v
        self.label_map = LabelMap.parse(v.label_map) if v.label_map and kind == "mcq" else None
        parsed = [parse_corruption(c) for c in v.corrupt]
        self.image_steps = tuple((c.name, c.severity) for c in parsed if isinstance(c, ImageCorruption))
        self.text_steps = tuple(c for c in parsed if isinstance(c, TextCorruption))
        pool = catalog.list_items(ws, benchmark_id) if v.shots else []
        self.shots = ShotPicker(pool, v.shots, v.shot_selection, seed)
        # Read through this module when the prompt asked for something the plain extractor does not know.
        self.reads = self.label_map is not None or v.cot or (v.corrupt_options and bool(self.text_steps))

    # -- building --------------------------------------------------------------------------------------------
    def question(self, item: Item, k: int) -> str:
        """The question as pass k shows it (corrupted when the run corrupts text)."""
        rng = Random(_seed(self.seed, "text", item.index, k))
        return corrupt_around_images(item.question, self.text_steps, rng)

    def query(self, item: Item, k: int, order: tuple[int, ...]) -> Query:
        question = self.question(item, k)
        shown = self.shown_texts(item, k, order)
        labels = self.labels(len(shown))
        prompt = self._render(item, question, shown, labels)
        images = self._image(item)
        if images and self.image_steps:
            from evaluator.engine.corruptions import corrupt_image_bytes

            # Every image of the item, each with its own seed (the first's as it always was).
            images = tuple(
                corrupt_image_bytes(
                    data, self.image_steps, _seed(self.seed, "image", item.index, k, *([n] if n else []))
                )
                for n, data in enumerate(images)
            )
        if self.shots.k:
            prompt, images = self._with_shots(item, prompt, images)
            if len(images) > MAX_QUERY_IMAGES:
                raise InvalidInput(
                    f"item {str(item.index)[:40]}: {len(images)} images with its examples'; a query sends at most "
                    f"{MAX_QUERY_IMAGES} (ask with fewer --shots)"
                )
        prompt = place_images(self.preset, prompt, len(images))
        candidates = (
            labels
            if labels
            else tuple(letters(len(shown)))
            if self.kind == "mcq"
            else ()  # an open question offers nothing to choose
            if self.kind == "open"
            else YESNO_CANDIDATES
        )
        return Query(prompt=prompt, images=images, letters=candidates)

    def shown_texts(self, item: Item, k: int, order: tuple[int, ...]) -> tuple[str, ...]:
        """The option texts as pass k shows them (corrupted when --corrupt-options; order and key unchanged)."""
        shown = tuple(item.options[j] for j in order)
        if self.v.corrupt_options and self.text_steps:
            rng = Random(_seed(self.seed, "options", item.index, k))
            out = []
            for text in shown:
                out.append(corrupt_around_images(text, self.text_steps, rng))
            shown = tuple(out)
        return shown

    def labels(self, n: int) -> tuple[str, ...]:
        return self.label_map.labels(n) if self.label_map is not None and n else ()

    def _render(self, item: Item, question: str, shown: tuple[str, ...], labels: tuple[str, ...]) -> str:
        prompt = self.template.render(
            question=question,
            hint=item.hint,
            options=shown,
            language=item.language,
            labels=labels or None,
            option_line=self.option_line,
        )
        if self.chef:
            return self.template.with_cot(prompt, CHEF_ANSWER_QUERY, "")
        if self.v.cot:
            keys = ", ".join(labels or (letters(len(shown)) if self.kind == "mcq" else ("yes", "no")))
            prompt = self.template.with_cot(prompt, COT_INSTRUCTION.get(item.language, COT_INSTRUCTION["en"]), keys)
        return prompt

    def _image(self, item: Item) -> tuple[bytes, ...]:
        """Every image of the item, in order (() for a text-only run); InvalidInput, one line, for an item of more
        than MAX_QUERY_IMAGES, or one whose image is not in the workspace (a missing one would shift the others)."""
        if self.text_only or not item.images:
            return ()
        if len(item.images) > MAX_QUERY_IMAGES:
            raise InvalidInput(
                f"item {str(item.index)[:40]}: {len(item.images)} images; a query sends at most {MAX_QUERY_IMAGES}"
            )
        out = []
        for n, sha in enumerate(item.images, start=1):
            found = catalog.image_bytes(self.ws, sha)
            if found is None:
                if len(item.images) == 1:
                    return ()  # as a one-image item always was: asked without it
                raise InvalidInput(f"item {str(item.index)[:40]}: image {n} ({sha[:12]}…) is not in the workspace")
            out.append(found[0])
        return tuple(out)

    def _with_shots(self, item: Item, prompt: str, images: tuple[bytes, ...]) -> tuple[str, tuple[bytes, ...]]:
        lang = item.language if item.language in SHOT_ANSWER else "en"
        parts: list[str] = []
        shot_images: list[bytes] = []
        for example in self.shots.pick(item):
            ex_images = self._image(example)
            n = len(shot_images) + 1
            header = (SHOT_HEADER if ex_images else SHOT_HEADER_TEXT)[lang].format(n=n)
            labels = self.labels(len(example.options))
            body = self.template.render(
                question=example.question,
                hint=example.hint,
                options=example.options,
                language=example.language,
                labels=labels or None,
                option_line=self.option_line,
            )
            body = shift_placeholders(body, n - 1)  # its <image N> names the query's images, theirs before it
            key = example.answer or ""
            if labels:
                key = labels[LETTERS.index(key)]
            parts.append(f"{header}\n{body}\n{SHOT_ANSWER[lang].format(key=key)}")
            shot_images.extend(ex_images)
        n = len(shot_images) + 1
        header = (SHOT_QUESTION if images else SHOT_QUESTION_TEXT)[lang].format(n=n)
        prompt = shift_placeholders(prompt, n - 1)
        return "\n\n".join([*parts, f"{header}\n{prompt}"]), (*shot_images, *images)

    @staticmethod
    def chef_cot_prompt(answer_prompt: str) -> str:
        """ChEF's chain-of-thought query of a pass whose scored query is `answer_prompt`: the same question, then
        "Let's think step by step." instead of the answer query (ChEF's generate_CoT_prompt)."""
        return answer_prompt.removesuffix(CHEF_ANSWER_QUERY) + CHEF_COT_PROMPT

    # -- reading ---------------------------------------------------------------------------------------------
    def final_text(self, response: str) -> str:
        """What a yes/no reader should read: a CoT response's last answer statement when it has one."""
        return (final_answer_text(response) or response) if self.v.cot else response

    def letter_of(self, candidate: str, offered: Sequence[str]) -> str:
        """A likelihood pass's chosen candidate as its standard letter (a label's position; a letter as is)."""
        if self.label_map is None or self.kind != "mcq":
            return candidate
        return LETTERS[list(offered).index(candidate)]

    def read_many(
        self, extractor: Extractor, batch: Sequence[Item], orders: Sequence[tuple[int, ...]], responses: Sequence[str]
    ) -> list[Extraction]:
        """The run's extractor over a batch, with the labels and the final answer line the prompts asked for:
        rules read the labels (and a CoT response's last answer line first); an LLM extractor is shown each
        option with its label and answers with the standard letter."""
        from evaluator.scoring.llm_extraction import LLMExtractor, RulesThenLLM

        inputs = []
        for item, order, response in zip(batch, orders, responses):
            texts = self.shown_texts(item, pass_of_order(order), order) if order else ()
            options = {LETTERS[i]: t for i, t in enumerate(texts)} or shown_options(item.options, order)
            inputs.append((item.question, options, response))
        llm = extractor.llm if isinstance(extractor, RulesThenLLM) else extractor
        if isinstance(extractor, LLMExtractor):
            return llm.extract_many([self._for_llm(i) for i in inputs])
        first = [self._rules(options, response) for _, options, response in inputs]
        if not isinstance(extractor, RulesThenLLM):
            return first
        undecided = [n for n, e in enumerate(first) if e.choice is None]
        second = extractor.llm.extract_many([self._for_llm(inputs[n]) for n in undecided])
        out = list(first)
        for n, e in zip(undecided, second):
            out[n] = Extraction(e.choice, e.stage, f"rules: {first[n].reason}; {e.reason}")
        return out

    def _rules(self, options: Mapping[str, str], response: str) -> Extraction:
        if self.label_map is not None:
            return read_labels(response, options, self.labels(len(options)))
        if self.v.cot:
            return read_final_answer(response, options)
        return extract_by_rules(response, options)

    def _for_llm(self, entry: tuple[str, Mapping[str, str], str]) -> tuple[str, Mapping[str, str], str]:
        question, options, response = entry
        labels = self.labels(len(options))
        if not labels:
            return entry
        return question, {k: f'{t} (label "{label}")' for (k, t), label in zip(options.items(), labels)}, response


def pass_of_order(order: Sequence[int]) -> int:
    """The rotation k of a pass's option order (rotation(n, k)[0] == k)."""
    return order[0] if order else 0
