"""dualmem.bench: the LoCoMo benchmark harness (``dualmem bench locomo``), metrics and judges."""

from dualmem.bench.locomo import ALL_SYSTEMS, BenchConfig, Endpoint
from dualmem.bench.runner import BenchResult, run_locomo

__all__ = ["ALL_SYSTEMS", "BenchConfig", "BenchResult", "Endpoint", "run_locomo"]
