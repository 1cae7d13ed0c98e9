"""Prompt templates. MMBench style by default; the template used is stored with every run.

A template is a `str.format` text with the fields {hint} (a "Hint: …" line, or nothing), {question}, {options}
("A. text" lines) and {letters} ("A, B, C"). A template file is either plain text (used for every language) or a
JSON object {"en": "...", "zh": "..."}.
"""
from __future__ import annotations

import json
import string
from dataclasses import dataclass
from pathlib import Path

FIELDS = {"hint", "question", "options", "letters"}

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
HINT_PREFIX = {"en": "Hint: ", "zh": "提示: "}


@dataclass(frozen=True)
class PromptTemplate:
    by_language: dict

    def render(self, *, question: str, hint: str | None, options: tuple[str, ...], language: str) -> str:
        text = self.by_language.get(language) or self.by_language["en"]
        letters = string.ascii_uppercase[: len(options)]
        prefix = HINT_PREFIX.get(language, HINT_PREFIX["en"])
        return text.format(
            hint=f"{prefix}{hint}\n" if hint else "",
            question=question,
            options="\n".join(f"{letter}. {option}" for letter, option in zip(letters, options)),
            letters=", ".join(letters),
        )

    def to_json(self) -> str:
        return json.dumps(self.by_language, ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "PromptTemplate":
        return cls(json.loads(text))


def default_template(kind: str) -> PromptTemplate:
    return PromptTemplate(dict(MCQ_DEFAULT if kind == "mcq" else YESNO_DEFAULT))


def load_template(path: str | Path, kind: str) -> PromptTemplate:
    """Read a user's template file; raises ValueError naming the problem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read prompt template ({exc.strerror})") from None
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
        try:
            used = {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
        except ValueError as exc:
            raise ValueError(f"{path}: {language} template: {exc}") from None
        unknown = used - FIELDS
        if unknown:
            raise ValueError(f"{path}: {language} template: unknown field(s) {', '.join(sorted(unknown))} "
                             f"(use {', '.join(sorted(FIELDS))})")
        if "question" not in used or (kind == "mcq" and "options" not in used):
            needed = "{question} and {options}" if kind == "mcq" else "{question}"
            raise ValueError(f"{path}: {language} template must contain {needed}")
    return PromptTemplate(by_language)
