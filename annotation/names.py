"""The one rule for a person's name (and a note) as it is stored with a verdict, label, adjudication or QC decision.

Every door that stores a name goes through `annotator_name` (reviews.add_review, alignment.add_label / adjudicate,
qc.decide, the CLI's --annotator options, and the merge of records from another copy), so a record made on one copy
always merges into another, and two spellings that Unicode says are the same name are one annotator.

- NFC, then surrounding white space (NBSP included) removed. The name is text of 1 to MAX_ANNOTATOR_CHARS
  characters after that.
- Inside a name, any space character is kept as typed (NBSP, U+3000 in CJK names): they are printable, and
  changing them would make a stored name differ from the same name coming back from another copy.
- Refused: control characters (newline, tab, NUL…), format characters that change how text is shown — the
  bidirectional overrides, embeddings and isolates (U+202A–U+202E, U+2066–U+2069), marks (U+200E/F), zero-width
  spaces — line and paragraph separators, surrogates, private-use and unassigned code points. ZWNJ and ZWJ
  (U+200C, U+200D) are allowed: Persian and Indic names need them.
"""

from __future__ import annotations

import unicodedata

from db.errors import InvalidInput
from evaluator.formats.importers.common import text_problem

MAX_ANNOTATOR_CHARS = 100
MAX_NOTE_CHARS = 10_000  # a note on a verdict, adjudication or QC decision (one line of a merge file holds it)
_JOINERS = frozenset("\u200c\u200d")


class BadName(InvalidInput):
    """A name that cannot be stored; the message says why (without the name, which may be unprintable)."""


def annotator_name(value: object) -> str:
    """The name as stored (see the module's rule); raises BadName."""
    if not isinstance(value, str):
        raise BadName(f"expected a name, got {type(value).__name__}")
    if len(value) > 4 * MAX_ANNOTATOR_CHARS:  # before normalising: NFC of a huge text is work for nothing
        raise BadName(f"longer than {MAX_ANNOTATOR_CHARS} characters")
    name = unicodedata.normalize("NFC", value).strip()
    if not name:
        raise BadName("an annotator name is required (it is empty)")
    if len(name) > MAX_ANNOTATOR_CHARS:
        raise BadName(f"longer than {MAX_ANNOTATOR_CHARS} characters ({len(name)})")
    for position, c in enumerate(name, start=1):
        if not (c.isprintable() or c in _JOINERS or unicodedata.category(c) == "Zs"):
            raise BadName(
                f"holds U+{ord(c):04X} ({unicodedata.name(c, unicodedata.category(c))}) at position "
                f"{position}; a name is one line of printable text"
            )
    return name


def record_note(value: object) -> str | None:
    """A note as a record stores it (and a merge reads it back): None, or text of at most MAX_NOTE_CHARS without a
    NUL or a lone surrogate; raises BadName (the same door as names)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadName(f"a note is text, got {type(value).__name__}")
    if len(value) > MAX_NOTE_CHARS:
        raise BadName(f"a note of {len(value)} characters; at most {MAX_NOTE_CHARS}")
    problem = text_problem(value)
    if problem:
        raise BadName(f"the note contains {problem}")
    return value
