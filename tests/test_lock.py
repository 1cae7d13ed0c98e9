"""The lock (requirements/lock.txt) is the tested set every install command takes: it pins every requirement of
pyproject.toml within its range, the README's test command (which .ci/run runs verbatim) installs through it, and the
libraries whose majors broke vlmdesk carry an upper bound (issue 34)."""

import re
import tomllib
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements" / "lock.txt"
PYTHONS = ("3.11", "3.12", "3.13")


def _lock() -> dict[str, list[tuple[Version, Marker | None]]]:
    """name -> [(pinned version, marker)] of the lock (a name may be pinned twice under exclusive markers)."""
    pins: dict[str, list[tuple[Version, Marker | None]]] = {}
    for n, line in enumerate(LOCK.read_text().splitlines(), 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        req = Requirement(text)
        spec = list(req.specifier)
        assert len(spec) == 1 and spec[0].operator == "==", f"lock.txt:{n}: not a pin: {text}"
        pins.setdefault(canonicalize_name(req.name), []).append((Version(spec[0].version), req.marker))
    return pins


def _project_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        reqs += [Requirement(r) for r in extra if not r.startswith("vlmdesk")]
    return reqs


@pytest.mark.parametrize("python", PYTHONS)
def test_the_lock_pins_every_requirement_within_its_range_on_linux_x86_64(python):
    pins = _lock()
    env = {"python_version": python, "python_full_version": f"{python}.0", "sys_platform": "linux"}
    env |= {"platform_system": "Linux", "platform_machine": "x86_64", "implementation_name": "cpython"}
    for req in _project_requirements():
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        found = [v for v, marker in pins.get(canonicalize_name(req.name), []) if marker is None or marker.evaluate(env)]
        assert len(found) == 1, f"lock.txt pins {req.name} {len(found)} times for Python {python} on Linux"
        assert req.specifier.contains(found[0], prereleases=True), f"lock.txt: {req.name}=={found[0]} outside {req}"


def test_majors_that_broke_us_are_bounded():
    reqs = _project_requirements()
    for name in ("transformers", "torch", "pyside6-essentials", "numpy", "pyarrow"):
        bounds = [s for r in reqs if canonicalize_name(r.name) == name for s in r.specifier if s.operator == "<"]
        assert bounds, f"{name} has no upper bound in pyproject.toml"


def test_the_readme_test_command_installs_the_lock_and_ci_runs_it_verbatim():
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"^python3 -m venv \.venv && .*-m pytest$", readme, re.MULTILINE)
    assert len(commands) == 1, commands
    assert "-c requirements/lock.txt" in commands[0]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert commands[0] in ci
    install = commands[0].split(" && .venv/bin/python -m pytest")[0]
    assert (ROOT / ".ci" / "base-install").read_text().count("-c requirements/lock.txt") == 1
    assert install in ci  # the lint step builds the same venv
