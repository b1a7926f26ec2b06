"""Pictures: ``dualmem stats --plot`` draws memory growth; ``dualmem bench locomo`` says on stderr when
it cannot draw its plots (no matplotlib, the ``bench`` extra)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from dualmem import Memory, Profile
from dualmem.cli.main import main
from dualmem.embed import HashingEmbedder

pytest.importorskip("matplotlib")

PNG = b"\x89PNG\r\n\x1a\n"
TINY = Path(__file__).resolve().parent / "fixtures" / "locomo_tiny.json"


def test_stats_plot_writes_a_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "m.db"
    with Memory.open(db, embedder=HashingEmbedder(256), profile=Profile.builtin()) as mem:
        mem.add_many(
            [
                {"text": f"Mira walked Biscuit along canal {i}.", "at": f"2024-05-{i + 1:02d}"}
                for i in range(12)
            ],
            user="mira",
        )
    for by in ("observed", "written"):
        out = tmp_path / by / "growth.png"
        args = [
            "--db",
            str(db),
            "--embedder",
            "hashing",
            "--user",
            "mira",
            "stats",
            "--plot",
            str(out),
            "--by",
            by,
        ]
        assert main(args) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["nodes"] == 12
        assert doc["plot"] == str(out)
        assert out.read_bytes().startswith(PNG)
        assert out.stat().st_size > 10_000
    # an empty tenant has nothing to draw: a user error, nothing written
    empty = tmp_path / "empty.png"
    assert (
        main(["--db", str(db), "--embedder", "hashing", "--user", "nobody", "stats", "--plot", str(empty)])
        == 2
    )
    assert "nothing to plot" in capsys.readouterr().err
    assert not empty.exists()


@pytest.mark.parametrize("installed", [True, False])
def test_bench_locomo_plots_or_says_why_not(
    installed: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if not installed:
        monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if the bench extra were missing
    args = ["-q", "bench", "locomo", "--data", str(TINY), "--out", str(tmp_path / "out"),
            "--systems", "dualmem", "bm25", "--embedder", "hashing"]  # fmt: skip
    assert main(args) == 0
    captured = capsys.readouterr()
    if installed:
        assert "no PNG plots" not in captured.err
        plots = json.loads(captured.out)["plots"]
        assert {Path(p).name for p in plots} == {"recall_at_k.png", "latency.png", "build_time.png"}
        assert all(Path(p).read_bytes().startswith(PNG) for p in plots)
        return
    assert "no PNG plots: matplotlib is not installed" in captured.err
    assert json.loads(captured.out)["plots"] == []
    assert not list((tmp_path / "out").glob("*.png"))
