"""What the three store backends share: context management, read-only refusals, binding the
embedder, the stored context window, health-check repair and the checks of cross-user links.

A backend subclasses :class:`StoreBase` and supplies the primitives (``transaction``, ``get_meta``,
``set_meta``, ``get_nodes`` ...) and a few hooks (``_owners``, ``_insert_keys``, ``_check``,
``_repair``, ``rebuild_context`` ...); the methods here compose them the same way for every backend.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from functools import cached_property
from typing import cast

from dualmem._closing import Closing
from dualmem.errors import EmbedderMismatch, InvalidInput, NotFound, ReadOnlyStore
from dualmem.plane import _components as components
from dualmem.plane import codec, context
from dualmem.plane.base import Backend, Candidate, Decision, candidates_of
from dualmem.plane.check import CheckReport
from dualmem.plane.lexindex import LexicalComponent
from dualmem.types import Edge, JSONValue, Node, Tenant, Vector

__all__ = ["StoreBase", "bound_dim", "check_decisions", "check_dims", "check_edges"]


def check_dims(vectors: Sequence[Vector], stored: int | None) -> None:
    """Refuse vectors of another dimension than each other or the store's (``EmbedderMismatch``)."""
    dims = {int(v.shape[0]) for v in vectors}
    if stored is not None:
        dims.add(stored)
    if len(dims) > 1:
        raise EmbedderMismatch(
            f"embeddings of dimensions {sorted(dims)} cannot share one store",
            hint=f"use the embedder that built this store (dim {stored})",
        )


def bound_dim(bound: JSONValue) -> int | None:
    """The dimension recorded by ``bind_embedder`` (the ``embedder`` meta value), if any."""
    if isinstance(bound, dict) and isinstance(bound.get("dim"), int):
        return cast(int, bound["dim"])
    return None


def check_edges(edges: Sequence[Edge], users: Mapping[str, str]) -> None:
    """``NotFound`` for an edge to a node not in ``users`` (node id -> its user), ``InvalidInput``
    for one between two users' nodes."""
    missing = ({e.source for e in edges} | {e.target for e in edges}) - users.keys()
    if missing:
        raise NotFound(f"edges refer to unknown nodes: {sorted(missing)[:5]}")
    crossing = [e for e in edges if users[e.source] != users[e.target]]
    if crossing:
        raise InvalidInput(
            f"an edge cannot link two users' memories: {crossing[0].source} -> {crossing[0].target}"
        )


def check_decisions(decisions: Sequence[Decision], users: Mapping[str, str]) -> None:
    """``NotFound`` for a decision on a node not in ``users`` (node id -> its user), ``InvalidInput``
    for a pair decision whose other node is another user's (an unknown other node is allowed)."""
    missing = {d.node_id for d in decisions} - users.keys()
    if missing:
        raise NotFound(f"decisions refer to unknown nodes: {sorted(missing)[:5]}")
    for d in decisions:
        other = users.get(d.other_id) if d.other_id is not None else None
        if other is not None and other != users[d.node_id]:
            raise InvalidInput(f"a decision cannot link two users' memories: {d.node_id}")


class StoreBase(Closing, ABC):
    """The lifecycle and the write checks common to ``InMemoryStore``, ``SQLiteStore`` and
    ``PostgresStore``."""

    read_only: bool = False
    #: the session window of the stored neighbour context (``set_context_window``)
    _context_window: int = context.CONTEXT_WINDOW

    # -- primitives every backend has ----------------------------------------------------------
    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def transaction(self) -> AbstractContextManager[None]: ...

    @abstractmethod
    def get_meta(self, key: str) -> JSONValue: ...

    @abstractmethod
    def set_meta(self, key: str, value: JSONValue) -> None: ...

    @abstractmethod
    def get_nodes(self, node_ids: Collection[str], tenant: Tenant | None = None) -> dict[str, Node]: ...

    @abstractmethod
    def find_keys(self, user: str, keys: Collection[str]) -> dict[str, str]: ...

    @property
    @abstractmethod
    def lexical(self) -> LexicalComponent: ...

    def lexical_search(self, tenant: Tenant, query: str, k: int) -> list[tuple[str, float]]:
        """BM25 over the nodes' text: the lexical component's field ``"nodes"``."""
        return self.lexical.search("nodes", tenant, query, k)

    # -- the components (``MemoryStore``): the primitives below, composed ------------------------
    @cached_property
    def vectors(self) -> components.Vectors:
        return components.Vectors(cast(Backend, self))

    @cached_property
    def links(self) -> components.Links:
        return components.Links(cast(Backend, self))

    @cached_property
    def context(self) -> components.Context:
        return components.Context(cast(Backend, self))

    @cached_property
    def log(self) -> components.Log:
        return components.Log(cast(Backend, self))

    @cached_property
    def meta(self) -> components.Meta:
        return components.Meta(cast(Backend, self))

    # -- lifecycle ----------------------------------------------------------------------------
    def _guard(self) -> AbstractContextManager[object]:
        """Held around a check-then-write of this process (a lock where the backend has one)."""
        return nullcontext()

    def _refuse_read_only(self, what: str, hint: str = "open the memory without read_only") -> None:
        if self.read_only:
            raise ReadOnlyStore(what, hint=hint)

    # -- the embedder ------------------------------------------------------------------------
    def bind_embedder(self, name: str, dim: int) -> None:
        """Check first; write only for a store no embedder has bound yet (a read-only one is read
        by any embedder then: nothing was ever embedded into it)."""
        with self._guard():
            bound = self.get_meta("embedder")
            if bound is not None:
                codec.check_embedder(bound, name, dim)
                return
            if self.read_only:
                return
            with self.transaction():
                bound = self.get_meta("embedder")
                if bound is None:
                    self._first_dimension(int(dim))
                    self.set_meta("embedder", {"name": name, "dim": int(dim)})
                    return
                codec.check_embedder(bound, name, dim)

    def _first_dimension(self, dim: int) -> None:
        """Inside the first ``bind_embedder``'s write: fix what depends on the dimension (a column)."""

    # -- nodes --------------------------------------------------------------------------------
    def get_node(self, node_id: str, tenant: Tenant | None = None) -> Node | None:
        return self.get_nodes([node_id], tenant).get(node_id)

    def candidates(self, node_ids: Collection[str], tenant: Tenant) -> dict[str, Candidate]:
        """Two reads in one snapshot (``candidates_of``): a store whose full reads are as cheap as a
        projection composes it of ``get_nodes`` and ``node_context``."""
        return candidates_of(self, node_ids, tenant)  # type: ignore[arg-type]

    # -- links between users -------------------------------------------------------------------
    @abstractmethod
    def _owners(self, node_ids: Collection[str]) -> dict[str, str]:
        """The user of each stored node among ``node_ids`` (inside the caller's transaction)."""

    # -- session neighbours --------------------------------------------------------------------
    def session_neighbours(
        self, tenant: Tenant, node_ids: Collection[str], window: int
    ) -> dict[str, tuple[tuple[str, int], ...]]:
        """Every id of ``node_ids`` (once, in order) with its session neighbours, ``()`` for none."""
        out: dict[str, tuple[tuple[str, int], ...]] = dict.fromkeys(node_ids, ())
        if window > 0 and out:
            out.update(self._session_neighbours(tenant, list(out), window))
        return out

    @abstractmethod
    def _session_neighbours(
        self, tenant: Tenant, node_ids: list[str], window: int
    ) -> Mapping[str, tuple[tuple[str, int], ...]]:
        """The neighbours (id, offset) of those of ``node_ids`` that have any (``window`` > 0)."""

    # -- idempotency keys ----------------------------------------------------------------------
    def put_keys(self, user: str, keys: Mapping[str, str]) -> None:
        if not keys:
            return
        with self._guard(), self.transaction():
            users = self._owners(set(keys.values()))
            wrong = [node_id for node_id in keys.values() if users.get(node_id) != user]
            if wrong:
                raise NotFound(f"write keys refer to nodes {user!r} does not have: {sorted(wrong)[:5]}")
            taken = self.find_keys(user, keys)
            if taken:
                raise InvalidInput(f"write keys already used: {sorted(taken)[:5]}")
            self._insert_keys(user, keys)

    @abstractmethod
    def _insert_keys(self, user: str, keys: Mapping[str, str]) -> None:
        """Store checked keys (inside ``put_keys``' transaction)."""

    # -- the stored neighbour context ------------------------------------------------------------
    def rebuild_context(self) -> int:
        """Recompute every node's context from the nodes (the repair of a derived index)."""
        return 0

    def _load_context_window(self, stale_key: str) -> None:
        """At open: the window the store was built with; a context left stale is rebuilt."""
        stored = self.get_meta("context_window")
        if isinstance(stored, int):
            self._context_window = stored
        if self.get_meta(stale_key) is not None and not self.read_only:
            self.rebuild_context()

    def set_context_window(self, window: int) -> None:
        if window == self._context_window or self.read_only:
            return
        with self._guard(), self.transaction():
            self._context_window = window
            self.set_meta("context_window", window)
            self.rebuild_context()

    # -- health ------------------------------------------------------------------------------------
    def check(self, *, repair: bool = False) -> CheckReport:
        """What is damaged or inconsistent; with ``repair``, what the store can fix is fixed and
        the store checked again (the report's ``before`` holds what was found first)."""
        with self._guard():
            if repair:
                self._refuse_read_only("cannot repair a memory opened read-only", hint="open it writable")
            report = self._check()
            return self._repair(report) if repair else report

    @abstractmethod
    def _check(self) -> CheckReport: ...

    @abstractmethod
    def _repair(self, report: CheckReport) -> CheckReport:
        """Fix what ``report`` found that this store can fix; the report of a check after it."""

    def _rechecked(self, report: CheckReport, repaired: Sequence[str]) -> CheckReport:
        """A check after a repair that fixed ``repaired`` of what ``report`` found."""
        after = self._check()
        return CheckReport(
            after.healthy, after.problems, repaired=tuple(dict.fromkeys(repaired)), before=report.problems
        )
