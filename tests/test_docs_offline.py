"""The API docs work offline (issue 41): ``/docs`` (Swagger UI) and ``/redoc`` load their scripts,
styles and icon from this server (the fastapi-offline package's copies), never from a CDN.
The page drawn in a real browser with every other host blocked is in ``test_ui_browser.py``."""

from __future__ import annotations

from collections.abc import Iterator
from html.parser import HTMLParser

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from dualmem import Memory
from dualmem.server import create_app
from dualmem.server.app import DOCS_ASSETS


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls += [value for name, value in attrs if name in ("src", "href", "spec-url") and value]


def _urls(html: str) -> list[str]:
    parser = _Links()
    parser.feed(html)
    return parser.urls


@pytest.fixture
def client() -> Iterator[TestClient]:
    with Memory.open(":memory:", embedder="hashing") as mem, TestClient(create_app(mem)) as c:
        yield c


@pytest.mark.parametrize(
    ("page", "kinds"),
    [
        ("/docs", {".css": "text/css", ".js": "text/javascript", ".png": "image/png"}),
        ("/redoc", {".js": "text/javascript", ".png": "image/png", ".json": "application/json"}),
    ],
)
def test_the_docs_pages_use_only_assets_this_server_serves(
    client: TestClient, page: str, kinds: dict[str, str]
) -> None:
    html = client.get(page)
    assert html.status_code == 200
    assert "cdn" not in html.text.lower()
    urls = _urls(html.text)
    assert {url[url.rindex(".") :] for url in urls} == set(kinds)  # every asset kind found once at least
    for url in urls:
        assert url.startswith("/"), url  # this host: no scheme, no other host
        assert not url.startswith("//"), url
        if url != "/openapi.json":
            assert url.startswith(f"{DOCS_ASSETS}/"), url
        got = client.get(url)
        assert got.status_code == 200, url
        assert got.headers["content-type"].startswith(kinds[url[url.rindex(".") :]]), url
        assert len(got.content) > 1000, url
    assert "url: '/openapi.json'" in html.text or 'spec-url="/openapi.json"' in html.text
