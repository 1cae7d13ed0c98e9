"""Browsing queries: search (migrations 0005, 0010), filters, keyset pages, run results — never image bytes."""

import base64
import json
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlite_utils import Database

from db import catalog, item_query, open_workspace, schema
from db.item_query import ItemFilter, search_fold
from evaluator.formats.importers import import_benchmark
from tests.factories import png_bytes, write_mmbench_tsv
from vlmdesk.demo import demo_dir


def _demo(tmp_path):
    ws = open_workspace(tmp_path / "ws.sqlite")
    import_benchmark(ws, demo_dir() / "demo_mcq.jsonl", fmt="jsonl", name="demo")
    return ws, catalog.benchmark_by_name(ws, "demo")


def _like(ws, bench, word):
    return {
        r[0]
        for r in ws.conn.execute(
            "SELECT id FROM items WHERE benchmark_id = ? AND (question LIKE ? OR coalesce(hint,'') LIKE ? "
            "OR options LIKE ?)",
            (bench.id, f"%{word}%", f"%{word}%", f"%{word}%"),
        )
    }


def test_search_matches_questions_hints_and_options_and_follows_edits(tmp_path):
    ws, bench = _demo(tmp_path)
    with ws:
        for word in ("cat", "colour", "red"):
            found = {r.id for r in item_query.item_page(ws, bench.id, ItemFilter(text=word), limit=1000)}
            # Prefix search on words: every hit contains the word; LIKE may add substrings inside longer words.
            assert found and found <= _like(ws, bench, word)
        assert item_query.count_items(ws, bench.id, ItemFilter(text="zebraxylophone")) == 0
        item = catalog.list_items(ws, bench.id)[0]
        with ws.db.atomic():
            ws.conn.execute("UPDATE items SET question = 'Which zebraxylophone is shown?' WHERE id = ?", (item.id,))
        assert [r.id for r in item_query.item_page(ws, bench.id, ItemFilter(text="zebraxyl"))] == [item.id]
        with ws.db.atomic():
            ws.conn.execute("DELETE FROM items WHERE id = ?", (item.id,))
        assert item_query.count_items(ws, bench.id, ItemFilter(text="zebraxylophone")) == 0


def test_migration_indexes_rows_that_existed_before_it(tmp_path):
    path = tmp_path / "old.sqlite"
    db = Database(sqlite3.connect(path))
    schema.migrations.apply(db, stop_before="0005_item_search")
    db.execute(
        "INSERT INTO benchmarks (id, name, kind, format, source, source_sha256, rows_read, imported_at) "
        "VALUES (1, 'b', 'mcq', 'jsonl', 's', 'x', 1, 'now')"
    )
    db.execute(
        "INSERT INTO items (benchmark_id, position, source_index, question, hint, options) "
        "VALUES (1, 0, 0, 'Where is the lighthouse?', 'coastal photo', '[\"north\", \"south\"]')"
    )
    db.execute(f"PRAGMA user_version = {len(schema.migrations.applied(db))}")
    db.conn.commit()
    db.close()
    with open_workspace(path) as ws:
        assert ws.schema_version() == schema.latest_version()
        for word in ("lighthouse", "coastal", "south"):
            assert item_query.count_items(ws, 1, ItemFilter(text=word)) == 1


# Items whose texts hold the punctuation of JSON only here and there; the options' JSON holds it in every item.
SEARCH_ITEMS = [
    ("Where is the lighthouse?", "coastal photo", ["north", "south", "east", "west"]),
    ("Which painting is shown?", None, ['the "Mona Lisa"', "The Starry Night"]),
    ("What does the sign say: stop, or go?", "", ["stop", "go"]),
    ("Which list is sorted?", "lists are written [1, 2]", ["[1, 2, 3]", "[3, 1, 2]"]),
    ("Which brace is shown?", None, ["{", "}"]),
    ("Which road leads to the sea?", None, ["left\nright", "back"]),  # a line break inside an option
    ("哪种溶液的浓度更高？", None, ["都不是；它们的浓度相同", "溶液B", "溶液A"]),
    ("How many dogs?", None, ["1", "2", "3"]),
    # Folded by NFKC and case folding before they are compared with what is typed.
    ("Which sign hangs on the door?", "Ｆｕｌｌ ＡＢＣ", ["ＯＰＥＮ", "ＣＬＯＳＥＤ"]),
    ("Welche Straße ist das?", None, ["Große Straße", "Kleine Gasse"]),
    ("Which word is printed?", None, ["ﬁsh", "bird"]),
    # Scripts written without spaces between words: searched as substrings, like Chinese.
    ("ภาษาไทยคืออะไร", None, ["ภาษาไทย", "ภาษาอังกฤษ"]),
    ("ພາສາລາວແມ່ນຫຍັງ", None, ["ພາສາລາວ", "ພາສາໄທ"]),
    ("ភាសាខ្មែរជាអ្វី", None, ["ភាសាខ្មែរ", "ភាសាថៃ"]),
    ("မြန်မာဘာသာ ဘာလဲ", None, ["မြန်မာစာ", "ထိုင်းစာ"]),
    ("東京タワーはどこですか", None, ["みなと区", "しんじゅく区"]),
]


def _texts(question, hint, options):
    return [question, hint or "", *options]


def _search_bench(tmp_path):
    image = "data:image/png;base64," + base64.b64encode(png_bytes()).decode()
    path = tmp_path / "search.jsonl"
    path.write_text(
        "".join(
            json.dumps({"index": n, "question": q, "hint": h, "options": o, "image": image}, ensure_ascii=False) + "\n"
            for n, (q, h, o) in enumerate(SEARCH_ITEMS)
        ),
        encoding="utf-8",
    )
    ws = open_workspace(tmp_path / "ws.sqlite")
    import_benchmark(ws, path, fmt="jsonl", name="search")
    bench = catalog.benchmark_by_name(ws, "search")
    ids = {item.index: item.id for item in catalog.list_items(ws, bench.id)}
    return ws, bench, [ids[n] for n in range(len(SEARCH_ITEMS))]


@pytest.fixture(scope="module")
def searchable(tmp_path_factory):
    """One workspace for the tests that only search it."""
    ws, bench, ids = _search_bench(tmp_path_factory.mktemp("search"))
    yield ws, bench, ids
    ws.close()


def _found(ws, bench, text):
    found = {r.id for r in item_query.item_page(ws, bench.id, ItemFilter(text=text), limit=1000)}
    assert item_query.count_items(ws, bench.id, ItemFilter(text=text)) == len(found)
    return found


def _index_in_sync(ws):
    # FTS5 compares its index with the content (the item_search_texts view) and raises when they differ.
    ws.conn.execute("INSERT INTO item_search (item_search, rank) VALUES ('integrity-check', 1)")
    return True


@pytest.mark.parametrize("char", ['"', ",", "[", "]", "{", "}", ":", "\\"])
def test_json_punctuation_finds_only_the_items_whose_texts_hold_it(searchable, char):
    ws, bench, ids = searchable
    expected = {ids[n] for n, item in enumerate(SEARCH_ITEMS) if any(char in t for t in _texts(*item))}
    assert _found(ws, bench, char) == expected
    assert len(expected) < len(ids)


def test_option_texts_are_searched_as_written(searchable):
    ws, bench, ids = searchable
    assert _found(ws, bench, "south") == {ids[0]}
    assert _found(ws, bench, "mona") == {ids[1]}
    assert _found(ws, bench, "starry night") == {ids[1]}
    assert _found(ws, bench, "right") == {ids[5]}
    assert _found(ws, bench, "nright") == set()  # the JSON escape "\n" glued "n" to the next word
    assert _found(ws, bench, "浓度相同") == {ids[6]}  # Chinese: a substring of an option's text
    assert _found(ws, bench, "溶液") == {ids[6]}
    assert _found(ws, bench, "；它们") == {ids[6]}
    assert _found(ws, bench, "2") == {ids[3], ids[7]}
    assert _found(ws, bench, "coastal") == {ids[0]}


ODD_QUERIES = [
    '"',
    '""',
    '"south',
    'south"',
    "'",
    "NEAR(north south)",
    "north AND south",
    "north OR",
    "NOT",
    "*",
    "**",
    "-",
    "- north",
    "-north",
    "^north",
    "question:north",
    "options : south",
    "(",
    ")",
    "_",
    "%",
    "\\",
    "north*",
    "+",
    "north NEAR/2 south",
    "{question}: north",
    "\x00",
    "x" * 5000,
    "north " * 800,
    '浓度 "',
    "\u200b",
    "🙂",
]


@pytest.mark.parametrize("query", ODD_QUERIES, ids=range(len(ODD_QUERIES)))
def test_odd_queries_are_never_an_error_and_never_match_everything(searchable, query):
    ws, bench, ids = searchable
    assert len(_found(ws, bench, query)) < len(ids)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(max_size=60))
def test_any_typed_text_is_a_valid_search(searchable, query):
    ws, bench, ids = searchable
    found = _found(ws, bench, query)
    folded = search_fold(query.strip())
    if folded and not any(c.isalnum() for c in folded):  # punctuation only: a plain substring search, folded
        assert found == {
            ids[n] for n, item in enumerate(SEARCH_ITEMS) if any(folded in search_fold(t) for t in _texts(*item))
        }


def _item_with(text):
    return {n for n, item in enumerate(SEARCH_ITEMS) if any(text in t for t in _texts(*item))}


@pytest.mark.parametrize(
    "query, holder",
    [
        ("full", "Ｆｕｌｌ"),
        ("FULL", "Ｆｕｌｌ"),
        ("ｆｕｌｌ", "Ｆｕｌｌ"),
        ("abc", "ＡＢＣ"),
        ("open", "ＯＰＥＮ"),
        ("Closed", "ＣＬＯＳＥＤ"),
        ("full abc", "Ｆｕｌｌ"),
        ("gross", "Große"),
        ("GROSSE strasse", "Große"),
        ("strasse", "Straße"),
        ("STRASSE", "Straße"),
        ("fish", "ﬁsh"),
        ("ﬁ", "ﬁsh"),
    ],
)
def test_texts_and_queries_are_folded_alike(searchable, query, holder):
    """NFKC and case folding on both sides: full-width letters, ß and ligatures are found by their plain spelling."""
    ws, bench, ids = searchable
    assert _found(ws, bench, query) == {ids[n] for n in _item_with(holder)}
    assert _index_in_sync(ws)


@pytest.mark.parametrize(
    "query, holder",
    [
        ("ไทย", "ภาษาไทย"),
        ("ภาษา", "ภาษาไทย"),
        ("ลาว", None),
        ("ລາວ", "ພາສາລາວ"),
        ("ខ្មែរ", "ភាសាខ្មែរ"),
        ("ဘာသာ", "မြန်မာဘာသာ"),
        ("タワー", "東京タワー"),
        ("ﾀﾜｰ", "東京タワー"),
        ("どこ", "東京タワー"),
        ("みなと", "みなと区"),
    ],
)
def test_scripts_without_spaces_are_searched_by_substring(searchable, query, holder):
    ws, bench, ids = searchable
    assert _found(ws, bench, query) == ({ids[n] for n in _item_with(holder)} if holder else set())


@pytest.mark.parametrize("query", ["\ud800", "\udfff", "full\ud800", "\ud800超", "ไทย\udc00", "\ud83d\ude00"])
def test_lone_surrogates_match_nothing_and_never_raise(searchable, query):
    ws, bench, ids = searchable
    assert _found(ws, bench, query) == set()


def test_every_word_of_every_item_is_found_in_any_width_and_case(searchable):
    ws, bench, ids = searchable
    for n, item in enumerate(SEARCH_ITEMS):
        for text in _texts(*item):
            for word in item_query._WORD.findall(text):
                for spelling in (word, word.upper(), _full_width(word), search_fold(word)):
                    assert ids[n] in _found(ws, bench, spelling), (word, spelling)


def _full_width(text):
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12))
def test_full_width_and_upper_case_queries_find_the_same_items(searchable, query):
    ws, bench, ids = searchable
    found = _found(ws, bench, query)
    assert _found(ws, bench, _full_width(query)) == found
    assert _found(ws, bench, query.upper()) == found


def test_folded_search_follows_writes_of_this_and_of_other_connections(tmp_path):
    ws, bench, ids = _search_bench(tmp_path)
    with ws:
        assert _found(ws, bench, "zebra") == set()
        with ws.db.atomic():
            ws.conn.execute("UPDATE items SET hint = 'Ｚｅｂｒａ crossing' WHERE id = ?", (ids[0],))
        assert _found(ws, bench, "zebra") == {ids[0]}
        with open_workspace(tmp_path / "ws.sqlite") as other:
            with other.db.atomic():
                other.conn.execute(
                    "UPDATE items SET options = ? WHERE id = ?",
                    (json.dumps(["ＺＥＢＲＡ", "horse"], ensure_ascii=True), ids[2]),
                )
        assert _found(ws, bench, "zebra") == {ids[0], ids[2]}
        with ws.db.atomic():
            ws.conn.execute("UPDATE items SET hint = NULL WHERE id = ?", (ids[0],))
        assert _found(ws, bench, "zebra") == {ids[2]}
        assert _index_in_sync(ws)


def test_the_index_follows_inserts_updates_and_deletes(tmp_path):
    ws, bench, ids = _search_bench(tmp_path)
    with ws:
        with ws.db.atomic():
            ws.conn.execute("UPDATE items SET options = ? WHERE id = ?", (json.dumps(["harbour", "quay"]), ids[0]))
        assert _found(ws, bench, "south") == set()
        assert _found(ws, bench, "quay") == {ids[0]}
        assert _index_in_sync(ws)
        with ws.db.atomic():
            ws.conn.execute("UPDATE items SET hint = 'misty morning' WHERE id = ?", (ids[0],))
        assert _found(ws, bench, "coastal") == set() and _found(ws, bench, "misty") == {ids[0]}
        with ws.db.atomic():
            ws.conn.execute("DELETE FROM items WHERE id = ?", (ids[1],))
        assert _found(ws, bench, "mona") == set()
        assert _index_in_sync(ws)
        with ws.db.atomic():  # deleting the benchmark deletes its items by cascade
            ws.conn.execute("DELETE FROM benchmarks WHERE id = ?", (bench.id,))
        assert ws.conn.execute("SELECT count(*) FROM item_search WHERE item_search MATCH 'quay'").fetchone() == (0,)
        assert _index_in_sync(ws)


def test_0010_upgrades_a_workspace_indexed_over_json(tmp_path):
    path = tmp_path / "old.sqlite"
    db = Database(sqlite3.connect(path))
    schema.migrations.apply(db, stop_before="0010_search_texts")
    db.execute(
        "INSERT INTO benchmarks (id, name, kind, format, source, source_sha256, rows_read, imported_at) "
        "VALUES (1, 'b', 'mcq', 'jsonl', 's', 'x', 2, 'now')"
    )
    for n, (question, options) in enumerate(
        [("Where is the lighthouse?", ["north", "south"]), ("Which road?", ["left\nright", "back"])]
    ):
        db.execute(
            "INSERT INTO items (benchmark_id, position, source_index, question, options) VALUES (1, ?, ?, ?, ?)",
            (n, n, question, json.dumps(options)),
        )
    db.execute(f"PRAGMA user_version = {len(schema.migrations.applied(db))}")
    db.conn.commit()
    # Before: the index and the substring search read the options' JSON.
    assert db.execute("SELECT count(*) FROM item_search WHERE item_search MATCH 'nright'").fetchone() == (1,)
    db.close()
    with open_workspace(path) as ws:
        assert ws.schema_version() == schema.latest_version()
        assert "0010_search_texts" in {r[0] for r in ws.conn.execute("SELECT name FROM _sqlite_migrations")}
        assert item_query.count_items(ws, 1, ItemFilter(text='"')) == 0
        assert item_query.count_items(ws, 1, ItemFilter(text="[")) == 0
        assert item_query.count_items(ws, 1, ItemFilter(text="nright")) == 0
        assert item_query.count_items(ws, 1, ItemFilter(text="south")) == 1
        assert item_query.count_items(ws, 1, ItemFilter(text="right")) == 1
        assert _index_in_sync(ws)
        triggers = {
            r[0]
            for r in ws.conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'items'")
        }
        assert {"item_search_ai", "item_search_bd", "item_search_bu", "item_search_au"} <= triggers
        assert "item_search_ad" not in triggers
        with ws.db.atomic():  # the new triggers keep the upgraded index in sync
            ws.conn.execute(
                "INSERT INTO items (benchmark_id, position, source_index, question, options) "
                "VALUES (1, 2, 2, 'Which tower?', '[\"belfry\", \"spire\"]')"
            )
        assert item_query.count_items(ws, 1, ItemFilter(text="belfry")) == 1
        assert _index_in_sync(ws)


def test_chinese_text_is_searched_by_substring(tmp_path):
    ws, bench = _demo(tmp_path)
    with ws:
        item = catalog.list_items(ws, bench.id)[0]
        with ws.db.atomic():
            ws.conn.execute("UPDATE items SET question = '图中的猫是什么颜色？' WHERE id = ?", (item.id,))
        assert [r.id for r in item_query.item_page(ws, bench.id, ItemFilter(text="猫是"))] == [item.id]


def test_filters_keyset_pages_and_no_image_bytes(tmp_path):
    tsv = write_mmbench_tsv(tmp_path / "b.tsv", 450, circular=False, image_side=16)
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        import_benchmark(ws, tsv, name="gen")
        bench = catalog.benchmark_by_name(ws, "gen")
        statements = []
        ws.conn.set_trace_callback(statements.append)
        pages, after = [], None
        while page := item_query.item_page(ws, bench.id, after=after, limit=100):
            pages.append(page)
            after = (page[-1].position, page[-1].id)
        rows = [r for p in pages for r in p]
        assert [len(p) for p in pages] == [100, 100, 100, 100, 50]
        assert [r.index for r in rows] == list(range(450))
        assert not any("images" in s or "data" in s.split("FROM")[0] for s in statements)
        ws.conn.set_trace_callback(None)
        ocr = ItemFilter(category="ocr")
        assert item_query.count_items(ws, bench.id, ocr) == 75
        assert {r.category for r in item_query.item_page(ws, bench.id, ocr, limit=500)} == {"ocr"}
        some = frozenset(r.id for r in rows[:10])
        assert item_query.count_items(ws, bench.id, ItemFilter(only_ids=some)) == 10
        assert item_query.count_items(ws, bench.id, ItemFilter(exclude_ids=some)) == 440
        assert item_query.facet_values(ws, bench.id)["split"] == ["dev"]


def test_run_result_per_item_agrees_with_circular_scoring(tmp_path):
    from annotation import qc
    from vlmdesk.cli import main

    ws_path = tmp_path / "ws.sqlite"
    ws, bench = _demo(tmp_path)
    ws.close()
    assert main(["--workspace", str(ws_path), "run", "--bench", "demo", "--model", "baseline:first"]) == 0
    assert (
        main(
            [
                "--workspace",
                str(ws_path),
                "run",
                "--bench",
                "demo",
                "--model",
                "baseline:random",
                "--strategy",
                "vanilla",
            ]
        )
        == 0
    )
    with open_workspace(ws_path) as ws:
        circular, vanilla = (r.id for r in sorted(item_query.runs_of_benchmark(ws, bench.id), key=lambda r: r.id))
        rows = item_query.item_page(ws, bench.id, ItemFilter(run_id=circular), limit=100)
        truth = qc.circular_correctness(ws, [circular])
        assert {r.id for r in rows if r.run_result == "right"} == {i for i, v in truth.items() if v[circular]}
        assert {r.run_result for r in rows} <= {"right", "wrong"}
        right = item_query.count_items(ws, bench.id, ItemFilter(run_id=circular, run_result="right"))
        assert right == sum(v[circular] for v in truth.values())
        v_rows = item_query.item_page(ws, bench.id, ItemFilter(run_id=vanilla), limit=100)
        pass0 = dict(
            ws.conn.execute(
                "SELECT item_id, correct FROM predictions WHERE run_id = ? AND pass = 0", (vanilla,)
            ).fetchall()
        )
        assert {r.id for r in v_rows if r.run_result == "right"} == {i for i, c in pass0.items() if c}
        by_run = item_query.item_predictions(ws, rows[0].id)
        assert [run.id for run, _ in by_run] == [vanilla, circular]
        assert [p.pass_ for p in by_run[1][1]] == sorted(p.pass_ for p in by_run[1][1])


def test_counts_of_filtered_listings_equal_the_rows_listed(tmp_path):
    # Counting "all", "all but these" (not reviewed by me) and "these" answers from kept counts and index reads
    # (issue 27); every count must still be the number of rows the pages list.
    ws, bench = _demo(tmp_path)
    with ws:
        ids = [i.id for i in catalog.list_items(ws, bench.id)]
        category = catalog.list_items(ws, bench.id)[0].category
        some, gone = frozenset(ids[::3]), frozenset({10**9})  # an id no item has is excluded by nobody
        for f in (
            ItemFilter(),
            ItemFilter(exclude_ids=some),
            ItemFilter(exclude_ids=gone),
            ItemFilter(only_ids=some),
            ItemFilter(category=category, exclude_ids=some),
            ItemFilter(text="the", exclude_ids=some),
            ItemFilter(only_ids=frozenset(ids[:5]), exclude_ids=some),
        ):
            listed = item_query.item_page(ws, bench.id, f, limit=10_000)
            assert item_query.count_items(ws, bench.id, f) == len(listed), f
        assert item_query.count_items(ws, bench.id) == len(ids)
