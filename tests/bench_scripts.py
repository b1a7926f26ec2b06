"""Loading a script of ``bench/`` as a module, for the tests that run a benchmark at a tiny size."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"


def load_bench(script: str) -> ModuleType:
    """``bench/<script>`` executed as a fresh module named after it (registered in ``sys.modules``
    as an import would be, so that dataclasses and pickling can find it)."""
    path = BENCH / script
    spec = importlib.util.spec_from_file_location(f"{path.stem}_bench", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
