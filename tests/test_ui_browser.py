"""The web inspector in a real browser: Debian's chromium driven by Playwright, a real uvicorn on
127.0.0.1 over the bundled sample conversation. Skips only when chromium is not installed."""

from __future__ import annotations

import shutil
import typing
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from control_support import with_views

pytest.importorskip("fastapi")

from dualmem import Memory
from dualmem.embed import HashingEmbedder
from dualmem.read.trace import StopReason
from dualmem.server import ServerSettings, create_app
from dualmem.server.keys import TOKEN_PREFIX, KeyStore
from dualmem.server.routes_inspector import inspector_router
from dualmem.types import Tenant
from server_support import live_server

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
QUERY = "When did Mira buy a new bicycle?"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        pytest.skip(f"chromium is not installed at {CHROMIUM} (apt-get install chromium; .ci/run does it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        exe = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
        b = pw.chromium.launch(executable_path=exe, args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def sample_memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    path = tmp_path_factory.mktemp("ui") / "sample.db"
    prof = with_views().with_(write__consolidation="off")  # the views on: the graph and charts of edges
    with Memory.open(path, embedder=HashingEmbedder(256), profile=prof) as mem:
        sample = resources.files("dualmem.data").joinpath("sample_conversation.json")
        with resources.as_file(sample) as p:
            mem.ingest(p, user="mira")
        mem.consolidate(user="mira")
        yield mem


def _shorten(text: str, width: int = 90) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _page(browser: Any) -> tuple[Any, list[str]]:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.set_default_timeout(15_000)
    return page, errors


def test_inspector_search_trace_and_node_page(browser: Any, sample_memory: Memory, tmp_path: Path) -> None:
    keys = KeyStore.open(":memory:")
    _, token = keys.create(user="mira")
    expected = sample_memory.search(QUERY, user="mira", k=10)
    app = create_app(sample_memory, keys=keys, settings=ServerSettings(consolidate_every=0),
                     routers=[inspector_router()])  # fmt: skip
    with live_server(app) as url:
        page, errors = _page(browser)
        # the page asks for the key once, then keeps it for the tab
        page.goto(f"{url}/ui")
        page.wait_for_selector("#api-key")
        assert page.get_attribute("#api-key", "placeholder") == f"{TOKEN_PREFIX}…"  # what a key looks like
        assert errors == ["Failed to load resource: the server responded with a status of 401 (Unauthorized)"]
        errors.clear()  # the browser logs the first, keyless call's 401
        page.fill("#api-key", token)
        page.click("#login button[type=submit]")
        page.wait_for_selector("#memory-table tbody tr")
        assert page.locator("#memory-table tbody tr").count() == sample_memory.count(user="mira")
        assert page.evaluate("sessionStorage.getItem('dualmem.key')") == token
        assert "user mira" in page.inner_text("#who")

        # filter by speaker
        page.fill("#filters input[name=speaker]", "Assistant")
        page.click("#filters button[type=submit]")
        page.wait_for_function("location.hash.includes('speaker=Assistant')")
        page.wait_for_selector("#memory-table tbody tr")
        speakers = page.locator("#memory-table tbody tr td:nth-child(2)").all_inner_texts()
        assert speakers
        assert set(speakers) == {"Assistant"}

        # search with the full trace
        page.click("#nav a[data-view=search]")
        page.fill("#query", QUERY)
        page.click("#search-form button[type=submit]")
        page.wait_for_selector("#trace-summary")
        stop = page.inner_text("#stop-reason")
        assert stop == expected.trace.stop_reason
        assert stop in typing.get_args(StopReason)
        names = page.locator("#routing .score-name").all_inner_texts()
        assert names == list(expected.trace.route)
        values = page.locator("#routing .score-value").all_inner_texts()
        assert values == [f"{p:.3f}" for p in expected.trace.route.values()]
        assert page.locator("#budget-table tbody tr").count() == len(expected.trace.budgets)
        # the anchors: each memory's first words (a link to it) and its fused score, not bare numbers
        anchors = page.locator("#anchors tbody tr")
        shown = expected.trace.anchors[:12]
        assert shown
        assert anchors.count() == len(shown)
        for i, (anchor_id, score) in enumerate(shown):
            row = anchors.nth(i)
            assert row.get_attribute("data-id") == anchor_id
            assert row.locator("a.node-link").inner_text() == _shorten(
                sample_memory.get(anchor_id, user="mira").content
            )
            assert row.locator(".anchor-score").inner_text() == f"{score:.4f}"
        assert page.locator("#rounds .round").count() == len(expected.trace.rounds)
        assert page.locator("#rounds table.pool tbody tr").count() == sum(
            len(r.candidates) for r in expected.trace.rounds
        )
        hits = page.locator("#hits .hit")
        assert hits.count() == len(expected.evidence)
        assert [hits.nth(i).get_attribute("data-id") for i in range(hits.count())] == expected.ids
        assert "why:" in hits.first.inner_text()
        assert "ms" in page.inner_text("#latency")
        page.screenshot(path=str(tmp_path / "search.png"), full_page=True)

        # open the first hit: the node page
        first = expected.evidence[0].node
        hits.first.locator("a.node-link").click()
        page.wait_for_selector("#node-content")
        assert page.inner_text("#node-content") == first.content
        info = sample_memory.inspect(first.id, user="mira")
        assert page.locator("#node-graph g.node").count() == 1 + len({e.other(first.id) for e in info.edges})
        assert page.locator("#decisions table.decisions").count() == len({d.purpose for d in info.decisions})
        page.screenshot(path=str(tmp_path / "node.png"), full_page=True)

        # a view can be switched off; a neighbour in the graph opens its own page
        page.uncheck("#graph-legend input[data-view=entity]")
        drawn = page.locator("#node-graph path.edge")
        assert page.locator("#node-graph path.edge-entity").count() == 0
        assert drawn.count() == sum(1 for e in info.edges if e.view != "entity")
        neighbour = page.locator("#node-graph g.node:not(.center)").first
        other_id = neighbour.get_attribute("data-id")
        neighbour.click()
        page.wait_for_function(f"location.hash.endsWith('{other_id}')")
        page.wait_for_function(
            "(t) => document.querySelector('#node-content')?.innerText === t",
            arg=sample_memory.get(other_id, user="mira").content,
        )

        # forget is behind a confirmation: cancel keeps it, confirm removes it
        before = sample_memory.count(user="mira")
        page.click("#forget-node")
        assert page.is_visible("#modal")
        page.click("#modal-cancel")
        assert page.is_hidden("#modal")
        assert sample_memory.count(user="mira") == before
        page.click("#forget-node")
        page.click("#modal-ok")
        page.wait_for_selector("#memory-table")
        page.wait_for_selector(".notice")
        assert sample_memory.count(user="mira") < before
        page.close()
        assert errors == []
    keys.close()
    shots = [tmp_path / "search.png", tmp_path / "node.png"]
    assert all(p.stat().st_size > 20_000 for p in shots)


def test_inspector_without_auth_and_its_other_views(
    browser: Any, sample_memory: Memory, tmp_path: Path
) -> None:
    settings = ServerSettings(auth=False, tenant=Tenant("mira"), consolidate_every=0)
    app = create_app(sample_memory, settings=settings, routers=[inspector_router()])
    with live_server(app) as url:
        page, errors = _page(browser)
        page.goto(f"{url}/ui#/consolidation")
        page.wait_for_selector("#consolidation-table tbody tr")
        assert page.locator("#login").count() == 0
        assert "no auth" in page.inner_text("#who")
        page.click("#nav a[data-view=stats]")
        page.wait_for_selector("#growth-edges polyline")
        assert page.locator("#growth-nodes polyline").count() == 2
        assert page.locator("#growth-edges polyline").count() == 4
        assert str(sample_memory.count(user="mira")) in page.inner_text("#stats")
        # edges by view: a small table, a row per view, not raw JSON
        by_view = sample_memory.stats(user="mira")["edges_by_view"]
        rows = page.locator("#stat-edges-by-view tbody tr")
        assert [rows.nth(i).inner_text().split() for i in range(rows.count())] == [
            [view, str(n)] for view, n in by_view.items()
        ]
        assert "{" not in page.inner_text("#stats")
        page.screenshot(path=str(tmp_path / "stats.png"), full_page=True)
        # export asks first, then offers the JSON Lines file
        page.click("#nav a[data-view=memories]")
        page.wait_for_selector("#memory-table tbody tr")
        with page.expect_download() as download:
            page.click("#export")
            page.click("#modal-ok")
        saved = tmp_path / "export.jsonl"
        download.value.save_as(saved)
        assert saved.read_text(encoding="utf-8").count("\n") > sample_memory.count(user="mira")
        page.close()
        assert errors == []


def test_swagger_ui_renders_offline(browser: Any, sample_memory: Memory) -> None:
    """``/docs`` in a browser that may reach nothing but this server: Swagger UI draws every operation."""
    app = create_app(sample_memory, settings=ServerSettings(consolidate_every=0))
    with live_server(app) as url:
        operations = sum(len(methods) for methods in app.openapi()["paths"].values())
        page, errors = _page(browser)
        elsewhere: list[str] = []

        def only_this_server(route: Any) -> None:
            if route.request.url.startswith(f"{url}/"):
                route.continue_()
            else:
                elsewhere.append(route.request.url)
                route.abort()

        page.route("**/*", only_this_server)
        page.goto(f"{url}/docs")
        page.wait_for_selector(".swagger-ui .information-container .title")
        assert page.inner_text(".swagger-ui .information-container .title").startswith("dualmem")
        page.wait_for_selector(".swagger-ui .opblock")
        assert page.locator(".swagger-ui .opblock").count() == operations
        assert page.locator(".swagger-ui .errors-wrapper").count() == 0  # the schema parsed (OpenAPI 3.1)
        page.close()
        assert elsewhere == []
        assert errors == []
