"""Memory growth over time: how many memories and how many edges per view a tenant had, by date.

Used by the web inspector (``GET /v1/inspector/growth``) and ``dualmem stats --plot FILE.png``.
The plot needs matplotlib (the ``bench`` extra), imported only when plotting.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from dualmem.errors import ConfigError
from dualmem.vocab import VIEWS, Store, Tenant

__all__ = ["Clock", "Growth", "GrowthPoint", "growth", "plot_growth"]

# the inspector page's colours (static/graph.js)
VIEW_COLOURS = {"semantic": "#1f77b4", "temporal": "#2ca02c", "causal": "#d62728", "entity": "#9467bd"}


@dataclass(frozen=True, slots=True)
class GrowthPoint:
    """Totals at the end of ``at``'s bucket."""

    at: dt.datetime
    nodes: int
    current: int
    edges: dict[str, int]


@dataclass(frozen=True, slots=True)
class Growth:
    points: tuple[GrowthPoint, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "views": list(VIEWS),
            "points": [
                {"at": p.at.isoformat(), "nodes": p.nodes, "current": p.current, "edges": dict(p.edges)}
                for p in self.points
            ],
        }


Clock = Literal["observed", "written"]


def growth(store: Store, tenant: Tenant, *, by: Clock = "observed", buckets: int = 200) -> Growth:
    """Cumulative counts at up to ``buckets`` evenly spaced times from the first event to the last.

    ``by="written"`` counts each record when it was stored (``created_at``). ``by="observed"`` puts
    each memory at its observation time (``at``, else when it was written), an edge at the later of
    its two ends, and a superseded memory's end at its successor's time: the growth of what the
    memory knew along the conversation's own timeline.
    """
    nodes = {n.id: n for n in store.iter_nodes(tenant)}

    def clock(node_id: str, fallback: dt.datetime) -> dt.datetime:
        n = nodes.get(node_id)
        if n is None:
            return fallback
        return n.created_at if by == "written" or n.at is None else n.at

    events: list[tuple[dt.datetime, str]] = []  # (time, "node" | "superseded" | view)
    seen_edges: set[tuple[str, str, str, str]] = set()
    for node in nodes.values():
        own = clock(node.id, node.created_at)
        events.append((own, "node"))
        edges = store.edges_of(node.id)
        if node.valid_to is not None:
            if by == "written":
                end = max(node.valid_to, node.created_at)
            else:
                after = [
                    clock(e.target, own) for e in edges if e.source == node.id and e.label == "superseded_by"
                ]
                end = max([own, *after])
            events.append((end, "superseded"))
        for e in edges:
            key = (e.source, e.target, e.view, e.label)
            if e.label == "superseded_by":  # versions, counted as "superseded" above (as in stats)
                continue
            if key not in seen_edges:
                seen_edges.add(key)
                when = e.created_at if by == "written" else max(clock(e.source, own), clock(e.target, own))
                events.append((when, e.view))
    return _cumulative(events, buckets)


def _cumulative(events: list[tuple[dt.datetime, str]], buckets: int) -> Growth:
    if not events:
        return Growth(())
    events.sort(key=lambda ev: ev[0])
    first, last = events[0][0], events[-1][0]
    n = max(1, min(buckets - 1, len(events)))  # n + 1 points: the first event's time, then n bucket ends
    step = (last - first) / n if last > first else dt.timedelta(0)
    edges: dict[str, int] = dict.fromkeys(VIEWS, 0)
    nodes = superseded = 0
    points: list[GrowthPoint] = []
    i = 0
    for b in range(n + 1):
        edge = last if b == n or not step else first + step * b
        while i < len(events) and events[i][0] <= edge:
            kind = events[i][1]
            if kind == "node":
                nodes += 1
            elif kind == "superseded":
                superseded += 1
            else:
                edges[kind] += 1
            i += 1
        points.append(GrowthPoint(edge, nodes, nodes - superseded, dict(edges)))
    return Growth(tuple(points))


def plot_growth(
    data: Growth, path: str | Path, *, title: str = "Memory growth", by: Clock = "observed"
) -> Path:
    """Write a PNG: memories (all and current) on the left axis, edges per view on the right."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ConfigError("plotting needs matplotlib", hint="pip install 'dualmem[bench]'") from exc
    out = Path(path)
    if not data.points:
        raise ConfigError("this memory is empty: nothing to plot", hint="add memories first")
    xs = [p.at for p in data.points]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    top.plot(xs, [p.nodes for p in data.points], label="memories", color="#1f5f8b")
    top.plot(xs, [p.current for p in data.points], label="current", color="#2e8b57", linestyle="--")
    top.set(ylabel="memories", title=title)
    top.legend(fontsize=8)
    top.grid(alpha=0.3)
    for view in VIEWS:
        bottom.plot(xs, [p.edges.get(view, 0) for p in data.points], label=view, color=VIEW_COLOURS[view])
    bottom.set(ylabel="edges", xlabel="observed at" if by == "observed" else "written at")
    bottom.legend(fontsize=8, title="view")
    bottom.grid(alpha=0.3)
    fig.autofmt_xdate()
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
