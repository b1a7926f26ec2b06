"""Building and closing the parts a :class:`~dualmem.memory.Memory` opens for itself.

The ownership rule: a memory closes what it created (each part named by a string in ``Memory.open``,
and the store it opened); a part the caller passed in as an object is the caller's to close. Options
for named parts come in one typed :class:`OpenOptions`; this module never reads the environment.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dualmem.errors import ConfigError
from dualmem.plane.sqlite import Synchronous, check_mmap_size

__all__ = ["OpenOptions", "build", "close_all"]


@dataclass(frozen=True, slots=True)
class OpenOptions:
    """Options for the parts ``Memory.open`` builds from names, and for the store it opens.

    ``controller`` is a typed config (``dualmem.control.config.LLMConfig`` / ``JevConfig``, the
    documented way) or a mapping of keyword options for ``create_controller(name, **controller)``;
    ``answerer`` and ``embedder`` are mappings. ``lock_timeout`` is how long a locked database is
    waited for. Nothing here reads the environment: adapters call ``LLMConfig.from_env()``.
    ``synchronous="full"`` makes every SQLite commit survive power loss (``"normal"``: a killed process).
    ``mmap_size``: bytes of a SQLite file read through a memory map (``None``: the default,
    none; e.g. ``256 << 20``), see ``dualmem.plane.sqlite`` (``MMAP_SIZE``); PostgreSQL takes none.
    ``repair_on_open``: a writable open with the builtin (offline) controller completes the nodes a
    controller outage left pending before it returns; a remote controller is never called at open.
    ``profile_changes``: ``Profile.with_`` changes applied to the profile this open resolved (given,
    stored in the database, or the default) for this open only, never stored (``dualmem serve`` turns
    the in-process consolidation off this way).
    """

    embedder: Mapping[str, Any] = field(default_factory=dict)
    controller: Mapping[str, Any] | Any = field(default_factory=dict)
    answerer: Mapping[str, Any] = field(default_factory=dict)
    lock_timeout: float = 5.0
    synchronous: Synchronous = "normal"
    repair_on_open: bool = True
    mmap_size: int | None = None
    profile_changes: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("embedder", "controller", "answerer"):
            value = getattr(self, name)
            if name == "controller" and _is_config(value):
                continue
            if not isinstance(value, Mapping):
                raise ConfigError(
                    f"OpenOptions.{name} must be a mapping of keyword options",
                    hint=f"e.g. OpenOptions({name}={{'base_url': ..., 'model': ...}})",
                )
        timeout = self.lock_timeout
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout >= 0:
            raise ConfigError(
                f"lock_timeout must be a number of seconds >= 0, got {timeout!r}", hint="e.g. 5.0"
            )
        if self.mmap_size is not None:
            check_mmap_size(self.mmap_size)


def _is_config(value: object) -> bool:
    from dualmem.control.config import JevConfig, LLMConfig

    return isinstance(value, LLMConfig | JevConfig)


def build(
    part: object,
    name_factory: Callable[..., Any],
    options: Mapping[str, Any] | Any,
    *,
    what: str,
    owned: list[Any],
) -> Any:
    """``part`` itself when it is an object (the caller keeps it), else a new one from its name (ours).

    ``options`` is a mapping of keyword options or a typed config (passed on as ``config=``).
    """
    if not isinstance(part, str):
        if options:
            raise ConfigError(
                f"{what} options were given but the {what} was passed as an object",
                hint=f"configure that object yourself, or pass the {what} by name",
            )
        return part
    made = name_factory(part, config=options) if _is_config(options) else name_factory(part, **options)
    owned.append(made)
    return made


def close_all(parts: Iterable[object]) -> None:
    """Close every part that has a ``close()``, in reverse order; every one is tried even if one fails."""
    with contextlib.ExitStack() as stack:
        for part in parts:
            close = getattr(part, "close", None)
            if callable(close):
                stack.callback(close)
