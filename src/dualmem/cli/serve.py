"""``dualmem serve``: the HTTP API under uvicorn (extra ``[server]``). Binds 127.0.0.1 by default."""

from __future__ import annotations

import argparse
import ipaddress
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dualmem.cli.options import memory_from_args, tenant_user
from dualmem.errors import ConfigError

if TYPE_CHECKING:
    from dualmem.memory import Memory

__all__ = ["is_loopback", "open_service_memory", "register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("serve", help="run the HTTP API (API keys, tenants, metrics)")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8420, help="port (default 8420; 0 picks a free one)")
    p.add_argument("--keys", default=None, help="key database (default: beside the memory, NAME.keys.db)")
    p.add_argument(
        "--no-auth", action="store_true", help="no API keys: every request is --user (loopback only)"
    )
    p.add_argument("--rate-limit", type=float, default=200.0, help="requests/s per key (0: unlimited)")
    p.add_argument("--max-body-mb", type=float, default=1.0, help="largest JSON body (default 1 MiB)")
    p.add_argument(
        "--consolidate-interval", type=float, default=30.0, help="seconds before a pass over few writes"
    )
    p.add_argument(
        "--metrics-public", action="store_true",
        default=os.environ.get("DUALMEM_METRICS_PUBLIC", "").lower() in ("1", "true", "yes"),
        help="serve /metrics without an API key (default: any valid key; env DUALMEM_METRICS_PUBLIC=1)",
    )  # fmt: skip
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    p.set_defaults(handler=cmd_serve)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def open_service_memory(args: argparse.Namespace) -> Memory:
    """The memory as ``open_memory`` builds it (``--profile``, else the database's stored profile,
    else the default), with no passes of its own (consolidation "off" for this open only) until the
    service drives its scheduler (``Service.start``: the server's trigger, passes as its writes)."""
    from dualmem.cli.options import default_db

    path = args.db or default_db()
    if path != ":memory:" and "://" not in path:
        path = str(Path(path).expanduser())
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    return memory_from_args(args, path, profile_changes={"write__consolidation": "off"})


def keys_file(args: argparse.Namespace) -> str:
    from dualmem.cli.options import default_db
    from dualmem.server.keys import keys_path_for

    if args.keys:
        return str(Path(args.keys).expanduser())
    return keys_path_for(str(args.db or default_db()))


def cmd_serve(args: argparse.Namespace) -> dict[str, Any]:
    from dualmem.types import Tenant

    try:
        import uvicorn

        from dualmem.server import ServerSettings, create_app
        from dualmem.server.keys import KeyStore
        from dualmem.server.routes_inspector import inspector_router
    except ImportError as exc:
        raise ConfigError(f"dualmem serve needs the server extra ({exc.name} is missing)",
                          hint="pip install 'dualmem[server]'") from exc  # fmt: skip
    if args.no_auth and not is_loopback(args.host):
        raise ConfigError(
            f"--no-auth is refused on {args.host}: anyone who can reach it could read every memory",
            hint="bind --host 127.0.0.1, or create keys with `dualmem keys create --user U`",
        )
    settings = ServerSettings(
        auth=not args.no_auth,
        tenant=Tenant(tenant_user(args), args.agent, args.run) if args.no_auth else None,
        rate_limit=args.rate_limit or None,
        max_body_bytes=int(args.max_body_mb * (1 << 20)),
        consolidate_interval_s=args.consolidate_interval,
        metrics_public=args.metrics_public,
    )
    keys = KeyStore.open(keys_file(args), timeout=args.lock_timeout)
    try:
        with open_service_memory(args) as mem:
            app = create_app(mem, keys=keys, settings=settings, routers=[inspector_router()])
            config = uvicorn.Config(
                app, host=args.host, port=args.port, log_level=args.log_level, timeout_graceful_shutdown=30
            )
            auth = "off" if args.no_auth else "on"
            print(
                f"dualmem: serving on http://{args.host}:{args.port} (auth {auth}; inspector at /ui)",
                file=sys.stderr,
            )
            # uvicorn re-raises SIGTERM after its graceful shutdown; a no-op handler lets us go on to
            # close the memory and the key file, then exit 0
            previous = signal.signal(signal.SIGTERM, lambda *_: None)
            try:
                uvicorn.Server(config).run()
            finally:
                signal.signal(signal.SIGTERM, previous)
    finally:
        keys.close()
    return {"stopped": True}
