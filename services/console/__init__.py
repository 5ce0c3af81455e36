"""The web console: static HTML, CSS and JavaScript that speak the Connect protocol to the
gateway on the same port (services/core/http_gateway.py). No build step."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

STATIC = Path(__file__).parent / "static"


async def _index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC / "index.html")


def console_routes() -> list[web.AbstractRouteDef]:
    return [web.get("/", _index), web.static("/console", STATIC)]
