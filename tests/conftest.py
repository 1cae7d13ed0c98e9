"""Shared test setup: Qt renders offscreen, and no test touches the user's real workspace or the network hub."""
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated_workspace(tmp_path, monkeypatch):
    # A test that forgets --workspace must not write into the user's data directory.
    monkeypatch.setenv("VLMDESK_WORKSPACE", str(tmp_path / "default-workspace.sqlite"))


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


# ---- markers, applied from what a test does (declared in pyproject.toml; see README, Development) -------------
#
# gui: under tests/gui/. model: builds a tiny model (slow). server: talks to a local HTTP server (the scripted
# fault server, or a real `transformers serve`). subprocess: starts a process — found by reading the source of
# the test, of the fixtures it uses and of the helpers they call in tests/, so new tests are marked without a list.
# slow: model, or measured slow (SLOW below). fast: none of slow, gui, subprocess — the edit loop's `-m fast`.

import inspect  # noqa: E402
import types  # noqa: E402
from functools import cache  # noqa: E402
from pathlib import Path  # noqa: E402

TESTS_DIR = Path(__file__).resolve().parent
MODEL_FIXTURES = {"tiny_llava_dir", "tiny_idefics3_dir", "tiny_text_lm_dir"}
SPAWNS = {"subprocess", "Popen", "QProcess", "executable"}  # names in the bytecode of code that starts a process
SERVES = {"FaultServer", "transformers_serve"}
# Tests of more than ~1 s on 2 cores that no rule above marks (pytest --durations=0 on the full suite); a prefix
# of a node id marks every parametrisation.
SLOW = (
)


def _unwrap(func):
    func = getattr(getattr(func, "hypothesis", None), "inner_test", func)  # @given wraps the test
    return inspect.unwrap(func)


def _functions(obj) -> list[types.FunctionType]:
    """A function, or a class's methods; only what is written under tests/ (production code is not read)."""
    found = [obj] if isinstance(obj, types.FunctionType) else [
        f for f in vars(obj).values() if isinstance(f, types.FunctionType)] if isinstance(obj, type) else []
    return [f for f in found if _under_tests(f.__code__.co_filename)]


@cache
def _under_tests(filename: str) -> bool:
    return Path(filename).resolve().is_relative_to(TESTS_DIR)


def _names_in(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names_in(const)
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
            following += [func.__globals__[n] for n in used
                          if isinstance(func.__globals__.get(n), (types.FunctionType, type))]
        frontier = following
    return frozenset(names)


def pytest_collection_modifyitems(config, items):
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
        roots = [getattr(item, "function", None)] + [d.func for name in fixtures for d in defs.get(name, ())]
        names = frozenset().union(*(_reachable_names(r) for r in roots if r is not None))
        marks = set()
        if Path(str(item.path)).resolve().is_relative_to(TESTS_DIR / "gui"):
            marks.add("gui")
        if fixtures & MODEL_FIXTURES:
            marks |= {"model", "slow"}
        if names & SERVES:
            marks.add("server")
        if names & SPAWNS:
            marks.add("subprocess")
        if item.nodeid.startswith(SLOW):
            marks.add("slow")
        present = {m.name for m in item.iter_markers()}
        if not (marks | present) & {"slow", "gui", "subprocess"}:
            marks.add("fast")
        for name in sorted(marks - present):
            item.add_marker(name)
