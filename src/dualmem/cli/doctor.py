"""``dualmem doctor``: what this installation has — the version, and every embedder, controller,
answerer and store (by URL scheme) that can be named, builtin or from an installed plug-in package."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from dualmem._registry import Registry

__all__ = ["installed", "register", "render"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "doctor", help="list the installed embedders, controllers, answerers and stores (plug-ins included)"
    )
    p.set_defaults(handler=cmd_doctor, render=render)


def _registries() -> dict[str, Registry]:
    from dualmem.control import CONTROLLERS
    from dualmem.embed import EMBEDDERS
    from dualmem.plane import STORES
    from dualmem.reason import ANSWERERS

    return {"embedders": EMBEDDERS, "controllers": CONTROLLERS, "answerers": ANSWERERS, "stores": STORES}


def installed() -> dict[str, list[dict[str, str]]]:
    """Every part by kind: its name, ``builtin`` or the plug-in's distribution, and its factory."""
    return {
        kind: [{"name": e.name, "origin": e.origin, "target": e.target} for e in registry.entries()]
        for kind, registry in _registries().items()
    }


def cmd_doctor(args: argparse.Namespace) -> dict[str, Any]:
    del args
    from dualmem._version import __version__

    groups = {kind: registry.group for kind, registry in _registries().items()}
    return {
        "version": __version__,
        "python": sys.version.split()[0],
        "entry_point_groups": groups,
        **installed(),
    }


def render(data: dict[str, Any]) -> str:
    lines = [f"dualmem {data['version']} (Python {data['python']})"]
    for kind, group in data["entry_point_groups"].items():
        lines.append(f"{kind} (plug-ins: entry point group {group}):")
        for entry in data[kind]:
            origin = "" if entry["origin"] == "builtin" else f"  [plug-in: {entry['origin']}]"
            lines.append(f"  {entry['name']}{origin}")
    return "\n".join(lines)
