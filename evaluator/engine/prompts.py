"""Prompt templates. MMBench style by default; the template used is stored with every run.

A template is a `str.format` text with the fields {hint} (a "Hint: …" line, or nothing), {question}, {options}
("A. text" lines) and {letters} ("A, B, C"). A template file is either plain text (used for every language) or a
JSON object {"en": "...", "zh": "..."}. A prompt preset (evaluator/engine/prompt_presets.py) is a template that may also
say how its hint line starts and that its language is read from the texts, as VLMEvalKit reads it.
"""

from __future__ import annotations

import json
import re
import string
from dataclasses import dataclass
from pathlib import Path

from db.errors import InvalidInput
from evaluator.scoring.choices import has_basic_cjk, letters

FIELDS = {"hint", "question", "options", "letters"}
MAX_TEMPLATE_BYTES = 64 * 1024
MAX_WIDTH = 1000  # a field's width or precision: `{question:>999999999}` would build a gigabyte prompt
# What a field of a text template may say after ':': [[fill]align][width][.precision][s]. Anything else (numeric
# types, nested fields) cannot format a text and fails only when a prompt is built, so it is refused up front.
_SPEC = re.compile(r"(?:.?[<>^])?(?P<width>\d+)?(?:\.(?P<precision>\d+))?s?", re.DOTALL)

MCQ_DEFAULT = {
    "en": "{hint}Question: {question}\nOptions:\n{options}\nAnswer with the option's letter from the given choices "
    "directly.",
    "zh": "{hint}问题: {question}\n选项:\n{options}\n请直接回答选项字母。",
}
# LLaVA-1.5's POPE prompt.
YESNO_DEFAULT = {
    "en": "{question}\nAnswer the question using a single word or phrase.",
    "zh": "{question}\n请用一个词或短语回答。",
}
# An open question is asked as it is: the free answer is what the arena compares.
OPEN_DEFAULT = {"en": "{hint}{question}", "zh": "{hint}{question}"}
HINT_PREFIX = {"en": "Hint: ", "zh": "提示: "}
# ChEF's instruction-following map sentence (src/ChEF/scenario/MMBench_dataset.py), one per option line.
MAP_SENTENCE = 'If the answer is "({letter})", you need to output "{label}".'
# With a label map the default "answer with the letter" would contradict the map sentences: it is replaced.
LABEL_INSTRUCTION = {
    "en": "Answer directly with what the options above tell you to output.",
    "zh": "请直接回答上面选项要求你输出的内容。",
}
# The default templates' direct-answer instructions: a chain-of-thought prompt replaces them (a custom template's
# own instruction stays, and the CoT instruction follows it).
DIRECT_INSTRUCTIONS = (
    "Answer with the option's letter from the given choices directly.",
    "请直接回答选项字母。",
    *LABEL_INSTRUCTION.values(),
    "Answer the question using a single word or phrase.",
    "请用一个词或短语回答。",
)


@dataclass(frozen=True)
class PromptTemplate:
    by_language: dict[str, str]
    # How a hint line starts ("" for a bare hint); None: HINT_PREFIX of the item's language.
    hint_prefix: str | None = None
    # True: the "zh" text when the hint, the question or an option holds a CJK ideograph, else "en", whatever the
    # item's language (VLMEvalKit's cn_string over the prompt it builds).
    language_from_text: bool = False

    def render(
        self,
        *,
        question: str,
        hint: str | None,
        options: tuple[str, ...],
        language: str,
        labels: tuple[str, ...] | None = None,
        option_line: str = "{letter}. {text}",
    ) -> str:
        """The prompt; with `labels` (a label map) each option line also says which label stands for its letter,
        and {letters} lists the labels. `option_line` lays out one option ("(A) text" for ChEF-scored runs)."""
        if self.language_from_text:
            language = "zh" if any(map(has_basic_cjk, (hint, question, *options))) else "en"
        text = self.by_language.get(language) or self.by_language["en"]
        shown = letters(len(options))
        prefix = HINT_PREFIX.get(language, HINT_PREFIX["en"]) if self.hint_prefix is None else self.hint_prefix
        lines = [option_line.format(letter=letter, text=option) for letter, option in zip(shown, options)]
        if labels:
            lines = [
                f"{line} {MAP_SENTENCE.format(letter=letter, label=label)}"
                for line, letter, label in zip(lines, shown, labels)
            ]
        prompt = text.format(
            hint=f"{prefix}{hint}\n" if hint else "",
            question=question,
            options="\n".join(lines),
            letters=", ".join(labels or shown),
        )
        if labels:
            for direct in DIRECT_INSTRUCTIONS[:2]:
                if prompt.endswith(direct):
                    return prompt[: -len(direct)] + LABEL_INSTRUCTION.get(language, LABEL_INSTRUCTION["en"])
        return prompt

    @staticmethod
    def with_cot(prompt: str, instruction: str, keys: str) -> str:
        """A rendered prompt asking for a chain of thought: `instruction` (with {keys}) replaces a default
        direct-answer instruction at its end, or follows the template's own text."""
        cot = instruction.format(keys=keys)
        for direct in DIRECT_INSTRUCTIONS:
            if prompt.endswith(direct):
                return prompt[: -len(direct)] + cot
        return f"{prompt}\n{cot}"

    @property
    def plain(self) -> bool:
        """Whether the template is texts only (a file's or vlmdesk's), stored as it always was."""
        return self.hint_prefix is None and not self.language_from_text

    def to_json(self) -> str:
        """What a run stores (and its identity hashes): the texts object of a plain template, as before presets
        existed; a preset's {"texts": …, "hint_prefix": …, "language_from_text": …}."""
        if self.plain:
            return json.dumps(self.by_language, ensure_ascii=False, sort_keys=True)
        return json.dumps(
            {"texts": self.by_language, "hint_prefix": self.hint_prefix, "language_from_text": self.language_from_text},
            ensure_ascii=False,
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> PromptTemplate:
        """A stored template; ValueError when it is not one (a damaged row is refused, not run)."""
        try:
            by_language = json.loads(text)
        except (TypeError, ValueError, RecursionError):
            raise InvalidInput("the stored prompt template is not readable JSON") from None
        if isinstance(by_language, dict) and isinstance(by_language.get("texts"), dict):
            return cls._preset_from(by_language)
        if (
            not isinstance(by_language, dict)
            or not by_language
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in by_language.items())
        ):
            raise InvalidInput("the stored prompt template is not an object of texts")
        for language, template in by_language.items():
            check_fields(template, f"stored {language} template")
        return cls(by_language)

    @classmethod
    def _preset_from(cls, stored: dict[str, object]) -> PromptTemplate:
        hint_prefix, from_text = stored.get("hint_prefix"), stored.get("language_from_text", False)
        if set(stored) - {"texts", "hint_prefix", "language_from_text"}:
            raise InvalidInput("the stored prompt preset has unknown keys")
        if not (hint_prefix is None or isinstance(hint_prefix, str)) or not isinstance(from_text, bool):
            raise InvalidInput("the stored prompt preset's hint_prefix or language_from_text is not readable")
        if hint_prefix is not None and len(hint_prefix) > 100:
            raise InvalidInput("the stored prompt preset's hint_prefix is longer than 100 characters")
        texts = cls.from_json(json.dumps(stored["texts"]))
        if not texts.plain:
            raise InvalidInput("the stored prompt preset's texts are not an object of texts")
        return cls(texts.by_language, hint_prefix, from_text)


def default_template(kind: str) -> PromptTemplate:
    return PromptTemplate(dict(MCQ_DEFAULT if kind == "mcq" else OPEN_DEFAULT if kind == "open" else YESNO_DEFAULT))


def load_template(path: str | Path, kind: str) -> PromptTemplate:
    """Read a user's template file; raises ValueError naming the problem."""
    path = Path(path)
    try:
        if not path.is_file():
            raise InvalidInput(f"{path}: prompt template must be a regular file")
        with open(path, "rb") as f:
            raw = f.read(MAX_TEMPLATE_BYTES + 1)
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read prompt template ({exc.strerror})") from None
    if len(raw) > MAX_TEMPLATE_BYTES:
        raise InvalidInput(f"{path}: prompt template is larger than {MAX_TEMPLATE_BYTES // 1024} KB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path}: prompt template is not UTF-8 (byte {exc.start})") from None
    by_language = None
    if text.lstrip().startswith("{"):
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError:
            loaded = None
        if isinstance(loaded, dict) and loaded and all(isinstance(v, str) for v in loaded.values()):
            by_language = loaded
    if by_language is None:
        by_language = {"en": text, "zh": text}
    by_language.setdefault("en", next(iter(by_language.values())))
    for language, template in by_language.items():
        used = check_fields(template, f"{path}: {language} template")
        if "question" not in used or (kind == "mcq" and "options" not in used):
            needed = "{question} and {options}" if kind == "mcq" else "{question}"
            raise InvalidInput(f"{path}: {language} template must contain {needed}")
    return PromptTemplate(by_language)


def check_fields(template: str, where: str) -> set[str]:
    """The fields a template uses; ValueError (starting with `where`) for an unknown field, a conversion other
    than !s / !r / !a, or a format spec that is not [[fill]align][width][.precision][s] within MAX_WIDTH."""
    used = set()
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise InvalidInput(f"{where}: {exc}") from None
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if name not in FIELDS:
            raise InvalidInput(f"{where}: unknown field {{{name[:40]}}} (use {', '.join(sorted(FIELDS))})")
        if conversion not in (None, "s", "r", "a"):
            raise InvalidInput(f"{where}: {{{name}}}: unknown conversion !{conversion}")
        match = _SPEC.fullmatch(spec or "")
        if match is None:
            raise InvalidInput(
                f"{where}: {{{name}}}: format {(spec or '')[:40]!r} is not [[fill]align][width][.precision]"
            )
        for part in ("width", "precision"):
            if match[part] is not None and (len(match[part]) > 4 or int(match[part]) > MAX_WIDTH):
                raise InvalidInput(f"{where}: {{{name}}}: {part} {match[part][:12]} is larger than {MAX_WIDTH}")
        used.add(name)
    return used
