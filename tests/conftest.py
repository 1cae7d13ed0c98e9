"""Shared test setup: Qt renders offscreen, no test touches the user's real workspace or the network hub, and every
test is marked by what it does (gui, subprocess, model, server, property, slow, fast; see the end of this file)."""

import inspect
import os
import sys
import types
from functools import cache
from pathlib import Path

# Bytecode caches even where PYTHONDONTWRITEBYTECODE is set (as on these machines and CI's): without them every test
# run compiles vlmdesk and assertion-rewrites every test module from source again (the fast tier's collection took
# 12.7 s of CPU, 5.6 s with caches), and every `vlmdesk` process a test starts compiles what it imports. They go to
# the checkout's __pycache__ folders, which git ignores.
sys.dont_write_bytecode = False
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest  # noqa: E402

pytest_plugins = ("pytester",)  # tests/test_markers.py runs the markers below on a sample tree


@pytest.fixture(autouse=True)
def _isolated_workspace(tmp_path, monkeypatch):
    # A test that forgets --workspace must not write into the user's data directory.
    monkeypatch.setenv("VLMDESK_WORKSPACE", str(tmp_path / "default-workspace.sqlite"))
    # Nor write tracebacks of internal errors into the user's log directory.
    monkeypatch.setenv("VLMDESK_LOG_DIR", str(tmp_path / "logs"))


# Tiny random-weight models on disk, built once per session and shared by every test that loads a model.
@pytest.fixture(scope="session")
def tiny_llava_dir(tmp_path_factory):
    from tests.tiny_models import build_tiny_llava

    return build_tiny_llava(tmp_path_factory.mktemp("tiny_llava"))


@pytest.fixture(scope="session")
def tiny_idefics3_dir(tmp_path_factory):
    from tests.tiny_models import build_tiny_idefics3

    return build_tiny_idefics3(tmp_path_factory.mktemp("tiny_idefics3"))


@pytest.fixture(scope="session")
def tiny_text_lm_dir(tmp_path_factory):
    from tests.tiny_models import build_tiny_text_lm

    return build_tiny_text_lm(tmp_path_factory.mktemp("tiny_text_lm"))


@pytest.fixture(scope="session")
def tiny_family_dirs(tmp_path_factory):
    """tiny_family_dirs(model_type): a tiny random-weight VLM of that family on disk (tests/tiny_families.py), built
    on first use and shared by the session."""
    from tests.tiny_families import BUILDERS

    built: dict[str, Path] = {}

    def get(model_type: str) -> Path:
        if model_type not in built:
            built[model_type] = BUILDERS[model_type](tmp_path_factory.mktemp(f"tiny_{model_type}"))
        return built[model_type]

    return get


@pytest.fixture
def serve():
    """serve(script, **kw) starts a scripted local HTTP server (tests/servers.py) that is closed when the test ends."""
    from tests.servers import FaultServer

    servers = []

    def start(script=None, **kw) -> FaultServer:
        servers.append(FaultServer(script, **kw))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


# ---- markers, applied from what a test does (declared in pyproject.toml; see docs/guide/development.md) -------------
#
# gui: under tests/gui/, or uses qtbot / qapp. model: uses a tiny model (also slow). server: a local HTTP server
# (the scripted fault server, the fetch tests' file server, tests/server_process.py, or a real `transformers
# serve`). subprocess: starts a process. Server and subprocess are found in the names the test, its fixtures and the
# tests/ helpers they call use (their bytecode), so tests written later are marked without a list. property: a
# hypothesis @given test (also slow: hundreds of examples).
# slow: model, property, or measured slow (SLOW). fast: none of slow, gui, subprocess, server (retries wait): the
# edit loop's `-m fast`. A test may also carry one of these markers itself.

TESTS_DIR = Path(__file__).resolve().parent
MODEL_FIXTURES = {"tiny_llava_dir", "tiny_idefics3_dir", "tiny_text_lm_dir", "tiny_family_dirs"}
SPAWNS = {"subprocess", "Popen", "QProcess", "executable"}  # names in the bytecode of code that starts a process
SERVES = {"FaultServer", "FileServer", "ServerProcess", "transformers_serve"}
# The slowest tests no rule marks (pytest --durations=0, 2 busy cores): over 3 s each, or tables of in-process
# command-line error cases (0.2-0.7 s a row) that would cost the fast loop a quarter of its time. A prefix of a node
# id marks every parametrisation.
SLOW = (
    "tests/evaluator/test_runner.py::test_seeded_random_baseline_circular_near_one_in_256",
    "tests/annotation/test_sync.py::test_a_bad_line_is_one_error_and_nothing_is_written",
    "tests/evaluator/test_importers.py::test_skip_bad_imports_the_good_rows_and_reports_each_skipped_one",
    "tests/annotation/test_alignment.py::test_final_labels_disagreements_adjudication_and_report",
    "tests/test_bounds.py::test_huge_or_out_of_range_numbers_are_one_line_errors_and_store_nothing",
    "tests/test_bounds.py::test_a_garbage_stored_config_is_shown_as_such_and_never_stops_reading",
    "tests/test_bounds.py::test_model_spec_options_are_range_checked_before_a_run_exists",
    "tests/test_bounds.py::test_template_fields_are_checked_when_the_template_is_read",
    "tests/evaluator/test_importers.py::test_bad_input_is_one_line_and_changes_nothing",
    "tests/annotation/test_alignment.py::test_align_commands",
    "tests/backends/test_hf.py::test_bad_path_is_a_readable_backend_error",  # imports transformers: 3 s
    "tests/db/test_hold_stress.py",  # whole runs disturbed: ~10 s a trial
    # Walks every object of the process at each model call (gc.get_objects): 9-15 s each in a whole-suite process.
    "tests/evaluator/test_run_memory.py::test_the_engine_holds_a_chunk_of_items_and_no_stored_pass_at_any_run_size",
)


def _unwrap(func):
    func = getattr(getattr(func, "hypothesis", None), "inner_test", func)  # @given wraps the test
    return inspect.unwrap(func)


def _functions(obj) -> list[types.FunctionType]:
    """A function, or a class's methods; only what is written under tests/ (production code is not read)."""
    found = (
        [obj]
        if isinstance(obj, types.FunctionType)
        else [f for f in vars(obj).values() if isinstance(f, types.FunctionType)]
        if isinstance(obj, type)
        else []
    )
    return [f for f in found if _under_tests(f.__code__.co_filename)]


@cache
def _under_tests(filename: str) -> bool:
    return Path(filename).resolve().is_relative_to(TESTS_DIR)


def _names_in(code: types.CodeType) -> set[str]:
    """Global and attribute names, and string constants (a fixture asked for by name), nested code included."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names_in(const)
        elif isinstance(const, str) and const.isidentifier():
            names.add(const)
    return names


@cache
def _reachable_names(root) -> frozenset[str]:
    """Names used by `root` and by the tests/ functions and classes it names, a few calls deep (bytecode, fast)."""
    names, seen, frontier = set(), set(), [root]
    for _ in range(4):
        following = []
        for func in (f for obj in frontier for f in _functions(_unwrap(obj))):
            if func in seen:
                continue
            seen.add(func)
            used = _names_in(func.__code__)
            names |= used
            following += [
                func.__globals__[n] for n in used if isinstance(func.__globals__.get(n), (types.FunctionType, type))
            ]
        frontier = following
    return frozenset(names)


def pytest_collection_modifyitems(config, items):
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
        roots = [getattr(item, "function", None)] + [d.func for name in fixtures for d in defs.get(name, ())]
        names = frozenset().union(*(_reachable_names(r) for r in roots if r is not None))
        marks = set()
        if Path(str(item.path)).resolve().is_relative_to(TESTS_DIR / "gui") or fixtures & {"qtbot", "qapp"}:
            marks.add("gui")
        params = {v for v in getattr(getattr(item, "callspec", None), "params", {}).values() if isinstance(v, str)}
        # A model fixture used, passed as a parameter, or asked for by a name built from "tiny_" (getfixturevalue).
        if (fixtures | params | names) & MODEL_FIXTURES or (
            "getfixturevalue" in names and any(n.startswith("tiny_") for n in names)
        ):
            marks |= {"model", "slow"}
        if getattr(getattr(item, "function", None), "is_hypothesis_test", False):
            marks |= {"property", "slow"}
        if names & SERVES:
            marks.add("server")
        if names & SPAWNS:
            marks.add("subprocess")
        if item.nodeid.startswith(SLOW):
            marks.add("slow")
        present = {m.name for m in item.iter_markers()}
        if not (marks | present) & {"slow", "gui", "subprocess", "server"}:
            marks.add("fast")
        for name in sorted(marks - present):
            item.add_marker(name)
