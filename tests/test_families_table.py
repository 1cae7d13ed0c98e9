"""The families table has one source (evaluator/backends/families.py): the user guide's Models page
(docs/guide/models.md) shows it verbatim, `vlmdesk models families` prints it, and every row has a tiny model builder
behind it (tests/tiny_families.py) that the per-family tests use."""

from __future__ import annotations

import json
from pathlib import Path

from evaluator.backends.families import FAMILIES, markdown_table
from vlmdesk.cli import main

MODELS_PAGE = Path(__file__).resolve().parents[1] / "docs" / "guide" / "models.md"


def test_the_models_page_holds_the_table_written_from_the_families_data():
    text = MODELS_PAGE.read_text(encoding="utf-8")
    start, end = "<!-- families:start -->\n", "\n<!-- families:end -->"
    assert text[text.index(start) + len(start) : text.index(end)] == markdown_table()
    assert markdown_table().count("\n") == len(FAMILIES) + 1


def test_models_families_lists_every_row_and_why_sharing_is_off(capsys):
    assert main(["models", "families", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["model_type"] for r in rows] == [f.model_type for f in FAMILIES]
    for row, family in zip(rows, FAMILIES):
        assert row["generation"] and row["likelihood"] and row["pope"]
        assert row["prefix_sharing"] == ("on" if family.share_prefix else f"off: {family.share_off}")
        assert "/" in row["checkpoint"]
    assert main(["models", "families"]) == 0
    text = capsys.readouterr().out
    assert all(f.checkpoint in text for f in FAMILIES)
    assert all(f"{f.model_type}: {f.share_off}" in text for f in FAMILIES if not f.share_prefix)


def test_every_family_has_a_tiny_builder():
    from tests.tiny_families import BUILDERS

    assert set(BUILDERS) == {f.model_type for f in FAMILIES}
    assert len({f.model_type for f in FAMILIES}) == len(FAMILIES)
