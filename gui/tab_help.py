"""F1 on every tab: that tab's actions and keys (Review's own, fuller list is gui/shortcuts.py's). Rows are
(group, keys, what) as the help overlay shows them."""

from __future__ import annotations

from gui.shortcuts import IMAGE_MOVES

WINDOW = [
    ("Window", "Ctrl+1 … Ctrl+9", "Go to a tab"),
    ("Window", "F5", "Refresh from the workspace"),
    ("Window", "B", "Blind mode on / off"),
    ("Window", "Ctrl+= / Ctrl+- / Ctrl+0", "Larger / smaller / normal text"),
    ("Window", "F1", "This help"),
]

TAB_HELP: dict[str, list[tuple[str, str, str]]] = {
    "browse": [
        ("Browse", "Type in the search box", "Search questions, hints and options (words as prefixes)"),
        ("Browse", "↑ / ↓", "Move through the items"),
        ("Browse", "Enter / double click", "Open the item in Review"),
        *(("Browse", " / ".join(s.keys), s.text.removeprefix("Image: ")) for s in IMAGE_MOVES),
        ("Browse", "View ▾ · Save view…", "Saved filters of this workspace"),
        ("Browse", "Clear filters", "Every item again"),
    ],
    "queues": [
        ("Quality control", "Confirm / Reject", "Decide the flag (reason, note, corrected key)"),
        ("Quality control", "E", "Write a note"),
        ("Extractor adjudication", "1–9", "The option the response chose"),
        ("Extractor adjudication", "Z / ?", "None of the options / unclear"),
        ("Extractor adjudication", "Enter", "Next response after the reveal"),
        ("Conflicts", "O W U T I S · R", "Settle with your own verdict (as in Review; R on open items)"),
        ("Every queue", "Ctrl+Z", "Take back my last decision, label or settlement here"),
        ("Every queue", "Guidelines", "Show the benchmark's guidelines beside the queue"),
    ],
    "runs": [
        ("Runs", "Start run", "Queue the form's command (shown under it)"),
        ("Runs", "Run again (--new)", "Run settings that finished already once more"),
        ("Runs", "Cancel run", "Stop the running job; resume it later from the runs list"),
        ("Runs", "Resume", "Continue the selected interrupted run"),
        ("Runs", "Double click a run", "Its results"),
    ],
    "results": [
        ("Results", "Ctrl+click runs", "Compare several runs in one chart"),
        ("Results", "Click a bar", "List the items behind it (the bar is outlined)"),
        ("Results", "Double click an item", "Open it in Review"),
        ("Results", "Export chart… / CSV… / predictions…", "Save what is shown"),
        ("Results", "Alt+C / Alt+D", "Charts / Desiderata (ChEF's six dimensions of the chosen runs)"),
    ],
    "alignment": [
        ("Alignment", "Set / Extractor", "Choose the adjudication set and the extractor drawn"),
        ("Alignment", "Workspace › Build an adjudication set…", "A new set from finished runs"),
    ],
    "models": [
        ("Models", "Add", "Save a model spec under a name (never a key)"),
        ("Models", "Test", "Load the model and ask it one demo item, in a child process"),
    ],
    "arena": [
        ("Vote", "1 / 2", "The left / the right answer is better"),
        ("Vote", "3 / 4", "Tie / both bad"),
        ("Vote", "S", "Skip (nothing stored; the pair comes again after the others)"),
        ("Vote", "Ctrl+Z", "Take back my last vote (a correction appends)"),
        ("Vote", "E", "Write a note for the next vote (Enter / Esc to leave it)"),
        ("Arena", "Workspace › Draw arena pairs…", "Pairs of runs' answers to vote on"),
        ("Leaderboard", "Leaderboard tab", "Bradley–Terry ratings with 95 % intervals (hidden in blind mode)"),
    ],
    "annotators": [
        ("Annotators", "Hover Mean κ", "κ with each other annotator"),
        ("Annotators", "Discuss conflicts", "Open the Conflicts queue"),
    ],
}


def rows_for(tab: str) -> list[tuple[str, str, str]]:
    """The help rows of a tab (other branches' tabs without an entry get the window's keys only)."""
    return [*TAB_HELP.get(tab, []), *WINDOW]
