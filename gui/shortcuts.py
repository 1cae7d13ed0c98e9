"""The keyboard map of the review view: one table, checked for duplicates by a test, shown in the help overlay."""

from __future__ import annotations

from dataclasses import dataclass

from annotation.item_kinds import KINDS, VERDICTS_BY_KIND, ItemKind, kind_words
from evaluator.scoring.choices import LETTERS


@dataclass(frozen=True)
class Shortcut:
    action: str  # what the view does: "verdict:ok", "pick:2", "next", ...
    keys: tuple[str, ...]  # QKeySequence strings
    text: str  # what the help overlay says
    group: str


VERDICT_KEYS = (
    ("ok", "O", "OK — the item is fine"),
    ("wrong_answer", "W", "Wrong answer key — then the right answer (below, by kind)"),
    ("ambiguous", "U", "Ambiguous / unclear question or options"),
    ("incomplete", "R", "References incomplete — a right answer is missing (open items)"),
    ("text_answerable", "T", "Answerable from the text alone"),
    ("bad_image", "I", "Bad image (unreadable, wrong, missing)"),
    ("skip", "S", "Skip — no opinion"),
)

VERDICT_BUTTONS = {
    "ok": "OK",
    "wrong_answer": "Wrong key",
    "ambiguous": "Ambiguous",
    "incomplete": "Refs incomplete",
    "text_answerable": "Text-answerable",
    "bad_image": "Bad image",
    "skip": "Skip",
}
"""Short button captions of the verdicts (Review, Conflicts)."""


_OPEN_TEXTS = {
    "wrong_answer": "Wrong reference — then type the right answer",
    "ambiguous": "Ambiguous / unclear question",
}


def verdict_keys(kind: ItemKind) -> tuple[tuple[str, str, str], ...]:
    """(verdict, key, text) of the verdicts that fit an item of this kind (annotation/item_kinds.py), in VERDICT_KEYS'
    order; an open item's wrong key is a wrong reference, corrected by typing the answer, not by an option."""
    fit = VERDICTS_BY_KIND[kind]
    return tuple(
        (v, k, _OPEN_TEXTS.get(v, text) if kind == "open" else text) for v, k, text in VERDICT_KEYS if v in fit
    )


def verdict_places() -> list[str]:
    """The verdict buttons' places in a grid (Review, Conflicts): the verdicts every kind has first, then the others,
    in VERDICT_KEYS' order. A button keeps its place whatever the item's kind; one that does not fit leaves its place
    empty, so nothing moves under the pointer."""
    return sorted((v for v, _, _ in VERDICT_KEYS), key=lambda v: not all(v in VERDICTS_BY_KIND[k] for k in KINDS))


def verdict_button(verdict: str, kind: ItemKind) -> str:
    """A verdict's short caption on a button for an item of this kind."""
    return "Wrong ref" if kind == "open" and verdict == "wrong_answer" else VERDICT_BUTTONS[verdict]


IMAGE_MOVES = (
    Shortcut("next_image", ("]", "Alt+Right"), "Image: the item's next image (items of several)", "Image"),
    Shortcut("previous_image", ("[", "Alt+Left"), "Image: the item's previous image", "Image"),
)
"""Moving between an item's images, in Review and in Browse (the strip under the image: a click does it too). Keys
that clash with none of Review's, Browse's (↑ ↓ move its rows) or the window's; off while a text field has the focus.
[ and ] are typed with AltGr on some keyboards: Alt+← / Alt+→ work on every one."""


def image_keys_text() -> str:
    """How to move between an item's images, for a tooltip: "next: ] or Alt+Right · previous: [ or Alt+Left"."""
    nxt, prev = IMAGE_MOVES
    return f"next: {' or '.join(nxt.keys)} · previous: {' or '.join(prev.keys)}"


def review_shortcuts() -> tuple[Shortcut, ...]:
    table = [Shortcut(f"verdict:{v}", (k,), text, "Verdicts") for v, k, text in VERDICT_KEYS]
    for n in range(26):
        keys = ((str(n + 1),) if n < 9 else ()) + (f"Shift+{LETTERS[n]}",)
        table.append(Shortcut(f"pick:{n}", keys, f"Pick option {LETTERS[n]}", "Options"))
    table += [
        Shortcut("next", ("Right", "J"), "Next item", "Moving"),
        Shortcut("previous", ("Left", "K"), "Previous item", "Moving"),
        Shortcut("next_unreviewed", ("N",), "Next item nobody has reviewed", "Moving"),
        Shortcut("undo", ("Ctrl+Z",), "Undo my last verdict (and go back to it)", "Verdicts"),
        Shortcut("note", ("E",), "Write a note (Esc or Enter returns to the keys)", "Verdicts"),
        Shortcut("fit", ("F",), "Image: fit / actual pixels", "Image"),
        Shortcut("zoom_in", ("+", "="), "Image: zoom in", "Image"),
        Shortcut("zoom_out", ("-",), "Image: zoom out", "Image"),
        *IMAGE_MOVES,
        Shortcut("blind", ("B",), "Blind mode: hide / show the answer key", "View"),
        Shortcut("help", ("F1", "?"), "This help", "View"),
    ]
    return tuple(table)


_HOW_BY_KIND: dict[ItemKind, str] = {
    "mcq": "W, then the right option (1–9 / Shift+letter)",
    "yesno": "W, then 1 yes / 2 no (the key shown: W alone)",
    "open": "W or R, type the answer, Enter (Esc cancels)",
}


def kind_rows() -> list[tuple[str, str, str]]:
    """(group, keys, text): the verdict keys that fit each kind of item (annotation/item_kinds.py), and how its wrong
    key is corrected."""
    return [
        ("Verdicts by kind", " ".join(k for _, k, _ in verdict_keys(kind)), f"{kind_words(kind)}: {_HOW_BY_KIND[kind]}")
        for kind in KINDS
    ]


def help_rows() -> list[tuple[str, str, str]]:
    """(group, keys, text) for the overlay, each group once (in order of first appearance); the 26 option picks are
    shown as one line."""
    rows = [(s.group, " / ".join(s.keys), s.text) for s in review_shortcuts() if not s.action.startswith("pick:")]
    rows.insert(len(VERDICT_KEYS), ("Options", "1–9 / Shift+A–Z", "Pick an option (none on open items)"))
    rows[len(VERDICT_KEYS) + 1 : len(VERDICT_KEYS) + 1] = kind_rows()
    groups = list(dict.fromkeys(g for g, _, _ in rows))
    return sorted(rows, key=lambda row: groups.index(row[0]))  # stable: a group's rows keep their order
