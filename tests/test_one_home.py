"""One rule, one home: the rules evaluator/scoring/choices.py holds are not written again elsewhere
(docs/architecture.md,
"Where the rules live"). A source line that spells one of them out fails here with its file and line."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("db", "evaluator", "annotation", "gui", "vlmdesk", "bench")
HOME = {"evaluator/scoring/choices.py"}
# What each pattern spells out, and the files allowed to (besides the home).
COPIES = {
    "option letters": (re.compile(r"ABCDEFGHIJKLMNOPQRSTUVWXYZ|ascii_uppercase\s*\["), set()),
    "CJK ideograph ranges": (re.compile(r"\\u4e00-\\u9fff"), {"db/item_query.py"}),  # the search's tokenizer rule
    "yes/no reading": (re.compile(r"\bparse_strict\("), {"evaluator/scoring/pope.py"}),
    "POPE parser list": (re.compile(r"\{\s*\"official\":\s*parse_official"), {"evaluator/scoring/pope.py"}),
    "passes needed in SQL": (
        re.compile(r"json_array_length\(i\.options\)\s*(?:ELSE|END|\)|=)|sum\(p\.correct = 1\)"),
        {"db/schema.py"},  # migration 0020's triggers keep the run result per (run, item)
    ),
    "rotation": (re.compile(r"\(\s*i\s*\+\s*(?:k|shift)\s*\)\s*%\s*n"), set()),
    "passes needed": (re.compile(r"len\([\w.]*options\) if [\w.]*strategy == \"circular\""), set()),
}


def test_no_rule_of_choices_is_written_twice():
    found = []
    for layer in LAYERS:
        for path in sorted((ROOT / layer).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if name in HOME:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                for what, (pattern, allowed) in COPIES.items():
                    if name not in allowed and pattern.search(line):
                        found.append(f"{name}:{number}: {what}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_patterns_find_the_copies_they_were_written_for():
    old = {
        "option letters": 'LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"',
        "rotation": "return tuple((i + k) % n for i in range(n))",
        "passes needed": 'need = len(item.options) if run.strategy == "circular" else 1',
        "passes needed in SQL": "sum(p.correct = 1) = max(1, json_array_length(i.options)) ",
        "POPE parser list": 'PARSERS = {"official": parse_official, "strict": parse_strict}',
    }
    for what, line in old.items():
        assert COPIES[what][0].search(line), what
