"""A Python client for ``dualmem serve`` with the embedded ``Scope``'s method names and types.

    from dualmem.client import Client
    with Client("http://127.0.0.1:8420", api_key="dmk_...") as mem:
        mem.add("Mira: my old bicycle broke.", at="2024-05-14T10:00:00Z")
        print(mem.answer("Why did Mira buy a new bicycle?").text)

The tenant is the API key's. Results are the same dataclasses as embedded (``Retrieval``,
``Evidence``, ``Node``, ``Answer``...; nodes come without their embedding vectors) and errors are
the same ``dualmem.errors`` classes, so code moves between embedded and served without change
(a key the server refuses is an ``AuthError``).
Writes carry an ``Idempotency-Key``, so the client retries them safely after a 429/503 or a lost
connection.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from dualmem import errors as errs
from dualmem.errors import InvalidInput, RuntimeFailure
from dualmem.vocab import (
    MAX_K,
    Answer,
    BackfillReport,
    Closing,
    ConsolidationReport,
    Filter,
    ImportReport,
    Inspection,
    JSONValue,
    Node,
    Observation,
    Retrieval,
    Tenant,
    TimeInput,
    WriteReport,
    load_observations,
)
from dualmem.wire import decode as d
from dualmem.wire import encode as e
from dualmem.wire import schemas as w

__all__ = ["Client"]

M = TypeVar("M", bound=BaseModel)
RETRY_STATUS = {429, 502, 503, 504}


def _raise_for(response: httpx.Response) -> None:
    try:
        doc = response.json()
    except ValueError:
        doc = None
    raise d.error_from(response.status_code, doc, response.reason_phrase)


def _k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise InvalidInput(f"k must be an integer from 1 to {MAX_K}, got {k!r}")
    return k


class Client(Closing):
    """The tenant-bound memory behind an API key on a dualmem server (synchronous, httpx)."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=base_url, headers=headers, timeout=timeout, transport=transport)
        self.retries = retries
        self._tenant: Tenant | None = None

    def close(self) -> None:
        self._http.close()

    # -- transport ----------------------------------------------------------------------------
    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        attempt = 0
        while True:
            try:
                response = self._http.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                if attempt >= self.retries:
                    raise RuntimeFailure(f"cannot reach the dualmem server: {exc}") from exc
            else:
                if response.status_code < 400:
                    return response
                if response.status_code not in RETRY_STATUS or attempt >= self.retries:
                    _raise_for(response)
                time.sleep(min(float(response.headers.get("retry-after", "0.5") or 0.5), 5.0))
            attempt += 1

    def _json(self, model: type[M], method: str, path: str, **kwargs: Any) -> M:
        response = self._send(method, path, **kwargs)
        try:
            return model.model_validate_json(response.content)
        except ValidationError as exc:
            raise RuntimeFailure(
                f"the server answered {path} with an unexpected document: {d.describe_error(exc)}"
            ) from exc

    # -- write --------------------------------------------------------------------------------
    def add(  # noqa: PLR0913 - keyword-only: the observation's fields and its idempotency key
        self,
        text: str,
        *,
        speaker: str | None = None,
        at: TimeInput = None,
        source: str | None = None,
        session: str | None = None,
        turn_id: str | None = None,
        metadata: Mapping[str, JSONValue] | None = None,
        key: str | None = None,
    ) -> str:
        """Store one observation; returns its node id (the stored one for a known ``key``/turn)."""
        obs = {
            "text": text, "speaker": speaker, "at": e.time_in(at), "source": source, "session": session,
            "turn_id": turn_id, "metadata": dict(metadata or {}), "key": key,
        }  # fmt: skip
        return self.add_many([obs])[0]

    def add_many(
        self,
        observations: Iterable[Observation | str | Mapping[str, Any]],
        *,
        chunk_size: int = 256,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> list[str]:
        """Store observations in order, ``chunk_size`` per request (each request is all or nothing);
        a mapping's ``key`` is its idempotency key, as embedded."""
        items = [{k: v for k, v in e.observation_in(o).items() if v is not None} for o in observations]
        size = max(1, min(chunk_size, w.MAX_BATCH))
        ids: list[str] = []
        for start in range(0, len(items), size):
            body = {"observations": items[start : start + size]}
            headers = {"Idempotency-Key": uuid.uuid4().hex}
            ids += self._json(w.AddResponse, "POST", "/v1/memories", json=body, headers=headers).ids
            if on_progress is not None:
                on_progress(len(ids), len(items))
        return ids

    def ingest(self, path: str | Path, *, on_progress: Callable[[int, int], None] | None = None) -> list[str]:
        """Load a conversation file (dualmem JSON or LoCoMo) here and store every turn on the server."""
        return self.add_many(load_observations(Path(path)), on_progress=on_progress)

    def update(
        self, id: str, text: str, *, at: TimeInput = None, metadata: Mapping[str, JSONValue] | None = None
    ) -> str:
        """Correct a memory; returns the new version's id (``metadata`` replaces the new version's)."""
        body = {
            "text": text,
            "at": e.time_in(at),
            **({} if metadata is None else {"metadata": dict(metadata)}),
        }
        return self._json(w.UpdateResponse, "PATCH", f"/v1/memories/{id}", json=body).new

    def forget(self, id: str | None = None, *, where: Filter | None = None) -> int:
        """Remove memories for good: by id, or every match of ``where``; returns how many went."""
        if (id is None) == (where is None):
            raise InvalidInput("pass exactly one of a node id or where=Filter(...)")
        if id is not None:
            return self._json(w.ForgetResponse, "DELETE", f"/v1/memories/{id}").forgotten
        assert where is not None
        if where.empty():
            raise InvalidInput("an empty filter would select every memory", hint="use forget_all() for that")
        return self._json(w.ForgetResponse, "POST", "/v1/forget", json=e.filter_fields(where)).forgotten

    delete = forget

    def forget_all(self) -> int:
        return self._json(w.ForgetResponse, "POST", "/v1/forget", json={"all": True}).forgotten

    def would_forget(self, id: str | None = None, *, where: Filter | None = None) -> list[Node]:
        """What :meth:`forget` would remove now (with neither argument: :meth:`forget_all`), in time
        order, removing nothing."""
        if id is not None and where is not None:
            raise InvalidInput("pass at most one of a node id or where=Filter(...)")
        if id is not None:
            out = self._json(w.WouldForgetOut, "GET", f"/v1/memories/{id}/forget-preview")
        else:
            body = {"all": True} if where is None or where.empty() else e.filter_fields(where)
            out = self._json(w.WouldForgetOut, "POST", "/v1/forget/preview", json=body)
        return [d.node_from(n) for n in out.items]

    def repair(self) -> WriteReport:
        """Complete the controller decisions of the tenant's memories left pending by an outage."""
        out = self._json(w.RepairOut, "POST", "/v1/repair")
        return d.write_report_from(out)

    def backfill_views(self) -> BackfillReport:
        """Edges of views turned on after the tenant's memories were written (``POST /v1/repair/views``)."""
        out = self._json(w.BackfillOut, "POST", "/v1/repair/views")
        return d.backfill_from(out)

    def consolidate(self) -> ConsolidationReport:
        return d.consolidation_from(self._json(w.ConsolidationOut, "POST", "/v1/consolidate"))

    def import_jsonl(self, path: str | Path) -> ImportReport:
        """Load an export into this key's tenant: all of it, or nothing on any error."""
        try:
            content = Path(path).read_bytes()
        except OSError as exc:
            raise InvalidInput(f"cannot read {path}: {exc.strerror}") from exc
        headers = {"content-type": "application/x-ndjson"}
        return d.import_from(self._json(w.ImportOut, "POST", "/v1/import", content=content, headers=headers))

    # -- read ---------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        k: int = 10,
        where: Filter | None = None,
        group: Literal["turn", "session"] = "turn",
        now: TimeInput = None,
    ) -> Retrieval:
        """Adaptive retrieval on the server; ``where`` restricts the evidence as embedded; ``group``
        and ``now`` as ``Memory.search``'s."""
        body = {"query": query, "k": _k(k), "trace": True, "group": group, **e.filter_fields(where)}
        if now is not None:
            body["now"] = e.time_in(now)
        return d.retrieval_from(self._json(w.SearchOut, "POST", "/v1/search", json=body))

    def answer(self, query: str, *, k: int = 10, where: Filter | None = None) -> Answer:
        body = {"query": query, "k": _k(k), "trace": True, **e.filter_fields(where)}
        return d.answer_from(self._json(w.AnswerOut, "POST", "/v1/answer", json=body))

    def list_memories(
        self,
        *,
        where: Filter | None = None,
        limit: int | None = 100,
        offset: int = 0,
        status: Literal["current", "superseded", "pending", "complete"] | None = None,
    ) -> list[Node]:
        """The tenant's memories in time order, those matching ``where`` (and ``status``), ``offset``
        skipped and at most ``limit`` (``None``: all), fetched page by page."""
        out: list[Node] = []
        at: int | None = offset
        while at is not None and (limit is None or len(out) < limit):
            size = w.MAX_LIST if limit is None else min(w.MAX_LIST, limit - len(out))
            body = {**e.filter_fields(where), "limit": size, "offset": at}
            if status is not None:
                body["status"] = status
            page = self._json(w.NodeList, "POST", "/v1/list", json=body)
            out += [d.node_from(n) for n in page.items]
            at = page.next_offset
        return out

    def get(self, id: str) -> Node:
        return d.node_from(self._json(w.NodeOut, "GET", f"/v1/memories/{id}"))

    def inspect(self, id: str) -> Inspection:
        return d.inspection_from(self._json(w.InspectionOut, "GET", f"/v1/memories/{id}/inspect"))

    def history(self, id: str) -> list[Node]:
        out = self._json(w.HistoryOut, "GET", f"/v1/memories/{id}/history")
        return [d.node_from(n) for n in out.versions]

    def nodes(self) -> Iterator[Node]:
        """Every memory of the tenant, oldest first (fetched page by page)."""
        cursor: str | None = None
        while True:
            params: dict[str, str | int] = {"limit": 500, **({"cursor": cursor} if cursor else {})}
            page = self._json(w.NodePage, "GET", "/v1/memories", params=params)
            yield from (d.node_from(n) for n in page.items)
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def count(self) -> int:
        return sum(1 for _ in self.nodes())

    def stats(self) -> dict[str, JSONValue]:
        out: dict[str, JSONValue] = self._send("GET", "/v1/stats").json()
        out.pop("consolidation_backlog", None)
        return out

    def export_jsonl(self, path: str | Path) -> int:
        """Write the tenant's whole memory as JSON Lines (streamed); returns the lines written."""
        count = 0
        with self._http.stream("GET", "/v1/export") as response:
            if response.status_code >= 400:
                response.read()
                _raise_for(response)
            with Path(path).open("w", encoding="utf-8") as fh:
                for line in response.iter_lines():
                    if line:
                        fh.write(line + "\n")
                        count += 1
        return count

    @property
    def tenant(self) -> Tenant:
        if self._tenant is None:
            me = self._json(w.WhoAmI, "GET", "/v1/whoami")
            if me.tenant is None:
                raise errs.AuthError(
                    "this API key is an admin key and has no tenant", hint="use a key created with --user"
                )
            self._tenant = Tenant(me.tenant.user, me.tenant.agent, me.tenant.run)
        return self._tenant
