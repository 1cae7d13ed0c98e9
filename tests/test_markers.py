"""The markers tests/conftest.py applies, on a sample test tree collected by a nested pytest (pytester).

The sample gets the real conftest and the markers declared in pyproject.toml with --strict-markers, so a marker
the conftest applies but pyproject does not declare fails here too.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SAMPLE = """
import subprocess
import sys

import pytest
from hypothesis import given, strategies as st


def spawn():
    return subprocess.run([sys.executable, "-c", "pass"])


class Launcher:
    def go(self):
        return spawn()


@pytest.fixture
def launched():
    return Launcher()


def test_pure():
    assert 1 + 1 == 2


def test_calls_a_helper_that_spawns():
    spawn()


def test_uses_a_fixture_whose_class_spawns(launched):
    launched.go()


def test_uses_a_model(tiny_llava_dir):
    pass


def test_uses_the_fault_server(serve):
    pass


@pytest.mark.slow
def test_marked_by_hand():
    pass


def test_drives_a_widget(qtbot):
    pass


@pytest.mark.parametrize("n", [1, 2])
def test_parametrised(n):
    pass


@pytest.fixture(params=["llava"])
def vlm(request):
    return request.getfixturevalue(f"tiny_{request.param}_dir")


def test_asks_for_a_model_by_name(vlm):
    pass


@given(st.integers())
def test_property(n):
    pass
"""


# Appended to the sample's conftest: one collection writes every test's markers.
REPORT = """

def pytest_collection_finish(session):
    import json
    marks = {item.nodeid.split("::", 1)[1]: sorted({m.name for m in item.iter_markers()} - {"parametrize"})
             for item in session.items}
    (session.config.rootpath / "marks.json").write_text(json.dumps(marks))
"""


@pytest.mark.slow  # a nested pytest session: seconds
def test_markers_follow_what_each_test_does(pytester):
    pytester.makeconftest((ROOT / "tests" / "conftest.py").read_text() + REPORT)
    markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    pytester.makeini("[pytest]\naddopts = --strict-markers\nmarkers =\n" + "".join(f"    {m}\n" for m in markers))
    pytester.makepyfile(test_sample=SAMPLE)
    (pytester.path / "gui").mkdir()
    (pytester.path / "gui" / "test_window.py").write_text("def test_window():\n    pass\n")

    result = pytester.runpytest_inprocess("--collect-only", "-q", "-p", "no:pytestqt", "-p", "no:hypothesispytest")
    assert result.ret == 0, result.stdout.str()
    assert json.loads((pytester.path / "marks.json").read_text()) == {
        "test_pure": ["fast"],
        "test_parametrised[1]": ["fast"],
        "test_parametrised[2]": ["fast"],
        "test_uses_the_fault_server": ["server"],
        "test_calls_a_helper_that_spawns": ["subprocess"],
        "test_uses_a_fixture_whose_class_spawns": ["subprocess"],
        "test_uses_a_model": ["model", "slow"],
        "test_marked_by_hand": ["slow"],
        "test_asks_for_a_model_by_name[llava]": ["model", "slow"],
        "test_property": ["property", "slow"],
        "test_window": ["gui"],
        "test_drives_a_widget": ["gui"],
    }
