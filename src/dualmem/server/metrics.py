"""Prometheus metrics of one app: a registry of its own (no process-global state)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["Metrics", "StoreGauges"]

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
CALL_BUCKETS = (0, 1, 2, 3, 4, 6, 8, 12, 16, 32, 64)


class StoreGauges(Collector):
    """Read at scrape time: nodes, pending nodes, file size, consolidation backlog."""

    def __init__(self, read: Callable[[], Mapping[str, float]]) -> None:
        self._read = read

    HELP: Mapping[str, str] = {
        "store_nodes": "memories stored (every tenant)",
        "store_pending_nodes": "memories stored without controller decisions (need repair)",
        "store_bytes": "size of the database file and its WAL",
        "consolidation_backlog": "writes waiting for a consolidation pass",
        "consolidation_tenants_waiting": "tenants with writes waiting for a consolidation pass",
    }

    def describe(self) -> Iterator[GaugeMetricFamily]:
        for name, text in self.HELP.items():
            yield GaugeMetricFamily(f"dualmem_{name}", text)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        for name, value in self._read().items():
            yield GaugeMetricFamily(f"dualmem_{name}", self.HELP.get(name, name), value=value)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "dualmem_http_requests", "HTTP requests by route", ["route", "method", "status"], registry=r
        )
        self.latency = Histogram(
            "dualmem_http_request_seconds", "HTTP latency by route", ["route", "method"],
            buckets=LATENCY_BUCKETS, registry=r,
        )  # fmt: skip
        self.writes = Counter("dualmem_observations_written", "observations stored", registry=r)
        self.write_calls = Histogram(
            "dualmem_controller_calls_per_write", "System-One requests per committed write batch, by purpose "
            "(divide the sum by dualmem_observations_written_total for calls per observation)",
            ["purpose"], buckets=CALL_BUCKETS, registry=r,
        )  # fmt: skip
        self.write_batches = Histogram(
            "dualmem_write_batch_requests", "add requests committed together (group commit)",
            buckets=(1, 2, 4, 8, 16, 32, 64), registry=r,
        )  # fmt: skip
        self.query_calls = Histogram(
            "dualmem_controller_calls_per_query", "System-One requests per search/answer, by purpose",
            ["purpose"], buckets=CALL_BUCKETS, registry=r,
        )  # fmt: skip
        self.queries = Counter("dualmem_queries", "searches and answers", ["kind", "stop_reason"], registry=r)
        self.consolidations = Counter(
            "dualmem_consolidation_passes", "consolidation passes run", ["trigger"], registry=r
        )
        self.locked_retries = Counter(
            "dualmem_database_locked_retries", "writes retried because the database was locked", registry=r
        )

    def add_gauges(self, read: Callable[[], Mapping[str, float]]) -> None:
        self.registry.register(StoreGauges(read))

    def render(self) -> bytes:
        return generate_latest(self.registry)

    def observe_query(self, kind: str, stop_reason: str, calls_by_purpose: Mapping[str, int]) -> None:
        self.queries.labels(kind, stop_reason).inc()
        for purpose in ("message", "routing", "assessment", "scoring"):
            self.query_calls.labels(purpose).observe(calls_by_purpose.get(purpose, 0))

    def observe_write(self, observations: int, requests: int, calls_by_purpose: Mapping[str, int]) -> None:
        self.writes.inc(observations)
        self.write_batches.observe(requests)
        for purpose in ("typing", "relations"):
            self.write_calls.labels(purpose).observe(calls_by_purpose.get(purpose, 0))


def file_bytes(path: str) -> float:
    total = 0
    for suffix in ("", "-wal"):
        try:
            total += os.path.getsize(path + suffix)
        except OSError:
            continue
    return float(total)
