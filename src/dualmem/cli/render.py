"""What the CLI prints: the JSON of nodes, evidence, lists, searches and answers, and their readable
renderings.

JSON is the contract (stdout of a pipe, ``--json``): the same documents, made by the same functions
(:mod:`dualmem.wire.schemas`), as the HTTP API sends and the MCP tools return in brief. The
readable text (a terminal, ``--format human``) is drawn from that JSON, so both say the same thing.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the schemas (pydantic) are imported when a command prints one
    from dualmem.types import Evidence, Node

__all__ = [
    "evidence_json",
    "node_json",
    "render_answer",
    "render_check",
    "render_demo",
    "render_erase",
    "render_fields",
    "render_forget",
    "render_history",
    "render_inspect",
    "render_list",
    "render_node",
    "render_search",
    "render_stats",
    "truncate",
]


def node_json(node: Node) -> dict[str, Any]:
    """A memory as JSON: ``GET /v1/memories/{id}``'s document."""
    from dualmem.wire.schemas import node_out

    return node_out(node).model_dump(mode="json")


def evidence_json(e: Evidence) -> dict[str, Any]:
    """One piece of evidence: its memory under ``node``, with ``score``, ``view``, ``via``, ``round``."""
    from dualmem.wire.schemas import evidence_out

    return evidence_out(e).model_dump(mode="json")


# -- readable text -------------------------------------------------------------------------------
def truncate(text: str, width: int) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[: max(0, width - 1)] + "…"


def _width() -> int:
    return max(60, min(160, shutil.get_terminal_size((100, 24)).columns))


def _date(node: Mapping[str, Any]) -> str:
    at = node.get("at")
    return str(at)[:10] if at else "-"


def _state(node: Mapping[str, Any]) -> str:
    """What a line adds after a memory that is not simply current: superseded (with when) or pending."""
    if node.get("valid_to"):
        return f"  [superseded {str(node['valid_to'])[:10]}]"
    return "  [pending]" if node.get("status") == "pending" else ""


def _who(node: Mapping[str, Any]) -> str:
    return str(node.get("speaker") or "-")


def _memory_line(rank: int, evidence: Mapping[str, Any]) -> str:
    node = evidence["node"]
    head = f"{rank:>3}. {float(evidence['score']):.3f}  {_date(node)}  {_who(node)}: "
    return head + truncate(str(node["content"]), _width() - len(head))


def _footer(summary: Mapping[str, Any]) -> str:
    return (
        f"(stop: {summary.get('stop_reason')}, {summary.get('controller_calls')} controller calls, "
        f"{float(summary.get('latency_ms') or 0):.0f} ms)"
    )


def render_search(data: Mapping[str, Any]) -> str:
    found: Sequence[Mapping[str, Any]] = data["evidence"]
    lines = (
        [f"{len(found)} memories for: {data['query']}"] if found else [f"nothing found for: {data['query']}"]
    )
    lines += [_memory_line(i, e) for i, e in enumerate(found, 1)]
    return "\n".join([*lines, _footer(data["summary"])])


def render_answer(data: Mapping[str, Any]) -> str:
    text = str(data["text"])
    lines = [f"(no answer: {text})" if data["abstained"] else text, ""]
    found: Sequence[Mapping[str, Any]] = data["evidence"]
    lines.append("evidence:" if found else "no evidence found")
    lines += [_memory_line(i, e) for i, e in enumerate(found, 1)]
    return "\n".join([*lines, _footer(data["summary"])])


def render_node(data: Mapping[str, Any]) -> str:
    """One memory: its fields, then its text in full."""
    fields = {k: data.get(k) for k in ("id", "speaker", "at", "session", "turn_id", "status", "valid_to")}
    lines = [f"{k}: {v}" for k, v in fields.items() if v is not None]
    if data.get("entities"):
        lines.append("entities: " + ", ".join(map(str, data["entities"])))
    return "\n".join([*lines, "", str(data["content"])])


def render_list(data: Mapping[str, Any]) -> str:
    nodes: Sequence[Mapping[str, Any]] = data["items"]
    if not nodes:
        return "no memories"
    lines = []
    for n in nodes:
        head = f"{n['id']}  {_date(n)}  {_who(n)}: "
        mark = _state(n)
        lines.append(head + truncate(str(n["content"]), _width() - len(head) - len(mark)) + mark)
    if data.get("next_offset") is not None:
        lines.append(f"(more: --offset {data['next_offset']})")
    return "\n".join(lines)


def render_history(data: Mapping[str, Any]) -> str:
    versions: Sequence[Mapping[str, Any]] = data["versions"]
    return "\n".join(
        f"v{i} {n['id']}  {_date(n)}  {truncate(str(n['content']), _width() - 40)}"
        + ("" if n.get("valid_to") is None else f"  (until {str(n['valid_to'])[:10]})")
        for i, n in enumerate(versions, 1)
    )


def render_inspect(data: Mapping[str, Any]) -> str:
    slot = next((d["label"] for d in data["decisions"] if d["key"] == "write.slot"), None)
    lines = [render_node(data["node"]), f"slot: {slot or '-'}", "", f"edges ({len(data['edges'])}):"]
    lines += [f"  {e['view']:<9} {e['label']:<12} {e['source']} -> {e['target']}" for e in data["edges"]]
    lines.append(f"decisions ({len(data['decisions'])}):")
    lines += [
        f"  {d['purpose']:<13} {d['key']:<28} {d['value']:.3f}"
        + (f" {d['label']}" if d.get("label") else "")
        + (f" (with {d['other_id']})" if d.get("other_id") else "")  # a pair decision's other memory
        for d in data["decisions"]
    ]
    return "\n".join(lines)


def render_stats(data: Mapping[str, Any]) -> str:
    views = data.get("edges_by_view") or {}
    lines = [
        f"memories: {data['nodes']} ({data['pending']} pending)",
        "edges: " + ", ".join(f"{v} {n}" for v, n in views.items()),
        f"entities: {data['entities']}",
        f"embedder: {data.get('embedder')} (dim {data.get('dim')}); controller {data.get('controller')}",
    ]
    if "plot" in data:
        lines.append(f"plot: {data['plot']}")
    users: Sequence[Mapping[str, Any]] | None = data.get("users")
    if users is not None:
        lines += ["", f"users ({len(users)}):" if users else "users: none"]
        for u in users:
            lines.append(f"  {u['user']}: {u['memories']}")
            for t in u["tenants"]:
                if t["agent"] is not None or t["run"] is not None:
                    lines.append(f"    agent {t['agent'] or '-'}, run {t['run'] or '-'}: {t['memories']}")
    return "\n".join(lines)


def render_fields(data: Mapping[str, Any]) -> str:
    """A flat ``key: value`` rendering (nested values as compact JSON)."""

    def shown(v: Any) -> Any:
        plain = isinstance(v, str | int | float) or v is None
        return v if plain else json.dumps(v, default=str, ensure_ascii=False)  # CJK as itself

    return "\n".join(f"{k}: {shown(v)}" for k, v in data.items())


def render_demo(data: Mapping[str, Any]) -> str:
    lines = [f"dualmem demo: {data['stored']} turns stored in {data['build_seconds']:.2f} s", ""]
    for a in data["answers"]:
        lines.append(f"Q: {a['question']}")
        lines.append(f"A: {a['answer']}" + ("  (abstained)" if a["abstained"] else ""))
        if a.get("source"):
            lines.append("   from: " + truncate(str(a["source"]["node"]["content"]), _width() - 9))
        lines.append("")
    lines.append("(--json prints all of it as JSON; --keep --db FILE keeps the memory)")
    return "\n".join(lines)


def render_forget(data: Mapping[str, Any]) -> str:
    """``forgotten: N``, or for ``--dry-run`` the memories that would go (nothing was forgotten)."""
    if "would_forget" not in data:
        return render_fields(data)
    memories: Sequence[Mapping[str, Any]] = data["items"]
    count = data["would_forget"]
    lines = [f"would forget {count} {'memory' if count == 1 else 'memories'} (dry run: nothing forgotten)"]
    for n in memories:
        head = f"  {n['id']}  {_date(n)}  {_who(n)}: "
        lines.append(head + truncate(str(n["content"]), _width() - len(head)))
    return "\n".join(lines)


def render_erase(data: Mapping[str, Any]) -> str:
    """``dualmem erase``'s report: complete or not, what was done, what still keeps forgotten bytes."""
    state = "complete" if data["complete"] else "NOT complete"
    lines = [f"{data['db']}: erase {state} ({data['backend']}, {data['seconds']} s)"]
    lines.append("done: " + (", ".join(map(str, data["done"])) or "nothing"))
    problems: Sequence[str] = data["problems"]
    if problems:
        lines.append("still keeping forgotten bytes:")
        lines.extend(f"  - {p}" for p in problems)
    return "\n".join(lines)


def render_check(data: Mapping[str, Any]) -> str:
    """``dualmem check``'s report: healthy or not, each problem with its first details, what was
    repaired; ``--lexical-index``'s result as fields."""
    if "healthy" not in data:
        return render_fields(data)
    lines = [f"{data['db']}: {'healthy' if data['healthy'] else 'NOT healthy'}"]
    if "repaired" in data:
        before: Sequence[Mapping[str, Any]] = data.get("before") or []
        found = ", ".join(f"{p['kind']} {p['count']}" for p in before) or "nothing"
        lines.append(f"found before repair: {found}")
        lines.append("repaired: " + (", ".join(map(str, data["repaired"])) or "nothing"))
    problems: Sequence[Mapping[str, Any]] = data["problems"]
    if problems:
        lines.append(f"problems ({len(problems)}):")
    for p in problems:
        fix = "" if p.get("repairable") else " (not repairable)"
        lines.append(f"  {p['kind']}: {p['count']}{fix}")
        lines += [f"    {truncate(str(d), _width() - 4)}" for d in p.get("details") or []]
    if problems and any(p.get("repairable") for p in problems) and "repaired" not in data:
        lines.append("(dualmem check --repair fixes what can be fixed)")
    return "\n".join(lines)
