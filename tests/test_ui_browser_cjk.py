"""The web inspector renders a Chinese memory in a real browser (Debian's chromium through
Playwright, a real uvicorn): the memory table, a search in Chinese and the node page show the
characters themselves. Skips only when chromium is not installed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")

from dualmem import Memory, Profile
from dualmem.server import ServerSettings, create_app
from dualmem.server.routes_inspector import inspector_router
from dualmem.types import Tenant
from server_support import live_server
from test_ui_browser import _page, browser  # noqa: F401 - the chromium fixture

NOTES = [
    "我在阿里巴巴工作，做前端开发。",
    "我女儿朵朵最喜欢吃草莓，每周都要买两盒。",
    "上周六我买了一辆新自行车。",
]


def test_a_chinese_memory_renders(browser: Any, tmp_path: Path) -> None:
    prof = Profile.builtin().with_(write__consolidation="off")
    with Memory.open(tmp_path / "zh.db", embedder="multilingual", profile=prof) as mem:
        for i, text in enumerate(NOTES):
            mem.add(text, user="lin", speaker="小林", at=f"2024-05-0{i + 1}T10:00:00Z")
        settings = ServerSettings(auth=False, tenant=Tenant("lin"), consolidate_every=0)
        app = create_app(mem, settings=settings, routers=[inspector_router()])
        with live_server(app) as url:
            page, errors = _page(browser)
            page.goto(f"{url}/ui")
            page.wait_for_selector("#memory-table tbody tr")
            table = page.inner_text("#memory-table")
            assert all(note[:8] in table for note in NOTES)
            assert "小林" in table
            assert "\\u" not in table

            page.click("#nav a[data-view=search]")
            page.fill("#query", "朵朵喜欢吃什么水果？")
            page.click("#search-form button[type=submit]")
            page.wait_for_selector("#hits .hit")
            first = page.locator("#hits .hit").first
            assert "草莓" in first.inner_text()
            first.locator("a.node-link").click()
            page.wait_for_selector("#node-content")
            assert page.inner_text("#node-content") == NOTES[1]
            page.screenshot(path=str(tmp_path / "zh-node.png"), full_page=True)
            assert errors == []
