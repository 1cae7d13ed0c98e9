"""Choice extraction, step 2: an LLM reads which option a response means — and the `Extractor` interface.

Extractor specs: ``rules`` (evaluator.scoring.extraction), ``llm:<model spec>`` (every response goes to the LLM) and
``rules+llm:<model spec>`` (MMBench's pipeline: the LLM only where the rules are undecided). The model spec is
any backend spec (``openai:gpt-4o-mini``, ``openai:qwen2.5-7b@http://localhost:8000/v1``, ``hf:./text-model``).

The LLM's reply is parsed strictly: one option letter or Z, optionally wrapped in quotes, brackets, markdown
emphasis or followed by a full stop — nothing else. Any other reply is asked again with a reminder; after the last
attempt the response stays undecided (stage ``none``). There is never a random fallback.

LLM results (undecided ones included: a deterministic extractor would say the same again) are cached in the
workspace by sha256(extractor, prompt version, question, options, response), so re-scoring never pays twice. A
backend error (server down, 4xx) is not a result: it is raised and nothing is cached for the failed chunk.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from db import extractions as store
from db.errors import InvalidInput
from db.workspace import Workspace
from evaluator.backends import Backend, BackendError, Query, load_backend
from evaluator.backends.base import texts_of
from evaluator.backends.secrets import check_no_secret
from evaluator.registry import Field, Registry
from evaluator.scoring.extraction import REFUSAL, Extraction, extract_by_rules
from evaluator.scoring.language import language_of

PROMPT_VERSION = 1
ATTEMPTS = 3  # the first ask and two reminders
MAX_NEW_TOKENS = 8
CHUNK = 64  # prompts per backend call; each chunk's results are cached before the next is sent

ExtractionInput = tuple[str, Mapping[str, str], str]  # (question, options letter → text, response)

PROMPTS = {
    "en": (
        "You read a model's answer to a multiple-choice question and report which option the answer chose.\n"
        "Judge only what the answer literally says: the option it names or whose content it states. Do not solve "
        "the question yourself and do not judge whether the answer is right.\n"
        "If the answer chooses none of the options, several of them, refuses, or cannot be matched to exactly one "
        "option, reply Z.\n"
        "Reply with a single letter: {letters} or Z. Nothing else.\n\n"
        "Question: {question}\n"
        "Options:\n{options}\n"
        "Answer: {response}\n"
        "Your reply (one letter):"
    ),
    "zh": (
        "你将阅读一个模型对选择题的回答，并指出该回答选择了哪个选项。\n"
        "只按回答的字面内容判断：它说出的选项，或它所陈述的内容对应的选项。不要自己解题，也不要判断回答是否正确。\n"
        "如果回答没有选择任何选项、选择了多个选项、拒绝回答，或无法对应到唯一一个选项，请回复 Z。\n"
        "只回复一个字母：{letters} 或 Z，不要有其他内容。\n\n"
        "问题：{question}\n"
        "选项：\n{options}\n"
        "回答：{response}\n"
        "你的回复（一个字母）："
    ),
}
REMINDERS = {
    "en": "\n(Your previous reply was not a single letter. Reply with exactly one letter: {letters} or Z.)",
    "zh": "\n（你上一次的回复不是单个字母。请只回复一个字母：{letters} 或 Z。）",
}
_SEPARATORS = {"en": ", ", "zh": "、"}


def render_prompt(
    question: str, options: Mapping[str, str], response: str, *, language: str | None = None, reminder: bool = False
) -> str:
    """The extractor prompt; Chinese when the question or options are Chinese (or ``language='zh'``)."""
    lang = language or language_of(question + "".join(options.values()))
    lang = lang if lang in PROMPTS else "en"
    letters = _SEPARATORS[lang].join(sorted(options))
    text = PROMPTS[lang].format(
        letters=letters,
        question=question.strip(),
        response=response.strip(),
        options="\n".join(f"{k}. {options[k]}" for k in sorted(options)),
    )
    return text + (REMINDERS[lang].format(letters=letters) if reminder else "")


_REPLY = re.compile(r"^[\s\"'`*_(\[{<「【]*([A-Z])[\s\"'`*_)\]}>」】.。]*$")


def parse_reply(reply: str, letters: Sequence[str]) -> str | None:
    """The letter a reply gives, if it is exactly one of ``letters`` or Z (decoration aside); else None."""
    match = _REPLY.match(unicodedata.normalize("NFKC", reply or ""))
    if match is None:
        return None
    letter = match.group(1)
    return letter if letter in letters or letter == REFUSAL else None


def input_key(extractor: str, question: str, options: Mapping[str, str], response: str) -> str:
    """The cache key of one extraction input under one extractor (and prompt version)."""
    payload = [extractor, PROMPT_VERSION, question, sorted(options.items()), response]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode()).hexdigest()


@runtime_checkable
class Extractor(Protocol):
    """Reads which option each response chose. ``name`` is the spec that identifies it in runs and scorings."""

    name: str

    def extract_many(self, inputs: Sequence[ExtractionInput]) -> list[Extraction]: ...


class RulesExtractor:
    name = "rules"

    def extract_many(self, inputs: Sequence[ExtractionInput]) -> list[Extraction]:
        return [extract_by_rules(response, options) for _, options, response in inputs]


class LLMExtractor:
    """Asks a model, with the vlmdesk prompt; strict parsing, reminders, cache."""

    def __init__(
        self,
        backend: Backend,
        *,
        ws: Workspace | None = None,
        attempts: int = ATTEMPTS,
        max_new_tokens: int = MAX_NEW_TOKENS,
        chunk: int = CHUNK,
    ):
        if attempts < 1:
            raise ValueError("attempts must be at least 1")
        self.backend, self.ws, self.attempts = backend, ws, attempts
        self.max_new_tokens, self.chunk = max_new_tokens, max(1, chunk)
        self.name = f"llm:{backend.spec}"

    def extract_many(self, inputs: Sequence[ExtractionInput]) -> list[Extraction]:
        keys = [input_key(self.name, q, o, r) for q, o, r in inputs]
        found = store.cached(self.ws, keys) if self.ws is not None else {}
        todo: dict[str, ExtractionInput] = {}
        for key, item in zip(keys, inputs):
            if key not in found:
                todo.setdefault(key, item)  # the same input twice in one call is asked once
        pending = list(todo.items())
        for start in range(0, len(pending), self.chunk):
            chunk = pending[start : start + self.chunk]
            answered = self._ask([item for _, item in chunk])
            entries = [
                store.CachedExtraction(key, self.name, e.choice, e.stage, e.reason, raw, len(raw))
                for (key, _), (e, raw) in zip(chunk, answered)
            ]
            if self.ws is not None:
                store.store(self.ws, entries)
            found.update({e.key: e for e in entries})
        return [Extraction(found[k].choice, found[k].stage, found[k].reason) for k in keys]

    def _ask(self, inputs: list[ExtractionInput]) -> list[tuple[Extraction, tuple[str, ...]]]:
        replies: list[list[str]] = [[] for _ in inputs]
        decided: dict[int, str] = {}
        open_ = list(range(len(inputs)))
        for attempt in range(self.attempts):
            if not open_:
                break
            queries = []
            for i in open_:
                question, options, response = inputs[i]
                queries.append(
                    Query(
                        prompt=render_prompt(question, options, response, reminder=attempt > 0),
                        letters=(*sorted(options), REFUSAL),
                    )
                )
            texts = texts_of(self.backend.generate(queries, self.max_new_tokens))
            if len(texts) != len(queries):
                raise BackendError(f"{self.backend.spec}: {len(texts)} replies to {len(queries)} prompts")
            still = []
            for i, text in zip(open_, texts):
                replies[i].append(text)
                letter = parse_reply(text, tuple(inputs[i][1]))
                if letter is None:
                    still.append(i)
                else:
                    decided[i] = letter
            open_ = still
        out = []
        for i, raw in enumerate(replies):
            if i in decided:
                what = "none of the options" if decided[i] == REFUSAL else f"option {decided[i]}"
                out.append((Extraction(decided[i], "llm", f"llm replied {_quote(raw[-1])}: {what}"), tuple(raw)))
            else:
                out.append(
                    (
                        Extraction(
                            None,
                            "none",
                            f"llm gave no single option letter in {len(raw)} attempt"
                            f"{'s' if len(raw) != 1 else ''} (last reply {_quote(raw[-1])})",
                        ),
                        tuple(raw),
                    )
                )
        return out


class RulesThenLLM:
    """MMBench's two steps: the rules decide what they can; the LLM reads only the undecided responses."""

    def __init__(self, llm: LLMExtractor):
        self.llm = llm
        self.name = f"rules+{llm.name}"

    def extract_many(self, inputs: Sequence[ExtractionInput]) -> list[Extraction]:
        first = RulesExtractor().extract_many(inputs)
        undecided = [i for i, e in enumerate(first) if e.choice is None]
        second = self.llm.extract_many([inputs[i] for i in undecided])
        out = list(first)
        for i, e in zip(undecided, second):
            out[i] = Extraction(e.choice, e.stage, f"rules: {first[i].reason}; {e.reason}")
        return out


@dataclass(frozen=True)
class ExtractorEntry:
    """An extractor as the registry knows it: the spec ``name`` or ``name:<model spec>`` (``needs_model``), its
    help, the fields of the app's form and ``build(model spec or None, workspace or None)``."""

    name: str
    syntax: str
    help: str
    build: Callable[[str | None, Workspace | None], Extractor]
    needs_model: bool = False
    fields: tuple[Field, ...] = ()


def _llm(model: str | None, ws: Workspace | None) -> LLMExtractor:
    return LLMExtractor(load_backend(model or ""), ws=ws)


_MODEL_FIELD = Field(
    "",
    "Model spec",
    required=True,
    placeholder="openai:gpt-4o-mini",
    help="the model that reads the responses (any model spec)",
)
EXTRACTORS = (
    ExtractorEntry(
        "rules",
        "rules",
        "vlmdesk's rules: letter forms, one option's text, refusals; else undecided",
        lambda model, ws: RulesExtractor(),
    ),
    ExtractorEntry(
        "llm",
        "llm:<model spec>",
        "every response read by an LLM (strict reply parsing, cached)",
        _llm,
        needs_model=True,
        fields=(_MODEL_FIELD,),
    ),
    ExtractorEntry(
        "rules+llm",
        "rules+llm:<model spec>",
        "MMBench's pipeline: the LLM only where the rules are undecided",
        lambda model, ws: RulesThenLLM(_llm(model, ws)),
        needs_model=True,
        fields=(_MODEL_FIELD,),
    ),
)
REGISTRY: Registry[ExtractorEntry] = Registry("extractor", "EXTRACTORS", builtins=(__name__,))


def extractor_help() -> str:
    return " | ".join(entry.syntax for entry in REGISTRY.help_entries())


def __getattr__(name: str) -> str:
    if name == "EXTRACTOR_HELP":  # reads the registry: computed when asked for
        return extractor_help()
    raise AttributeError(name)


def parse_extractor_spec(spec: str) -> tuple[str, str | None]:
    """(extractor name, model spec or None), e.g. ('rules', None), ('rules+llm', 'openai:gpt-4o-mini');
    InvalidInput for anything the registry does not know."""
    spec = (spec or "").strip()
    try:
        check_no_secret(spec)  # first: the spec is stored with runs and scorings, and quoted in errors below
    except BackendError as exc:
        raise InvalidInput(f"extractor: {exc}") from None
    name, sep, model = spec.partition(":")
    entry = REGISTRY.get(name)
    if entry is None or (sep and not entry.needs_model):
        raise InvalidInput(f"unknown extractor {spec[:200]!r}; expected {extractor_help()}")
    if not entry.needs_model:
        return name, None
    if not model or ":" not in model:
        raise InvalidInput(
            f"extractor {spec[:200]!r}: {name}: needs a model spec such as openai:gpt-4o-mini or hf:./text-model"
        )
    return name, model


def load_extractor(spec: str, ws: Workspace | None = None) -> Extractor:
    """Build the extractor a spec names; ``ws`` holds the LLM cache. InvalidInput / BackendError on bad specs."""
    name, model = parse_extractor_spec(spec)
    return REGISTRY[name].build(model, ws)


def _quote(text: str, limit: int = 40) -> str:
    one = " ".join((text or "").split())
    return repr(one if len(one) <= limit else one[: limit - 1] + "…")


def response_key(question: str, options: Mapping[str, str], response: str) -> str:
    """What identifies a response to read, independent of any extractor: human labels attach to this key."""
    payload = [question, sorted(options.items()), response]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode()).hexdigest()
