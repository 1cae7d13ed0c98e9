"""What a "wrong answer key" verdict must name: the one rule that Review and the Conflicts page (and anything else
that records such a verdict) check before writing it."""

from __future__ import annotations


def wrong_key_problem(answer_key: str | None, corrected: str | None, *, key_shown: bool = True) -> str | None:
    """Why `corrected` cannot be the right answer of a wrong-key verdict on an item keyed `answer_key`, or None.

    A wrong-key verdict that names the current key says nothing (the tester found "wrong key → A" saved on an item
    keyed A): it must pick another option. Yes/no answers compare without case. While the key is hidden from the
    annotator (blind mode) it is not compared: a refusal would name the key, and pressing each option in turn would
    find it. The verdict is then recorded as said: the annotator's own answer, which agrees with the key or not."""
    if not corrected:
        return "pick the right option first"
    if key_shown and names_the_key(answer_key, corrected):
        return f"{corrected} is already the answer key: use OK, or pick another option"
    return None


def names_the_key(answer_key: str | None, corrected: str | None) -> bool:
    """Does a wrong-key verdict's right answer name the current key itself? Refused while the key shows; recorded
    as said while it is hidden, and then, once the item is revealed, Review says so and offers the correction."""
    return bool(corrected and answer_key and corrected.strip().lower() == answer_key.strip().lower())
