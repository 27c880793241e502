"""A route group built on first use (api/routing.py): nothing is built until a request's path
falls under its prefix, and then it matches and answers as its routes would."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI
from fastapi.testclient import TestClient
from starlette.routing import Match, Router

from wopeval.api.routing import RoutesOnFirstUse


def _group() -> tuple[RoutesOnFirstUse, list[str]]:
    built: list[str] = []

    def build() -> Router:
        built.append("built")
        pages = APIRouter(prefix="/ui")

        @pages.get("/runs")
        async def runs() -> dict[str, str]:
            return {"page": "runs"}

        return pages

    return RoutesOnFirstUse("/ui", build), built


def _scope(method: str, path: str) -> dict[str, object]:
    return {"type": "http", "method": method, "path": path, "root_path": "", "headers": []}


def test_a_path_outside_the_prefix_builds_nothing() -> None:
    group, built = _group()
    for path in ("/runs", "/uix/runs", "/"):
        assert group.matches(_scope("GET", path)) == (Match.NONE, {})
    assert built == []


def test_under_the_prefix_it_builds_once_and_matches_as_its_routes_would() -> None:
    group, built = _group()
    assert group.matches(_scope("GET", "/ui/runs"))[0] is Match.FULL
    assert group.matches(_scope("POST", "/ui/runs"))[0] is Match.PARTIAL
    assert group.matches(_scope("GET", "/ui/nothing"))[0] is Match.NONE
    assert built == ["built"]


def test_an_app_serves_the_group_as_its_own_routes() -> None:
    group, built = _group()
    app = FastAPI()
    app.router.routes.append(group)
    with TestClient(app) as client:
        assert client.get("/ui/runs").json() == {"page": "runs"}
        assert client.post("/ui/runs").status_code == 405
        assert client.get("/ui/nothing").status_code == 404
    assert built == ["built"]
    assert app.url_path_for("runs") == "/ui/runs"
