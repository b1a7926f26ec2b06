"""``dualmem mcp``: the MCP server over stdio (tenant from --user/DUALMEM_USER) or streamable HTTP
(tenant from the bearer API key). Extra ``[mcp]``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from dualmem.cli.options import tenant_user
from dualmem.cli.serve import is_loopback, keys_file, open_service_memory
from dualmem.errors import ConfigError

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("mcp", help="run the MCP server (stdio by default; --http for streamable HTTP)")
    p.add_argument("--http", action="store_true", help="streamable HTTP at /mcp, bearer API keys")
    p.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8421, help="HTTP port (default 8421)")
    p.add_argument("--keys", default=None, help="key database (default: beside the memory, NAME.keys.db)")
    p.set_defaults(handler=cmd_mcp)


def cmd_mcp(args: argparse.Namespace) -> dict[str, Any] | None:
    try:
        from dualmem.mcp_server import build_mcp
        from dualmem.server.keys import KeyStore
        from dualmem.server.service import Service
        from dualmem.types import Tenant
    except ImportError as exc:
        raise ConfigError(f"dualmem mcp needs the mcp extra ({exc.name} is missing)",
                          hint="pip install 'dualmem[mcp]'") from exc  # fmt: skip
    if args.http and not is_loopback(args.host):
        print(f"dualmem: warning: serving MCP on {args.host}; use TLS in front of it", file=sys.stderr)
    # stdio needs no keys, but the key file also keeps the consolidation backlog across restarts
    from dualmem.cli.options import default_db

    on_file = "://" not in str(args.db or default_db())
    keys = KeyStore.open(keys_file(args) if args.http or on_file else ":memory:", timeout=args.lock_timeout)
    try:
        with open_service_memory(args) as mem:
            service = Service(mem, keys)
            service.start()
            try:
                if args.http:
                    url = f"http://{args.host}:{args.port}/mcp"
                    server = build_mcp(service, http_url=url)
                    print(f"dualmem: MCP on {url} (bearer API keys)", file=sys.stderr)
                    server.run("streamable-http", host=args.host, port=args.port)
                else:
                    server = build_mcp(service, tenant=Tenant(tenant_user(args), args.agent, args.run))
                    server.run("stdio")
            finally:
                service.stop()
    finally:
        keys.close()
    return None
