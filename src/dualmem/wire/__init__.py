"""The wire layer: dualmem's values as JSON documents and back, one copy for every side.

- :mod:`dualmem.wire.schemas`: the documents of the HTTP API (pydantic models, their limits) and
  value -> document (``node_out``, ``search_out``, ``answer_out``, ``repair_out``, ...);
- :mod:`dualmem.wire.decode`: document -> value (``node_from``, ``retrieval_from``, ...);
- :mod:`dualmem.wire.encode`: a call's arguments -> request fields (observations, a filter, a time).

It sits below ``dualmem.server`` and ``dualmem.client``, which both use it (the server answers with
the documents, the client reads them back into the same values), and imports neither FastAPI nor
httpx. The values themselves are in :mod:`dualmem.vocab`. Importing this package imports nothing.
"""

from __future__ import annotations

__all__: list[str] = []
