"""``with`` support for whatever holds a resource: one mixin instead of the same ``__enter__`` and
``__exit__`` in every class with a ``close()`` (stores, clients, controllers, embedders)."""

from __future__ import annotations

from types import TracebackType
from typing import Self

__all__ = ["Closing"]


class Closing:
    """``with obj: ...`` closes ``obj`` on the way out; a subclass defines ``close``."""

    __slots__ = ()

    def close(self) -> None:
        """Release what the object holds (nothing here)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
