"""A tenant-bound handle on a :class:`~dualmem.memory.Memory`: ``mem.scope(user, agent=None, run=None)``.

Its methods are the memory's, minus the tenant keywords: every call is made for :attr:`Scope.tenant`
and can reach nothing outside it (another tenant's id is ``NotFound``). A scope holds no resources of
its own; closing the memory ends it.
"""

from __future__ import annotations

from dualmem.memory import Scope

__all__ = ["Scope"]
