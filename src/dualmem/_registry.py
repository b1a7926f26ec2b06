"""Named parts a user can plug in: one :class:`Registry` per kind (embedder, controller, answerer, store).

The builtin parts register here the same way a package does. A package adds one through a Python entry
point in the kind's group (``dualmem.embedders``, ``dualmem.controllers``, ``dualmem.answerers``,
``dualmem.stores``), e.g. in its ``pyproject.toml``::

    [project.entry-points."dualmem.embedders"]
    myembedder = "dualmem_myembedder:MyEmbedder"

so after ``pip install dualmem-myembedder``, ``Memory.open(embedder="myembedder")``, ``dualmem --embedder
myembedder`` and ``dualmem serve --embedder myembedder`` build it. Entry points are read when a name is
looked up (nothing is imported before), so a package installed while the process runs is found. A
builtin name wins over a plug-in of the same name; an unknown name is a ``ConfigError`` that lists what
is installed; ``dualmem doctor`` lists every kind.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from dualmem.errors import ConfigError

__all__ = ["Entry", "Registry"]

log = logging.getLogger("dualmem")

Factory = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class Entry:
    """One name a registry knows: where its factory lives and who provides it."""

    name: str
    #: ``"module:attribute"`` (or the factory's qualified name when it was registered as an object)
    target: str
    #: ``"builtin"``, or the plug-in's distribution as ``"name version"``
    origin: str

    @property
    def builtin(self) -> bool:
        return self.origin == "builtin"


class Registry:
    """The factories of one kind of part, by name: the builtin ones and the installed plug-ins.

    ``register(name, "module:attribute")`` (imported on first use) or ``register(name, factory)``; a
    plug-in is an entry point named ``name`` in :attr:`group`. Names are case-insensitive.
    """

    def __init__(self, kind: str, group: str) -> None:
        self.kind = kind
        self.group = group
        self._builtin: dict[str, str | Factory] = {}

    def register(self, name: str, factory: str | Factory) -> None:
        """Add a builtin ``name``; registering a name twice is a ``ConfigError``."""
        key = _key(name)
        if not key or ":" in key:
            raise ConfigError(f"bad {self.kind} name {name!r}", hint="a non-empty name without ':'")
        if key in self._builtin:
            raise ConfigError(f"the {self.kind} {key!r} is registered already")
        self._builtin[key] = factory

    def entries(self) -> list[Entry]:
        """Every name: the builtin ones in registration order, then the plug-ins by name."""
        out = [Entry(name, _target(factory), "builtin") for name, factory in self._builtin.items()]
        out += [Entry(name, point.value, _origin(point)) for name, point in sorted(self._plugins().items())]
        return out

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        key = _key(name)
        return key in self._builtin or key in self._plugins()

    def names(self) -> list[str]:
        return [entry.name for entry in self.entries()]

    def factory(self, name: str) -> Factory:
        """The factory registered as ``name`` (a ``ConfigError`` naming what is installed if none is)."""
        key = _key(name)
        found = self._builtin.get(key)
        if found is not None:
            return _load(found, self.kind, key) if isinstance(found, str) else found
        point = self._plugins().get(key)
        if point is None:
            raise ConfigError(
                f"unknown {self.kind} {name!r}",
                hint=f"installed: {', '.join(self.names())} (a plug-in registers an entry point in the "
                f"{self.group!r} group; `dualmem doctor` lists them)",
            )
        try:
            loaded: Factory = point.load()
        except Exception as exc:  # a broken plug-in: say which one, whatever it raised
            raise ConfigError(
                f"the {self.kind} plug-in {key!r} ({_origin(point)}) failed to load: {exc}",
                hint=f"its entry point is {point.value!r}; reinstall or uninstall it",
            ) from exc
        return loaded

    def _plugins(self) -> dict[str, EntryPoint]:
        found: dict[str, EntryPoint] = {}
        for point in entry_points(group=self.group):
            key = _key(point.name)
            if key in self._builtin:
                log.debug("%s plug-in %r (%s) hidden by the builtin one", self.kind, key, _origin(point))
            else:
                found.setdefault(key, point)
        return found


def _key(name: str) -> str:
    return name.strip().lower()


def _target(factory: str | Factory) -> str:
    if isinstance(factory, str):
        return factory
    return f"{getattr(factory, '__module__', '?')}:{getattr(factory, '__qualname__', repr(factory))}"


def _load(target: str, kind: str, name: str) -> Factory:
    module, _, attribute = target.partition(":")
    try:
        loaded: Factory = getattr(importlib.import_module(module), attribute)
    except ImportError as exc:  # an optional extra that is not installed
        raise ConfigError(
            f"the {kind} {name!r} needs {exc.name or module}, which is not installed",
            hint="install the extra it belongs to (see the README)",
        ) from exc
    return loaded


def _origin(point: EntryPoint) -> str:
    dist = point.dist
    return f"{dist.name} {dist.version}" if dist is not None else "unknown distribution"
