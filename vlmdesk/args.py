"""argparse types that bound every number at the door: a value out of range is argparse's one-line error
(exit 2), never an OverflowError deep inside, and never a value stored in a run. The ranges are the ones the
workspace can hold (db/runs.py)."""

from __future__ import annotations

import argparse
import math

from db.runs import COUNT_MAX, ID_MAX, ROUNDS_MAX, SEED_MAX, SPEC_MAX

_MAX_DIGITS = 30  # longer than any number in range; int() of a huge text is slow


def int_in(low: int, high: int, what: str = "a whole number"):
    """A type accepting whole numbers in [low, high]."""

    def parse(text: str) -> int:
        text = text.strip()
        try:
            if len(text) > _MAX_DIGITS:
                raise ValueError
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:_MAX_DIGITS]!r} is not {what}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        if value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high}, got {value}")
        return value

    parse.__name__ = what  # argparse names the type in some messages
    return parse


def float_in(low: float, high: float, what: str = "a number"):
    """A type accepting finite numbers in [low, high]."""

    def parse(text: str) -> float:
        try:
            value = float(text[:64])
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:30]!r} is not {what}") from None
        if not math.isfinite(value) or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low:g} and {high:g}, got {text[:30]}")
        return value

    parse.__name__ = what
    return parse


positive_int = int_in(1, COUNT_MAX, "a whole number")
"""Counts that must be at least 1 (--limit, --batch-size, --max-new-tokens, --size…), at most COUNT_MAX."""
count = positive_int
record_id = int_in(1, ID_MAX, "an id (a whole number)")
"""Run ids, item ids: what SQLite can hold."""
seed = int_in(0, SEED_MAX, "a seed (a whole number)")


def record_ids(text: str) -> list[int]:
    """A comma-separated list of ids (--runs 1,2,3), each as record_id takes it."""
    if len(text) > 10_000:
        raise argparse.ArgumentTypeError("more than 10,000 characters of ids")
    return [record_id(part) for part in text.split(",") if part.strip()] or _no_ids()


def _no_ids() -> list[int]:
    raise argparse.ArgumentTypeError("no id given")


rounds = int_in(1, ROUNDS_MAX, "a number of rounds")
"""--rounds of a multi-turn run."""


def model_spec(text: str) -> str:
    """A model spec argument (--multi-turn): 1..SPEC_MAX characters; the backend registry reads it later."""
    text = text.strip()
    if not 0 < len(text) <= SPEC_MAX:
        raise argparse.ArgumentTypeError(f"a model spec has 1..{SPEC_MAX} characters")
    return text


model_spec.__name__ = "a model spec"


class Parser(argparse.ArgumentParser):
    """argparse's parser with the project's one-line errors: `error: vlmdesk run: argument --limit: …`, exit 2
    (argparse would print the whole usage first). Subcommand parsers inherit it."""

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {' '.join(message.split())} (see: {self.prog} --help)\n")


def annotator(text: str) -> str:
    """A person's name (--annotator, --adjudicator): annotation/names.py's rule, the one every stored name follows."""
    from annotation.names import BadName, annotator_name

    try:
        return annotator_name(text)
    except BadName as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


annotator.__name__ = "a name"


def checked(check, what: str):
    """A type accepting a text that `check(text)` returns as a value (raising InvalidInput with the reason)."""
    from db.errors import InvalidInput

    def parse(text: str):
        try:
            return check(text[:200])
        except InvalidInput as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = what
    return parse
