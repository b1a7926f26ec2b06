"""dualmem as an MCP server (extra ``[mcp]``): ``build_mcp(service, tenant=...)`` and ``KeyVerifier``.

Named ``mcp_server`` so it never shadows the ``mcp`` SDK. Run it with ``dualmem mcp`` (stdio) or
``dualmem mcp --http`` (streamable HTTP, bearer API keys).
"""

from __future__ import annotations

from dualmem.mcp_server.tools import KeyVerifier, build_mcp

__all__ = ["KeyVerifier", "build_mcp"]
