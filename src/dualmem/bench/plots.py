"""PNG plots of a benchmark summary (matplotlib, Agg backend, imported only when plotting).

``recall_at_k.png``: recall@k curves per system (categories 1-4); ``latency.png``: retrieval and
end-to-end latency p50/p95 per system; ``build_time.png``: build time per turn per build kind.
Without matplotlib (the ``bench`` extra) no plot is written and an empty tuple is returned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["write_plots"]


def write_plots(summary: Mapping[str, Any], out: Path, *, k_values: Sequence[int]) -> tuple[Path, ...]:
    """Write the plots into ``out``; returns their paths."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return ()
    systems: Mapping[str, Mapping[str, Any]] = summary["systems"]
    paths = []
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, s in systems.items():
        ys = [s["retrieval"][f"recall@{k}"]["1-4"]["mean"] for k in k_values]
        if any(y is not None for y in ys):
            ax.plot(
                list(k_values), [y if y is not None else float("nan") for y in ys], marker="o", label=name
            )
    ax.set(xlabel="k", ylabel="recall@k (categories 1-4)", title="Evidence recall", ylim=(0, 1))
    ax.set_xticks(list(k_values))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    paths.append(_save(fig, out / "recall_at_k.png", plt))

    names = list(systems)
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(names) + 2), 4.5))
    keys = ("retrieval_p50", "retrieval_p95", "e2e_p50", "e2e_p95")
    width = 0.8 / len(keys)
    for j, key in enumerate(keys):
        vals = [systems[n]["latency_ms"][key] or 0.0 for n in names]
        ax.bar([i + j * width for i in range(len(names))], vals, width, label=key.replace("_", " "))
    ax.set_xticks(
        [i + 0.4 - width / 2 for i in range(len(names))], names, rotation=30, ha="right", fontsize=8
    )
    ax.set(ylabel="ms", title="Query latency")
    ax.legend(fontsize=8)
    paths.append(_save(fig, out / "latency.png", plt))

    builds: Mapping[str, Mapping[str, Any]] = summary["builds"]
    fig, ax = plt.subplots(figsize=(5, 4))
    kinds = list(builds)
    ax.bar(kinds, [builds[k]["per_turn_ms"] or 0.0 for k in kinds], color="tab:green")
    ax.set(ylabel="ms per turn", title="Memory build time")
    paths.append(_save(fig, out / "build_time.png", plt))
    return tuple(paths)


def _save(fig: Any, path: Path, plt: Any) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
