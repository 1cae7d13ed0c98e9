"""Multi-turn reasoning (LVLM-eHub's `Multi_turn_Reasoning`, after IdealGPT): an LLM that never sees the image
asks the evaluated model sub-questions about it, round by round, and then answers the multiple-choice question.

One pass is one dialogue:

1. the model describes the image (a fixed request: the asker's only view of the image before it asks);
2. each round, the asker lists at most MAX_SUB_QUESTIONS short sub-questions; the model answers each with the image;
3. the asker reasons over everything answered so far and gives an option letter, or "not sure", which starts the
   next round; the last round (``rounds``, default 4, at most 10) asks for an answer even when unsure.

The asker's final answer is the pass's response, read by the run's extractor like any response, so the stored choice
is the letter of the shown option. Every turn (the asker's sub-questions and reasoning, the model's answers) is
stored with the pass (`db.runs.Turn`, migration 0013). Turns are clipped to MAX_TURN_CHARS, so a pass is bounded:
at most 2 + rounds · (2 · MAX_SUB_QUESTIONS + 1) turns. The asker is any backend spec (``openai:…``, ``hf:…``),
loaded through the backend registry as the LLM extractor is; its answers are greedy (temperature 0 is the
backends' default). Dialogues of one batch advance together, so each step is one batched call per backend.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from db.runs import ROUNDS_MAX, Turn
from evaluator.backends import Backend, BackendError, Query, load_backend
from evaluator.scoring.extraction import REFUSAL, extract_by_rules

DEFAULT_ROUNDS = 4
MAX_SUB_QUESTIONS = 4  # per round, as in IdealGPT's examples
MAX_TURN_CHARS = 2000
MAX_SUB_QUESTION_CHARS = 300
ASKER_TOKENS = 200  # a list of sub-questions
REASONER_TOKENS = 400  # a paragraph of analysis and the answer line

DESCRIBE = "Describe the image in one sentence."
MODEL_PROMPT = "{question} Reply in short."  # LVLM-eHub's prompt for LLaVA-style models

_ROLE = (
    "You answer a multiple-choice question about an image that you cannot see. A visual assistant that sees the "
    "image answers short questions about it; its answers may be imprecise.\n"
)
ASK_FIRST = (
    _ROLE + "Break the main question into at most {n} short sub-questions about the image whose answers would show "
    "which option is right. Each sub-question must stand on its own (never refer to another one).\n"
    "Reply with the list only, one per line:\nSub-question 1: ...?\nSub-question 2: ...?\n\n{context}"
)
ASK_MORE = (
    _ROLE + "The sub-questions asked so far did not settle the main question. Ask at most {n} further short "
    "sub-questions about the image that would; do not repeat a question already asked. Each sub-question must stand "
    "on its own.\nReply with the list only, one per line:\nSub-question 1: ...?\nSub-question 2: ...?\n\n{context}"
    "\nYour analysis so far: {analysis}\n"
)
REASON = (
    _ROLE + "From the sub-questions and the assistant's answers, choose the option that is most likely right.\n"
    'First reason in one paragraph starting with "Analysis:". Then, on a line of its own, give the letter of the '
    'option as "Answer: <letter>". {unsure}\n\n{context}'
)
UNSURE_CONTINUE = 'If the answers do not yet tell which option is right, write "Answer: not sure" instead.'
UNSURE_FORCED = 'Even if you are unsure, give the most likely option\'s letter; do not answer "not sure".'

_SUB_QUESTION = re.compile(r"sub-?question[^:\n]{0,6}:[ \t]*(.+)", re.IGNORECASE)
_NUMBERED = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s*")
_ANSWER_LINE = re.compile(r"^[\W_]*(?:more likely |final )?answer\s*[:：]\s*(.*)$", re.IGNORECASE | re.MULTILINE)
_ANALYSIS = re.compile(r"analysis\s*:\s*(.*)", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class Question:
    """One pass as the dialogue sees it: the question, its hint, the options as shown (letter → text) and the image
    (none when the run is text-only)."""

    question: str
    hint: str | None
    options: Mapping[str, str]
    images: tuple[bytes, ...] = ()


@dataclass(frozen=True)
class Dialogue:
    """A finished dialogue: the asker's final answer (what the run's extractor reads), every turn, and how many
    rounds of sub-questions it took."""

    response: str
    turns: tuple[Turn, ...]
    rounds: int


@dataclass
class _Open:
    question: Question
    turns: list[Turn] = field(default_factory=list)
    description: str = ""
    asked: list[tuple[str, str]] = field(default_factory=list)  # (sub-question, the model's answer)
    analysis: str = ""
    response: str | None = None
    rounds: int = 0

    def say(self, role: str, text: str) -> str:
        clipped = clip(text)
        self.turns.append(Turn("asker" if role == "asker" else "model", clipped))
        return clipped


def clip(text: str, limit: int = MAX_TURN_CHARS) -> str:
    text = (text or "").strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def context(d: _Open) -> str:
    """What the asker knows: the model's description, the question and options, the answers so far."""
    q = d.question
    lines = [f"Image description (imperfect): {_one_line(d.description) or '(none)'}"]
    if q.hint:
        lines.append(f"Hint: {_one_line(q.hint)}")
    lines.append(f"Main question: {_one_line(q.question)}")
    lines.append("Options:")
    lines += [f"{letter}. {_one_line(text)}" for letter, text in q.options.items()]
    if d.asked:
        lines.append("Sub-questions and the assistant's answers:")
        lines += [f"Q: {sub} A: {_one_line(answer)}" for sub, answer in d.asked]
    return "\n".join(lines) + "\n"


def asker_prompt(d: _Open) -> str:
    if not d.asked and not d.analysis:
        return ASK_FIRST.format(n=MAX_SUB_QUESTIONS, context=context(d))
    return ASK_MORE.format(n=MAX_SUB_QUESTIONS, context=context(d), analysis=_one_line(d.analysis) or "(none)")


def reasoner_prompt(d: _Open, *, final: bool) -> str:
    return REASON.format(unsure=UNSURE_FORCED if final else UNSURE_CONTINUE, context=context(d))


def sub_questions(reply: str, asked: Sequence[str] = ()) -> list[str]:
    """The sub-questions of an asker's reply ("Sub-question 1: …" lines; else lines ending in "?"), new ones only,
    at most MAX_SUB_QUESTIONS, each clipped."""
    found = [m.group(1) for m in _SUB_QUESTION.finditer(reply or "")]
    if not found:
        found = [_NUMBERED.sub("", line) for line in (reply or "").splitlines() if line.strip().endswith("?")]
    out: list[str] = []
    seen = {_one_line(a).casefold() for a in asked}
    for text in found:
        text = clip(_one_line(text), MAX_SUB_QUESTION_CHARS)
        if text and text.casefold() not in seen:
            seen.add(text.casefold())
            out.append(text)
    return out[:MAX_SUB_QUESTIONS]


def read_reasoning(reply: str) -> tuple[str, str | None]:
    """(the analysis, the text after the last "Answer:" line or None when there is no such line)."""
    answers = _ANSWER_LINE.findall(reply or "")
    answer = answers[-1].strip() if answers else None
    analysis = _ANALYSIS.search(reply or "")
    text = analysis.group(1) if analysis else (reply or "")
    return clip(_ANSWER_LINE.sub("", text).strip(), 1000), answer


def committed(answer: str | None, options: Mapping[str, str]) -> bool:
    """Whether an answer line names one option (by the rules extractor: one home for reading a letter); "not sure",
    a refusal or anything unreadable lets the dialogue go on."""
    if answer is None or "not sure" in answer.casefold():
        return False
    choice = extract_by_rules(answer, options).choice
    return choice is not None and choice != REFUSAL


class MultiTurn:
    """Runs the dialogues of a batch of passes between an asking LLM and the evaluated model."""

    def __init__(self, asker: Backend, rounds: int = DEFAULT_ROUNDS):
        if not 1 <= rounds <= ROUNDS_MAX:
            raise ValueError(f"rounds must be in 1..{ROUNDS_MAX}")
        self.asker, self.rounds = asker, rounds

    def converse(self, model: Backend, questions: Sequence[Question], max_new_tokens: int) -> list[Dialogue]:
        dialogues = [_Open(q) for q in questions]
        described = _generate(model, [Query(DESCRIBE, q.images) for q in questions], max_new_tokens)
        for d, text in zip(dialogues, described):
            d.say("asker", DESCRIBE)
            d.description = d.say("model", text)
        for r in range(1, self.rounds + 1):
            going = [d for d in dialogues if d.response is None]
            listings = _generate(self.asker, [Query(asker_prompt(d)) for d in going], ASKER_TOKENS)
            asked = [
                (d, sub)
                for d, listing in zip(going, listings)
                for sub in sub_questions(listing, [question for question, _ in d.asked])
            ]
            answers = _generate(
                model,
                [Query(MODEL_PROMPT.format(question=sub), d.question.images) for d, sub in asked],
                max_new_tokens,
            )
            for (d, sub), answer in zip(asked, answers):
                d.say("asker", sub)
                d.asked.append((sub, d.say("model", answer)))
            final = r == self.rounds
            replies = _generate(self.asker, [Query(reasoner_prompt(d, final=final)) for d in going], REASONER_TOKENS)
            for d, reply in zip(going, replies):
                d.rounds = r
                analysis, final_answer = read_reasoning(d.say("asker", reply))
                if final or committed(final_answer, d.question.options):
                    d.response = clip(final_answer if final_answer is not None else reply)
                else:
                    d.analysis = analysis
        return [Dialogue(d.response or "", tuple(d.turns), d.rounds) for d in dialogues]


def _generate(backend: Backend, queries: list[Query], max_new_tokens: int) -> list[str]:
    if not queries:
        return []
    texts = backend.generate(queries, max_new_tokens)
    if len(texts) != len(queries):
        raise BackendError(f"{backend.spec}: {len(texts)} replies to {len(queries)} prompts")
    return [t if isinstance(t, str) else "" for t in texts]


def load_multi_turn(spec: str, rounds: int = DEFAULT_ROUNDS) -> MultiTurn:
    """The dialogue runner whose asker the backend spec names (BackendError when it cannot be loaded)."""
    return MultiTurn(load_backend(spec), rounds)
