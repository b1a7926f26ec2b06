"""``dualmem keys create|list|revoke``: API keys for ``dualmem serve`` and ``dualmem mcp --http``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from dualmem.cli.serve import keys_file

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("keys", help="API keys of the service (stored hashed; each bound to a tenant)")
    p.add_argument("--keys", default=None, help="key database (default: beside the memory, NAME.keys.db)")
    keys_sub = p.add_subparsers(dest="keys_command", required=True, metavar="ACTION")
    c = keys_sub.add_parser("create", help="a new key; the token is printed once")
    c.add_argument("--user", dest="key_user", default=None, help="the tenant's user (default: --user)")
    c.add_argument("--agent", dest="key_agent", default=None)
    c.add_argument("--run", dest="key_run", default=None)
    c.add_argument("--admin", action="store_true", help="an admin key: manages keys, no memory access")
    c.add_argument("--label", default=None, help="a note to recognise the key by")
    c.set_defaults(handler=cmd_create)
    ls = keys_sub.add_parser("list", help="every key (ids and tenants, never secrets)")
    ls.set_defaults(handler=cmd_list)
    r = keys_sub.add_parser("revoke", help="revoke a key by id (takes effect on the next request)")
    r.add_argument("key_id")
    r.set_defaults(handler=cmd_revoke)


def _open(args: argparse.Namespace) -> Any:
    from dualmem.server.keys import KeyStore

    return KeyStore.open(keys_file(args), timeout=args.lock_timeout)


def _key_json(k: Any) -> dict[str, Any]:
    return {
        "id": k.id,
        "user": k.user,
        "agent": k.agent,
        "run": k.run,
        "admin": k.admin,
        "label": k.label,
        "created_at": k.created_at.isoformat(),
        "revoked_at": k.revoked_at.isoformat() if k.revoked_at else None,
    }


def cmd_create(args: argparse.Namespace) -> dict[str, Any]:
    user = args.key_user or (None if args.admin else args.user)
    store = _open(args)
    try:
        key, token = store.create(
            user=user, agent=args.key_agent, run=args.key_run, admin=args.admin, label=args.label
        )
    finally:
        store.close()
    print("dualmem: store this token now; it is not shown again", file=sys.stderr)
    return {"token": token, "key": _key_json(key)}


def cmd_list(args: argparse.Namespace) -> list[dict[str, Any]]:
    store = _open(args)
    try:
        return [_key_json(k) for k in store.list()]
    finally:
        store.close()


def cmd_revoke(args: argparse.Namespace) -> dict[str, Any]:
    store = _open(args)
    try:
        return {"revoked": _key_json(store.revoke(args.key_id))}
    finally:
        store.close()
