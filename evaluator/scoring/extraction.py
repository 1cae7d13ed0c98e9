"""Rule-based choice extraction — step 1 of MMBench's extractor.

A model answers a multiple-choice question in free text; these rules read which option it chose. They decide
only when the response clearly names one option; otherwise the result is *undecided* (``choice=None``), which
is a first-class outcome: step 2 (an LLM matcher) or a human takes over, and nothing is ever guessed.

The reading goes from the strongest evidence to the weakest:

1. the whole response is exactly one option's text, or exactly one letter in any case ("b", "(b)"; in running
   text only capitals are letters, since "a" is an article and "b" a unit or a variable — except in a letter
   form right after an answer cue, "Answer: b", "答案是ｂ", or starting the first line, "(b) dog", "b. dog");
   a letter glued to a following Chinese word is part of that word ("B型" is blood type B, "A股" A-shares);
2. an explicit answer statement ("the answer is B", "Answer: (C) 3 apples", "so B", "B is correct",
   "答案是B", "Actually, C.", a first line that is a bare letter) — the *last* one wins, because chain-of-thought
   responses mention other letters while reasoning and end with the answer (and self-corrections come later);
3. a refusal ("I cannot answer", "none of the options", "无法确定") → ``"Z"``;
4. every mention of an option letter or option text in the response; exactly one option must be named,
   mentions that rule an option out ("not A", "C is wrong") do not count.
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from evaluator.scoring.choices import CJK_SCRIPTS, NONE_OF_THEM, has_cjk
from evaluator.scoring.language import language_of  # noqa: F401  (re-exported: items and responses share it)

REFUSAL = NONE_OF_THEM
"""The choice recorded when a response refuses or says that none of the options fits."""


class _Pattern:
    """A regular expression compiled at its first use: this module's take ~17 ms to compile, which every command
    importing it paid, its --help included (issue 34)."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._source = (pattern, flags)

    @functools.cached_property
    def _compiled(self) -> re.Pattern[str]:
        return re.compile(*self._source)

    def search(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self._compiled.search(text, pos, endpos)

    def match(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self._compiled.match(text, pos, endpos)

    def fullmatch(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self._compiled.fullmatch(text, pos, endpos)

    def finditer(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        return self._compiled.finditer(text, pos, endpos)

    def sub(self, repl: str | Callable[[re.Match[str]], str], text: str, count: int = 0) -> str:
        return self._compiled.sub(repl, text, count)


@dataclass(frozen=True)
class Extraction:
    choice: str | None  # an option letter, "Z" (refusal / none of the options), or None (undecided)
    stage: str  # "rules" when decided by rules, "none" when undecided
    reason: str  # short human-readable reason


TRUNCATED = Extraction(
    None, "truncated", "cut off by the token budget inside the thought: no answer (finish_reason length)"
)
"""A pass the token budget ended inside its thought (issue 36): nothing to read — the engine stores it so, never
retried, and every re-scoring keeps it so; reports count it apart."""


# --- Normalisation ----------------------------------------------------------------------------------------

# \boxed{B} and <answer>B</answer> are answer statements: rewrite them as "Answer: B" on a line of its own.
_BOXED = _Pattern(r"\\boxed\s*\{([^{}]*)\}|<answer>([^<]*)</answer>", re.I)
_LATEX_TEXT = _Pattern(r"\\(?:text|textbf|mathrm|mathbf)\s*\{([^{}]*)\}")
# Markdown emphasis, code fences, maths delimiters and heading marks carry no meaning for the choice.
_MARKUP = _Pattern(r"\*\*|__|[*`$]|^[ \t]*#+[ \t]*", re.M)


def _normalise_text(text: str) -> str:
    """The reading of any text, response or option: an option is found in a response as written in either."""
    # NFKC folds the full-width forms Chinese text uses: "Ｂ" → "B", "：" → ":", "（" → "(", "；" → ";".
    text = unicodedata.normalize("NFKC", text)
    text = _LATEX_TEXT.sub(r"\1", text)  # first, so that \boxed{\text{B}} has no nested braces left
    return _MARKUP.sub("", text)


def _normalise(response: str) -> str:
    text = _normalise_text(response)
    return _BOXED.sub(lambda m: f"\nAnswer: {m.group(1) if m.group(1) is not None else m.group(2)}\n", text)


# --- Options ----------------------------------------------------------------------------------------------

_EDGE_PUNCT = " \t\r\n.,;:!?\"'()[]{}<>。、“”‘’「」『』《》〈〉【】〔〕"  # after NFKC: no full-width ASCII
_LEADING_ARTICLE = _Pattern(r"^(?:an?|the)\s+(?=\S)", re.I)
_LATIN = "0-9A-Za-z\u00c0-\u024f"


def _bare(text: str) -> str:
    """Casefolded, trimmed of surrounding punctuation, single-spaced, without a leading article."""
    text = " ".join(text.split()).strip(_EDGE_PUNCT)
    return _LEADING_ARTICLE.sub("", text).casefold()


_LATIN_CHAR = _Pattern(rf"[{_LATIN}]")
_DIGIT_SEP = _Pattern(r"\d[.,]")
_SEP_DIGIT = _Pattern(r"[.,]\d")


@dataclass(frozen=True)
class _Phrase:
    """An option's text found as a whole word / phrase: the body is a regex, the word boundaries are checked here.

    Boundaries are checked in Python rather than as look-arounds because compiling a look-around over a large
    character class costs ~1.5 ms per option, which dominated whole evaluation runs.
    """

    body: re.Pattern[str]
    left: bool
    right: bool

    def _bounded(self, text: str, start: int, end: int) -> bool:
        # Digits must not sit next to it either, so "12" is not found inside "112" or "1.12".
        if (
            self.left
            and start
            and (_LATIN_CHAR.match(text, start - 1) or (start >= 2 and _DIGIT_SEP.match(text, start - 2)))
        ):
            return False
        return not (self.right and (_LATIN_CHAR.match(text, end) or _SEP_DIGIT.match(text, end)))

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        pos = 0
        while (m := self.body.search(text, pos)) is not None:
            if self._bounded(text, m.start(), m.end()):
                yield m
                pos = max(m.end(), m.start() + 1)
            else:
                pos = m.start() + 1

    def match(self, text: str, pos: int = 0) -> re.Match[str] | None:
        m = self.body.match(text, pos)
        return m if m is not None and self._bounded(text, m.start(), m.end()) else None


@functools.lru_cache(maxsize=4096)
def _option_pattern(text: str) -> _Phrase | None:
    """A matcher finding the option's text as a whole word / phrase (Chinese: as a substring)."""
    phrase = _LEADING_ARTICLE.sub("", " ".join(text.split()).strip(_EDGE_PUNCT))
    if not phrase or (len(phrase) == 1 and phrase.isalpha() and not has_cjk(phrase)):
        return None  # a one-letter option text ("a") cannot be told apart from letters and articles
    body = re.compile(r"\s+".join(re.escape(word) for word in phrase.split()), re.I)
    if has_cjk(phrase):
        return _Phrase(body, False, False)
    return _Phrase(body, bool(_LATIN_CHAR.match(phrase)), bool(_LATIN_CHAR.match(phrase[-1])))


@dataclass(frozen=True)
class _Choices:
    letters: tuple[str, ...]
    texts: Mapping[str, str]
    keys: Mapping[str, str]  # upper-case letter -> the caller's key

    @classmethod
    def of(cls, options: Mapping[str, str]) -> _Choices:
        keys = {str(k).strip().upper(): k for k in options}
        texts = {letter: ("" if options[k] is None else _normalise_text(str(options[k]))) for letter, k in keys.items()}
        return cls(tuple(texts), texts, keys)

    @functools.cached_property
    def patterns(self) -> tuple[tuple[str, _Phrase], ...]:
        # Compiled only when a response needs them: a bare letter ("B") does not, and compiling every option's
        # pattern for it cost more than the rest of a free model's run once the benchmark outgrew the cache.
        return tuple((k, p) for k, t in self.texts.items() if (p := _option_pattern(t)) is not None)

    def letters_are_texts(self) -> bool:
        """Options such as {A: "B", B: "A"} (points labelled in a figure): a letter could be either."""
        return any(_bare(t).upper() in self.texts and _bare(t).upper() != k for k, t in self.texts.items())

    def describe(self) -> str:
        return ", ".join(self.letters) if len(self.letters) < 3 else f"{self.letters[0]}–{self.letters[-1]}"

    def exact(self, text: str) -> str | None:
        """The one option whose whole text is the whole response."""
        bare = _bare(text)
        hits = [k for k, t in self.texts.items() if bare and _bare(t) == bare]
        return hits[0] if len(hits) == 1 else None


# --- Mentions of options ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Mention:
    letter: str  # any upper-case letter, possibly not among the options
    start: int
    end: int
    form: str  # as written, for the reason
    kind: str  # "letter" or "text"
    negated: bool  # named only to be ruled out


# Scripts written without spaces: a Latin letter glued to a following character of theirs is part of a word
# ("B型" blood type B, "A股" A-shares, "B超" ultrasound), not an option letter, unless that character is one of
# the words that follow an option letter in a sentence ("B选项", "B是对的", "A和B", "C不对", "选B吧").
_SPACELESS = CJK_SCRIPTS
_AFTER_LETTER_WORDS = "选项是为和或与及跟正对错不最符吧呢啊呀吗嘛了也都还更比才就即"
_NOT_GLUED = rf"(?!(?![{_AFTER_LETTER_WORDS}])[{_SPACELESS}])"
_GLUED = _Pattern(rf"[{_SPACELESS}]")

# A stand-alone capital letter, optionally bracketed: not part of a word, "X-ray", "I'm", "U.S.", "B.5" or "B型".
_LETTER = _Pattern(
    r"(?<![0-9A-Za-z'’_\-])(?<![A-Za-z]\.)(?P<open>[(\[]?)(?P<letter>[A-Z])(?P<close>[)\]]?)"
    r"(?![0-9A-Za-z'’_\-])(?!\.[0-9A-Za-z])" + _NOT_GLUED
)
# After "A", these words show that "A" is the option letter ("A is wrong") and not the article ("A dog").
_VERBS_AFTER_LETTER = frozenset(
    "is was are were seems appears would should could can might must will and or nor but matches fits "
    "describes correctly because since looks has shows contains depicts then also".split()
)
_NAMED_AS_OPTION = _Pattern(r"(?:option|choice|answer|letter|选项|选)\s*:?\s*$", re.I)
_NEXT_WORD = _Pattern(r"[ \t]+([a-z][a-z'’]*)")

# "not A", "rather than a cat", "不是猫": the mention that follows is ruled out.
_NEGATION_BEFORE = _Pattern(
    r"(?:\bnot|n['’]t|\bno|\bneither|\bnor|\brather\s+than|\binstead\s+of|\bexcept|\bexcluding|\bother\s+than"
    r"|\bunlikely|\bdoubt|\banything\s+but|不是|并非|而非|没有|排除)"
    # a few plain words may stand between ("I would not choose A", "I don't think it's A", "can't be A");
    # punctuation ends the reach ("not a cat, so A" names A).
    r"(?:\s+(?!(?:so|then|hence|therefore|thus|but|instead)\b)[\w'’]+){0,3}?"
    r"\s*(?:(?:an?|the|option|choice|letter|answer)\s+)*[(\[《「『【〈“‘\"']?$",
    re.I,
)
# "A is wrong", "A and C are incorrect", "A选项错误": ruled out by what follows (also the letters joined to it).
_NEGATION_AFTER = _Pattern(
    r"[)\]》」』】〉”’\"']?(?:\s*(?:,|and|or|&|和|、|与)\s*(?:option\s+)?[(\[]?(?-i:[A-Z])[)\]]?)*\s*(?:选项|option)?\s*"
    r"(?:is|are|was|were|would\s+be|seems|appears)?\s*"
    r"(?:not\b|n['’]t|wrong|incorrect|false|unlikely|impossible|ruled\s+out|eliminated|excluded|an?\s+mistake"
    r"|不对|不正确|错误|是错|错|不是|排除)",
    re.I,
)
_CONTEXT = 30  # characters looked at on each side of a mention for a negation


def _is_negated(text: str, start: int, end: int) -> bool:
    return bool(
        _NEGATION_BEFORE.search(text[max(0, start - _CONTEXT) : start])
        or _NEGATION_AFTER.match(text, end, end + _CONTEXT)
    )


def _reads_as_word(text: str, match: re.Match[str]) -> bool:
    """True when a capital "A" is the article ("A dog.") or "I" the pronoun ("I think"), not a letter."""
    letter = match.group("letter")
    if letter not in "AI" or match.group("open") or match.group("close"):
        return False
    if _NAMED_AS_OPTION.search(text, max(0, match.start() - _CONTEXT), match.start()):
        return False  # "option A ..." is always the letter
    following = _NEXT_WORD.match(text, match.end())
    if following is None:
        return False
    return letter == "I" or following.group(1) not in _VERBS_AFTER_LETTER


def _text_mentions(text: str, choices: _Choices) -> list[_Mention]:
    """Option texts found in the text; a match inside a longer one ("red" in "red apple") does not count."""
    found = [(k, m.span()) for k, pattern in choices.patterns for m in pattern.finditer(text)]
    # Sweep the distinct spans by start (longest first on ties): a span ending no later than one seen before
    # lies inside that longer one. Equal spans (two options with the same text) are kept, to count as several.
    inside: set[tuple[int, int]] = set()
    furthest = -1
    for span in sorted({span for _, span in found}, key=lambda sp: (sp[0], -sp[1])):
        if span[1] <= furthest:
            inside.add(span)
        furthest = max(furthest, span[1])
    return [
        _Mention(k, start, end, text[start:end], "text", _is_negated(text, start, end))
        for k, (start, end) in sorted(found, key=lambda f: f[1])
        if (start, end) not in inside
    ]


def _letter_mentions(text: str, masked: str | None = None) -> list[_Mention]:
    """Stand-alone letters, found in ``masked`` (option texts blanked) but read in context in ``text``."""
    return [
        _Mention(m["letter"], m.start(), m.end(), m[0], "letter", _is_negated(text, m.start(), m.end()))
        for m in _LETTER.finditer(text if masked is None else masked)
        if not _reads_as_word(text, m)
    ]


def _mask(text: str, mentions: list[_Mention]) -> str:
    """Blank out option texts, so "Vitamin C" or "none of the above" inside an option is not read again."""
    chars = list(text)
    for m in mentions:
        chars[m.start : m.end] = " " * (m.end - m.start)
    return "".join(chars)


# A response that is one letter and nothing else names that letter, whatever its case: "b", "(b)", "c.".
_LONE_LETTER = _Pattern(r"[(\[]?(?P<letter>[A-Za-z])[)\]]?[.:;,!]?")


def _end_of(match: re.Match[str] | None) -> int:
    """Where a pattern that always matches (it may match nothing) ends."""
    assert match is not None
    return match.end()


def _unique(letters: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(letters))


# --- Answer statements ------------------------------------------------------------------------------------

# Strong cues: what follows them is the answer ("the answer is …", "Answer: …", "I'd go with …", "答案是…").
_ANSWER_CUE = _Pattern(
    r"""
      \banswer(?:\s+to\s+(?:the|this)\s+question)?\s*
          (?:[:=]|(?:is|would\s+be|should\s+be|will\s+be|must\s+be|seems\s+to\s+be)\b)
    | \b(?:correct|right|best|final|my|most\s+\w+|appropriate|suitable)\s+(?:option|choice)\s*
          (?:[:=]|(?:is|would\s+be|should\s+be)\b)
    | (?:^|(?<=\n))[ \t]*(?:option|choice)\s*[:=]
    | \bI(?:\s+would|\s+will|['’]d|['’]ll)?\s+(?:choose|pick|select|go\s+with|say)\b
    | 答案(?:应该|应)?(?:是|为|:) | 正确的?选项(?:应该)?(?:是|为|:) | 选择 | 应选 | 故选 | 选(?!项)
    """,
    re.I | re.X,
)
# Conclusions that end a clause with a letter: "…, so B.", "therefore (C)", "所以选B".
_CONCLUSION = _Pattern(
    r"""
    (?:\b(?:so|therefore|thus|hence|consequently)\b|所以|因此)
    [\s,:，]*
    (?:(?:it|this|that)\s*(?:is|['’]s|must\s+be)\s+|(?:the\s+)?(?:option|choice)\s+|选项?|是)?
    [(\[]?(?-i:(?P<letter>[A-Z]))[)\]]?
    (?=\s*(?:[.!?。！]|$))
    """,
    re.I | re.X,
)
# Self-corrections that end a clause with a letter form: "Actually, C.", "Wait, no: it is (b).", "Correction: (b)".
# Only a letter form: "Actually, the cat in option A is asleep" is no answer.
_CORRECTION = _Pattern(
    r"""
    \b(?:actually|correction|wait)\b[\s,:;.!]*(?:no\b[\s,:;.!]*)?
    (?:(?:it|this|that)\s*(?:is|['’]s|must\s+be)\s+|(?:the\s+)?(?:answer\s+is|option|choice)\s+)?
    (?P<letter>[(\[]?(?-i:[A-Z])[)\]]?|[(\[][a-z][)\]])
    (?=\s*(?:[.!?。！]|$))
    """,
    re.I | re.X,
)
# Verdicts that follow the letter: "B is the correct answer", "B is correct", "B选项正确".
_VERDICT = _Pattern(
    r"""
    (?<![0-9A-Za-z'’_\-])[(\[]?(?-i:(?P<letter>[A-Z]))[)\]]?
    (?:\s*(?:is|would\s+be|seems\s+to\s+be)\s+(?:the\s+)?
           (?:(?:correct|right|best|most\s+\w+)\s+(?:answer|option|choice)|answer|correct|right)\b
     | \s*选项?是?(?:正确|对)(?!吗))
    """,
    re.I | re.X,
)
_HYPOTHETICAL = _Pattern(
    r"(?:\b(?:if|whether|suppose|supposing|assuming|unless)\s+(?:option\s+)?|如果|假如|假设)$", re.I
)
# A first line that starts with a letter form: "B", "B.", "(B) dog", "(b) dog", "b. dog" — the answer, unless the
# lines are a list. A bare letter followed by a word ("A dog? No, a cat.", "a cat") is not a letter form.
_LEADING_LINE = _Pattern(r"[ \t]*(?:[(\[][A-Za-z][)\]]|[A-Z](?:[.:),]|(?=[ \t]*$))|[a-z][.:)](?![0-9A-Za-z]))")

# What may stand between a cue and the answer: "the answer is probably option (B)".
_FILLER = _Pattern(
    r"(?:[\s:=\-–—,，]|(?:is|be|that|the|option|choice|letter|answer|probably|likely|most|clearly|obviously"
    r"|definitely|certainly|surely|maybe|perhaps|possibly|either|just|simply|indeed|actually|then)\b"
    r"|选项|是|为|应该|应|就)*",
    re.I,
)
_NEGATION_START = _Pattern(r"(?:not\b|n['’]t|不是|并非)", re.I)
# The answer after a cue ends at the sentence end or where a justification starts.
_CLAUSE_END = _Pattern(
    r"[!?。！？\n;；]|\.(?=\s+(?-i:[A-Z(])|\s*$)"
    r"|,?\s*\b(?:because|since|but|while|whereas|although|though|given)\b|因为|由于|但是",
    re.I,
)
_LEADING_LETTER = _Pattern(
    r"(?P<open>[(\[]?)(?P<letter>[A-Za-z])(?P<close>[)\]]?)(?![0-9A-Za-z'’_\-])(?!\.[0-9A-Za-z])" + _NOT_GLUED
)
# More letters joined to the answer: "B or C", "B, D", "B/C", "B和C".
_JOINED_LETTER = _Pattern(
    r"\s*(?:,|/|&|\bor\b|\band\b|或者|或|和|与|、|以及)\s*"
    r"(?:(?:and|or|maybe|perhaps|possibly|probably|even|also|just|option)\s+)*[(\[]?"
    r"(?P<letter>[A-Za-z])(?![0-9A-Za-z'’_\-])" + _NOT_GLUED,
    re.I,
)
_ANSWER_REACH = 200  # characters after a cue in which its answer must stand (keeps long responses linear)
_AFTER_LETTER = _Pattern(r"[\s.:)\]\-–—,，]*(?:(?:an?|the)\s+)?", re.I)


def _decided(letter: str, reason: str) -> Extraction:
    return Extraction(letter, "rules", reason)


def _undecided(reason: str) -> Extraction:
    return Extraction(None, "none", reason)


def _quote(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _several(letters: list[str]) -> Extraction:
    return _undecided("several options named: " + ", ".join(sorted(letters)))


def _not_an_option(letter: str, choices: _Choices) -> Extraction:
    return _undecided(f"letter '{letter}' is not among the options ({choices.describe()})")


def _read_answer(
    text: str, start: int, choices: _Choices, cue_start: int, label: str = "answer statement"
) -> Extraction | None:
    """What a strong cue ending at ``start`` names; None when it names nothing (the cue was not an answer)."""
    clause = _first_clause(text[start : start + _ANSWER_REACH])
    answer = clause[_end_of(_FILLER.match(clause)) :]
    if not answer or _NEGATION_START.match(answer):  # "the answer is not A" states no answer
        return None
    said = _quote(text[cue_start : start + len(clause)])

    letter = _answer_letter(answer, choices)
    if letter is not None:
        if _NEGATION_AFTER.match(answer, letter.end(), letter.end() + _CONTEXT):
            return None  # "Wait, A is wrong": no answer
        chosen, rest = letter.group("letter").upper(), answer[letter.end() :]
        joined = _JOINED_LETTER.match(rest)
        if (
            joined
            and (joined.group("letter").isupper() or letter.group("letter").islower())
            and not _is_negated(rest, joined.start("letter"), joined.end())
        ):
            return _several(_unique([chosen, joined.group("letter").upper()]))
        if chosen not in choices.texts:
            return _not_an_option(chosen, choices)
        if _names_another_text(rest, chosen, choices):
            return _undecided(f"letter and option text disagree in '{said}'")
        return _decided(chosen, f"{label} '{said}'")

    named = _unique(m.letter for m in _text_mentions(answer, choices) if not m.negated)
    if len(named) == 1:
        return _decided(named[0], f"{label} '{said}'")
    return _several(named) if named else None


def _answer_letter(answer: str, choices: _Choices) -> re.Match[str] | None:
    """The option letter that ``answer`` (what follows a cue) starts with, if it starts with one."""
    m = _LEADING_LETTER.match(answer)
    if m is None or _reads_as_word(answer, m):
        return None
    if _GLUED.match(answer, m.end()) and any(p.match(answer) for _, p in choices.patterns):
        return None  # "B是…" where an option's text starts so: the option's text wins over letter B
    if m.group("letter").islower():
        # A lower-case letter is the answer in a letter form only — "(b)", "b)", "b.", "b:", "b," or the letter
        # alone — ("the answer is a cat" has the article), and only when it is an option's letter.
        after = answer[m.end() : m.end() + 1]
        if not (m.group("close") or after in (".", ":", ",") or not answer[m.end() :].strip()):
            return None
        if m.group("letter").upper() not in choices.texts:
            return None
    return m


def _first_clause(text: str) -> str:
    end = _CLAUSE_END.search(text)
    return text[: end.start()] if end else text


def _names_another_text(rest: str, letter: str, choices: _Choices) -> bool:
    """ "A. dog" when option A is "cat": the letter and the text that follows it disagree."""
    at = _end_of(_AFTER_LETTER.match(rest))
    own = dict(choices.patterns).get(letter)
    if own is not None and own.match(rest, at):
        return False
    return any(k != letter and p.match(rest, at) for k, p in choices.patterns)


def _answer_statement(text: str, choices: _Choices) -> Extraction | None:
    """The last answer statement that names something, read as an extraction (decided or not)."""
    # (position, kind, match): "cue" is followed by the answer, "stated" names the letter itself.
    cues: list[tuple[int, str, re.Match[str] | tuple[int, int]]] = []
    cues += [(m.start(), "cue", m) for m in _ANSWER_CUE.finditer(text)]
    cues += [(m.start("letter"), "stated", m) for m in _CONCLUSION.finditer(text)]
    cues += [(m.start("letter"), "stated", m) for m in _CORRECTION.finditer(text)]
    cues += [
        (m.start(), "stated", m)
        for m in _VERDICT.finditer(text)
        if not _HYPOTHETICAL.search(text, max(0, m.start() - _CONTEXT), m.start())
    ]
    lines = [line for line in text.strip().splitlines() if line.strip()]
    lead = _LEADING_LINE.match(lines[0]) if lines else None
    if (
        lead
        # "A. cat B. dog" on one line is a list (a lower-case letter form is not among the capitals counted)
        and len(_letter_mentions(_first_clause(lines[0]))) + lead.group(0).islower() == 1
        and not any(_LEADING_LINE.match(line) for line in lines[1:])
    ):
        first = text.index(lines[0])
        cues.append((first - 1, "first line", (first, first + len(lines[0]))))  # read like a cue's tail

    for _, kind, cue in sorted(cues, key=lambda c: c[0], reverse=True):
        if isinstance(cue, tuple):  # "first line": the span of the line read as a cue's tail
            result = _read_answer(text[: cue[1]], cue[0], choices, cue[0], label="letter form")
        elif kind == "stated":
            letter = cue.group("letter").strip("()[]").upper()
            if letter not in choices.texts:
                return _not_an_option(letter, choices)
            return _decided(letter, f"answer statement '{_quote(cue.group(0))}'")
        else:
            result = _read_answer(text, cue.end(), choices, cue.start())
        if result is not None:
            return result
    return None


# --- Refusals ---------------------------------------------------------------------------------------------

_REFUSAL = _Pattern(
    r"""
      \b(?:cannot|can\s*not|can['’]t|could\s+not|couldn['’]t|unable\s+to|not\s+able\s+to|impossible\s+to
         |not\s+possible\s+to|no\s+way\s+to)
        \s+(?:be\s+)?(?:answer(?:ed)?|determined?|tell|say|decided?|identif(?:y|ied)|know|judged?|inferr?e?d?
         |confirmed?|choose|select|assist|help)\b
    | \bI['’]?m\s+sorry\b | \bsorry,?\s+(?:but\s+)?I\b | \bI\s+apologi[sz]e\b
    | \bnone\s+of\s+(?:the\s+)?(?:given\s+|provided\s+|listed\s+)?(?:options|choices|answers|above)\b
    | \bno\s+(?:correct|right|valid|suitable|matching)\s+(?:answer|option|choice)s?\b
    | \b(?:not\s+enough|insufficient)\s+information\b
    | 无法(?:确定|回答|判断|得知|识别|确认|选择|看出|看清) | 不能(?:确定|回答|判断) | 都不(?:是|对|正确) | 以上都不
    | 没有正确 | 抱歉
    """,
    re.I | re.X,
)


# --- The extractor ----------------------------------------------------------------------------------------


# A lower-case letter in a letter form in running text: "(b)", "b." or "b)" ending a sentence, "b -" at a line's
# start. Not read as an answer (lower-case letters are words there), but a human would hesitate when it names
# another option than the rest of the response ("A? No. b.").
_LOWER_FORM = _Pattern(
    r"(?<![^\s(\[])(?:[(\[](?P<bracketed>[a-z])[)\]]|(?P<letter>[a-z])(?=[.)][ \t]*(?:$|\n))|"
    r"(?<=^)(?P<dashed>[a-z])(?=[ \t]*[-–—][ \t]))",
    re.M,
)


def _from_mentions(mentions: list[_Mention], choices: _Choices, text: str = "") -> Extraction:
    positive = [m for m in mentions if not m.negated]
    named = _unique(m.letter for m in positive if m.letter in choices.texts)
    lower = _unique(
        letter.upper()
        for m in _LOWER_FORM.finditer(text)
        if (letter := m.group(m.lastgroup or 0)).upper() in choices.texts
    )
    if len(named) == 1 and any(letter != named[0] for letter in lower):
        return _undecided(f"lower-case letter form names another option: {', '.join(lower)}")
    foreign = _unique(m.letter for m in positive if m.letter not in choices.texts)
    if foreign and named:
        return _undecided("letters outside the options also named: " + ", ".join(foreign))
    if foreign:
        return _not_an_option(foreign[0], choices)
    if len(named) > 1:
        return _several(named)
    if named:
        # Prefer quoting the letter form ("(B)") over the option text when both are present.
        best = min((m for m in positive if m.letter == named[0]), key=lambda m: (m.kind != "letter", m.start))
        if best.kind == "letter":
            return _decided(named[0], f"letter form '{best.form}'")
        return _decided(named[0], f"option text '{_quote(best.form)}'")
    if mentions:
        return _undecided("options named only to be ruled out")
    return _undecided("no option named")


def extract_by_rules(response: str, options: Mapping[str, str]) -> Extraction:
    """Which option ``response`` chose, by rules; undecided unless it clearly names exactly one option."""
    choices = _Choices.of(options)
    found = _extract(response, choices)
    if found.choice is None or found.choice == REFUSAL:
        return found
    return Extraction(choices.keys[found.choice], found.stage, found.reason)  # in the caller's spelling


def _extract(response: str, choices: _Choices) -> Extraction:
    text = _normalise(response or "")
    if not text.strip():
        return _undecided("empty response")
    if choices.letters_are_texts():
        return _undecided("option texts are option letters too, so a letter is ambiguous")

    exact = choices.exact(text)
    if exact is not None:
        return _decided(exact, f"option text '{_quote(choices.texts[exact])}'")
    lone = _LONE_LETTER.fullmatch(text.strip())
    if lone is not None:
        letter = lone["letter"].upper()
        if letter not in choices.texts:
            return _not_an_option(letter, choices)
        return _decided(letter, f"letter form '{lone[0]}'")

    statement = _answer_statement(text, choices)
    if statement is not None and statement.choice is not None:
        return statement

    texts = _text_mentions(text, choices)
    masked = _mask(text, texts)  # refusal phrases inside an option's text ("None of the above") don't count
    mentions = texts + _letter_mentions(text, masked)
    if _REFUSAL.search(masked):
        named = _unique(m.letter for m in mentions if not m.negated and m.letter in choices.texts)
        if len(named) == 1:
            return _undecided(f"refusal, yet option {named[0]} named")
        return Extraction(REFUSAL, "rules", "refusal")
    if statement is not None:
        return statement  # an answer statement that names several options or a letter that is no option
    return _from_mentions(mentions, choices, masked)
