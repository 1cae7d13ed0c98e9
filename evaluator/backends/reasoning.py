"""A thinking model's thought apart from its answer: the one rule (issue 36, docs/adr/0051).

A run's reasoning setting names how: ``auto`` (the default) takes the thought a server gives apart
(``reasoning_content`` / ``reasoning``) and splits one written inline between ``<think>`` and ``</think>`` — or
before a lone ``</think>``, as models whose chat template opens the thought in the prompt write it; ``off`` keeps the
text whole as the answer (a server's separate thought is still kept apart: it never was the answer); ``OPEN,CLOSE``
splits another tag pair (e.g. Kimi-VL's ``◁think▷,◁/think▷``). What is split off is never read as the answer: the
extractors, judges, metrics and every blind view read the answer only.
"""

from __future__ import annotations

from evaluator.backends.base import Generation

AUTO = "auto"
OFF = "off"
DEFAULT_TAGS = ("<think>", "</think>")
MAX_TAG = 40  # characters of a tag


def tags_of(rule: str) -> tuple[str, str] | None:
    """The tag pair a reasoning rule splits at (None for ``off``); ValueError naming what is wrong."""
    if rule == AUTO:
        return DEFAULT_TAGS
    if rule == OFF:
        return None
    opening, comma, closing = rule.partition(",")
    opening, closing = opening.strip(), closing.strip()
    if not comma or not opening or not closing or "," in closing:
        raise ValueError(f"reasoning: expected auto, off or OPEN,CLOSE (two tags), got {rule[:60]!r}")
    if len(opening) > MAX_TAG or len(closing) > MAX_TAG or opening == closing:
        raise ValueError(f"reasoning: the two tags must differ and be at most {MAX_TAG} characters each")
    return opening, closing


def check_rule(rule: object) -> str | None:
    """What is wrong with a stored reasoning rule, or None."""
    if not isinstance(rule, str):
        return f"reasoning: {str(rule)[:40]!r} is not text"
    try:
        tags_of(rule)
    except ValueError as exc:
        return str(exc)
    return None


def split(said: Generation, rule: str = AUTO) -> Generation:
    """The generation with its inline thought split off the text by `rule` (a server's own thought kept, first).

    The thought ends at the last closing tag; an opening tag counts only where the text starts with it (a model
    quoting "<think>" in its answer is not thinking). A text that opens a thought and never closes it is all thought:
    the answer is empty (the budget ended it inside the thought when finish_reason is "length"). An empty thought
    (``<think></think>``, a thinking model asked not to think) is no thought."""
    tags = tags_of(rule)
    text, thoughts = said.text, [said.thought or ""]
    if tags is not None:
        opening, closing = tags
        head = text.lstrip()
        at = text.rfind(closing)
        if at >= 0:
            inline = text[:at].strip()
            thoughts.append(inline.removeprefix(opening).strip())
            text = text[at + len(closing) :].strip()
        elif head.startswith(opening):
            thoughts.append(head[len(opening) :].strip())
            text = ""
    thought = "\n\n".join(t for t in thoughts if t) or None
    if text == said.text and thought == said.thought:
        return said
    return Generation(text, thought, said.finish_reason, said.usage)


def cut_in_thought(said: Generation) -> bool:
    """The token budget ended a generation (after `split`) inside its thought: a thought and no answer at all."""
    return said.finish_reason == "length" and not said.text.strip() and bool(said.thought)
