"""Registries of what users extend: model backends, extractors, metrics (and, next, import/export formats).

An entry is plain data (Qt-free): its name, the spec syntax it reads, a line of help, the form fields the app
shows, and the functions that validate and build it. A registry collects its entries from module attributes
(e.g. ``BACKENDS = (BackendEntry(…),)``): from its built-in modules, and from every module named in the
environment variable ``VLMDESK_PLUGINS`` (comma-separated importable module names) — so a backend, an extractor
or a metric is added by writing one module, without editing vlmdesk. Importing a plugin runs its code, in every
command that asks a registry (``--help`` and read-only commands included): docs/guide/safety.md says so to users.
Nothing is imported before a registry is first asked, and what an entry needs to build (torch, an HTTP client) is
imported only when it is built.
See docs/architecture.md, "Registries".
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Generic, Literal, Protocol, TypeVar

from db.errors import UserError

PLUGINS_ENV = "VLMDESK_PLUGINS"
MAX_PLUGINS = 64  # modules named in the variable; anything longer is a mistake, not a configuration

FieldKind = Literal["text", "choice", "int", "path", "flag"]


class PluginError(UserError):
    """A module named in VLMDESK_PLUGINS cannot be imported, or its entries are malformed or clash."""


@dataclass(frozen=True)
class Field:
    """One input of the form the app shows for an entry. ``name`` is the spec option it fills (``""``: the part
    right after the scheme, e.g. the model path); ``choices`` for kind ``choice``."""

    name: str
    label: str
    kind: FieldKind = "text"
    help: str = ""
    choices: tuple[str, ...] = ()
    default: str | None = None
    required: bool = False
    placeholder: str = ""


class Entry(Protocol):
    @property
    def name(self) -> str: ...


E = TypeVar("E", bound=Entry)


def resolve(target: Callable[..., Any] | str) -> Callable[..., Any]:
    """A function, or "module:function" imported now: entries name what is heavy to import without importing it."""
    if callable(target):
        return target
    module, _, attr = target.partition(":")
    found: Callable[..., Any] = getattr(importlib.import_module(module), attr)
    return found


def plugin_names() -> tuple[str, ...]:
    """The module names VLMDESK_PLUGINS lists (each checked: a dotted Python name)."""
    raw = os.environ.get(PLUGINS_ENV, "")[:4096]
    names = tuple(n.strip() for n in raw.split(",") if n.strip())
    if len(names) > MAX_PLUGINS:
        raise PluginError(f"{PLUGINS_ENV}: {len(names)} modules; at most {MAX_PLUGINS}")
    for name in names:
        if not all(part.isidentifier() for part in name.split(".")):
            raise PluginError(f"{PLUGINS_ENV}: {name[:80]!r} is not a module name (e.g. my_package.my_backend)")
    return names


def _import_plugin(name: str) -> ModuleType:
    """The module, imported (its code runs); PluginError naming it and what failed, whatever its code raised."""
    try:
        return importlib.import_module(name)
    except Exception as exc:  # a missing module or dependency, a syntax error, anything the plugin's code raises
        where = traceback.extract_tb(exc.__traceback__)[-1:] if not isinstance(exc, ImportError) else []
        at = f" (at {Path(where[0].filename).name}:{where[0].lineno})" if where else ""
        what = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]  # one line, however long the message
        raise PluginError(f"{PLUGINS_ENV}: cannot import {name!r}: {what}{at}") from None


class Registry(Generic[E]):
    """Entries of one kind, by name, in registration order: built-ins first, then plugins.

    Collected on first use and again whenever VLMDESK_PLUGINS changes (tests switch plugins on and off)."""

    def __init__(self, kind: str, attribute: str, builtins: Iterable[str] = (), *, package: str | None = None):
        self.kind, self.attribute = kind, attribute
        self._builtins, self._package = tuple(builtins), package
        self._entries: dict[str, E] | None = None
        self._plugins: tuple[str, ...] | None = None

    def _modules(self) -> list[str]:
        names = list(self._builtins)
        if self._package is not None:  # every module of the package that declares the attribute
            pkg = importlib.import_module(self._package)
            names += [
                f"{self._package}.{m.name}" for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_")
            ]
        return names

    def _collect(self) -> dict[str, E]:
        plugins = plugin_names()
        if self._entries is not None and plugins == self._plugins:
            return self._entries
        entries: dict[str, E] = {}
        builtins = [importlib.import_module(n) for n in self._modules()]
        # A plugin's entries are of the class the built-in ones are (e.g. BackendEntry): anything else would fail
        # later, deep inside a command, instead of here with the plugin's name.
        kinds = tuple({type(e) for module in builtins for e in getattr(module, self.attribute, ())})
        for module in [*builtins, *(_import_plugin(n) for n in plugins)]:
            declared = getattr(module, self.attribute, ())
            where = f"{PLUGINS_ENV}: {module.__name__}.{self.attribute}"
            if not isinstance(declared, (tuple, list)):
                raise PluginError(f"{where} is of type {type(declared).__name__}, not a tuple of {self.kind} entries")
            for n, entry in enumerate(declared, start=1):
                if kinds and not isinstance(entry, kinds):
                    expected = " or ".join(sorted(k.__name__ for k in kinds))
                    raise PluginError(f"{where}: entry {n} is of type {type(entry).__name__}, not {expected}")
                name = getattr(entry, "name", None)
                if not isinstance(name, str) or not name:
                    raise PluginError(f"{where}: entry {n} has no name")
                if name in entries:
                    raise PluginError(f"{module.__name__}: {self.kind} {name!r} is registered twice")
                entries[name] = entry
        self._entries, self._plugins = entries, plugins
        return entries

    def get(self, name: str) -> E | None:
        return self._collect().get(name)

    def __getitem__(self, name: str) -> E:
        """The entry of a name already checked (KeyError otherwise: a bug, not a user's mistake)."""
        return self._collect()[name]

    def names(self) -> tuple[str, ...]:
        return tuple(self._collect())

    def entries(self) -> tuple[E, ...]:
        return tuple(self._collect().values())

    def help_entries(self) -> tuple[E, ...]:
        """For --help texts, which are built before any command runs: a broken plugin leaves out only itself
        (using it is what reports the error)."""
        try:
            return self.entries()
        except PluginError:
            saved = os.environ.pop(PLUGINS_ENV, None)
            try:
                return self.entries()
            finally:
                if saved is not None:
                    os.environ[PLUGINS_ENV] = saved
