"""The web console in headless Chromium (Debian's `chromium`, driven by Playwright): create a
game, play a whole game of every game against its AI seats by clicking the table, join a Moody
Bear game by code from a second browser and answer a response window, a waiting game's notice
and the list's Join, a phone's width, replay a finished game and one's own seat, and check
that a seat's page shows nothing its view hides. Screenshots of every game's page are written
to var/screenshots/ (printed at the end of the run)."""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from arbiter.bubblee.v1 import bubblee_pb2 as bpb

from services import games as registry
from services.core.server import Config, start_http
from services.core.store import MemoryStore
from services.process import build
from tests.platform.test_grpc import free_port

ADMIN = "console-admin-token-0123456789"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SHOTS = Path(os.environ.get("ARBITER_SCREENSHOTS", "var/screenshots"))

try:
    from playwright.async_api import Browser, Page, async_playwright
    from playwright.async_api import Error as PlaywrightError
    from playwright.async_api import TimeoutError as PlaywrightTimeout
except ImportError:  # pragma: no cover - the test set-up installs it
    async_playwright = None  # type: ignore[assignment]

pytestmark = [
    pytest.mark.skipif(async_playwright is None, reason="playwright is not installed "
                       "(make installs it from requirements.lock)"),
    pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed and the "
                       "test set-up could not install it (make browser: apt-get install "
                       "chromium needs root or sudo)"),
    pytest.mark.timeout(600),
]


class Site:
    def __init__(self, base: str, session: aiohttp.ClientSession, browser: Browser) -> None:
        self.base, self.session, self.browser = base, session, browser
        self.errors: list[str] = []  # uncaught errors of the site's pages

    async def rpc(self, path: str, body: dict[str, Any], token: str = "",
                  admin: bool = False) -> dict[str, Any]:
        headers = {"content-type": "application/json"}
        if token:
            headers["x-seat-token"] = token
        if admin:
            headers["x-admin-token"] = ADMIN
        async with self.session.post(self.base + path, data=json.dumps(body),
                                     headers=headers) as r:
            reply = await r.json()
            assert r.status == 200, reply
            return reply

    async def page(self, admin: bool = False, width: int = 1280) -> Page:
        context = await self.browser.new_context(viewport={"width": width, "height": 1000})
        page = await context.new_page()
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        await page.goto(self.base + "/")
        if admin:
            await page.fill("#admin-token", ADMIN)
            await page.dispatch_event("#admin-token", "change")
        return page


@pytest_asyncio.fixture
async def site() -> AsyncIterator[Site]:
    store = MemoryStore()
    config = Config(grpc_addr=f"127.0.0.1:{free_port()}", http_addr="127.0.0.1:0",
                    http_explicit=True, admin_token=ADMIN)
    process = build(config, {name: registry.game(name) for name in registry.GAME_MODULES},
                    store)
    server = process.server
    await server.start()
    web = await start_http(config, process.http)
    assert web is not None
    async with async_playwright() as p, aiohttp.ClientSession() as session:
        browser = await p.chromium.launch(executable_path=CHROMIUM,
                                          args=["--no-sandbox", "--disable-gpu"])
        yield Site(f"http://127.0.0.1:{web.port}", session, browser)
        await browser.close()
    await web.stop()
    await server.stop(None)
    await store.close()


async def play_by_clicking_the_table(page: Page, game: str, stall: float = 30,
                                     prefer: str = "") -> tuple[int, int]:
    """Plays the page's seat to the game's end by clicking the table (never the command
    buttons): a drawn thing the table marks clickable when there is one, else a chip beneath
    it (a command the picks so far complete, or one with nothing to click), one whose text has
    `prefer` first. Waits on the page's state: it fails only when the game's version stands
    still for `stall` seconds, however slowly a busy machine plays. Returns the clicks on
    drawn things and the "what happened" lines seen."""
    rng = random.Random(23)
    loop = asyncio.get_running_loop()
    version, moved = "", loop.time()
    drawn_clicks, described = 0, 0
    while not await page.locator("#result").count():
        now = await page.inner_text("#version")
        if now != version:
            version, moved = now, loop.time()
        elif loop.time() - moved > stall:
            await shoot(page, f"{game}-unfinished")
            raise AssertionError(f"{game} stood still at {version} for {stall} s of clicking "
                                 f"the table: {await page.inner_text('#main')}")
        try:  # something to click, or the end: the AI seats may be playing meanwhile
            await page.wait_for_selector("#table .pickable, #result", timeout=5000)
        except PlaywrightTimeout:
            continue
        described += await page.locator("#happened li").count()
        drawn = page.locator("#table svg .pickable")
        chips = page.locator("#moves .pickable")
        choices = [(drawn, True), (chips, False)]
        if prefer:
            choices.insert(0, (chips.filter(has_text=prefer), False))
        for target, on_the_table in choices:
            count = await target.count()
            if not count:
                continue
            try:
                await target.nth(rng.randrange(count)).click(timeout=2000)
            except PlaywrightError:  # redrawn meanwhile: look again
                break
            drawn_clicks += on_the_table
            break
    return drawn_clicks, described


async def shoot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
    print(f"screenshot: {(SHOTS / f'{name}.png').resolve()}")


async def test_create_and_play_a_whole_bubblee_game_against_the_ai(site: Site) -> None:
    page = await site.page()
    await page.goto(site.base + "/#/new")
    await page.select_option("#n-game", "bubblee")
    kinds = page.locator("#seats .s-kind")
    assert await kinds.count() == 2
    assert await kinds.nth(1).input_value() == "AI"
    await page.click("#n-create")
    game_id = (await page.inner_text("#created-link")).strip()
    # The games list shows it, live.
    await page.goto(site.base + "/#/")
    await page.select_option("#f-game", "bubblee")
    row = page.locator(f"tr[data-game-id='{game_id}']")
    await row.wait_for()
    assert (await row.locator("td").nth(2).inner_text()).strip() == "active"
    await row.locator("a").first.click()
    await page.wait_for_selector("#table svg")
    clicks, described = await play_by_clicking_the_table(page, "bubblee")
    print(f"bubblee: {clicks} clicks on the table, to {await page.inner_text('#version')}")
    assert clicks >= 5
    if "happened" in bpb.View.DESCRIPTOR.fields_by_name:  # where views describe events
        assert described, "the page showed what happened"
    else:
        assert not described
    assert "Game over" in await page.inner_text("#result")
    await shoot(page, "bubblee-finished")

    # Replay: the slider goes back to a version before the end, and the table follows it.
    last = int(await page.get_attribute("#slider", "max") or 0)
    assert last > 10
    await page.eval_on_selector("#slider", "(s, v) => { s.value = v; s.dispatchEvent("
                                "new Event('input')); }", str(last // 2))
    await page.wait_for_function("document.querySelector('#version').textContent"
                                 ".includes('replay')")
    assert f"version {last // 2} (replay)" in await page.inner_text("#version")
    assert not await page.locator("#result").count()  # half way, nobody has won yet
    await page.click("#verify")
    await page.wait_for_function("document.querySelector('#verified').textContent")
    assert (await page.inner_text("#verified")).startswith("verified")


async def test_join_a_moody_bear_game_by_code_and_answer_a_response_window(site: Site
                                                                             ) -> None:
    # The deal decides whether a window waits for the guest before the game ends: a game
    # that ends first is replaced by a new one (five at most; one usually does).
    for _ in range(5):
        if await join_and_answer(site):
            return
    raise AssertionError("in five games no response window ever waited for the guest")


def stored_token(tokens: dict[str, dict[str, str]], game_id: str, seat: int) -> str:
    return tokens[game_id][str(seat)]


def preferred(commands: list[dict[str, Any]]) -> dict[str, Any] | None:
    """An item played opens a response window; a proclamation would end the game."""
    allowed = [c for c in commands if "proclaim" not in c]
    plays = [c for c in allowed if "play" in c]
    return (plays or allowed or [None])[0]


async def join_and_answer(site: Site) -> bool:
    """The host creates a game with an open seat, a guest joins it by its code in another
    browser, and the guest declines a response window by clicking. The moves leading there
    are sent over the API with each page's own token, so the test waits on the game's state,
    never on how many clicks a slow machine manages."""
    host_page = await site.page()
    await host_page.goto(site.base + "/#/new")
    await host_page.select_option("#n-game", "moody_bear")
    kinds = host_page.locator("#seats .s-kind")
    await kinds.nth(1).select_option("OPEN")
    await host_page.click("#n-create")
    code = (await host_page.inner_text(".invitation")).strip()
    game_id = (await host_page.inner_text("#created-link")).strip()
    await host_page.click("#created-link")
    await host_page.wait_for_selector("#table svg")

    guest = await site.page()  # a second browser context: its own storage, no tokens
    await guest.goto(site.base + "/#/join")
    await guest.fill("#j-code", code)
    await guest.fill("#j-name", "guest")
    await guest.click("#j-join")
    await guest.wait_for_selector("#table svg")
    assert "seat 1 (yours)" in await guest.inner_text("#as")
    saved = "JSON.parse(localStorage.getItem('arbiter.tokens') || '{}')"
    tokens = {0: stored_token(await host_page.evaluate(saved), game_id, 0),
              1: stored_token(await guest.evaluate(saved), game_id, 1)}
    legal_path, view_path = ("/arbiter.moody_bear.v1.Game/ListLegalActions",
                             "/arbiter.moody_bear.v1.Game/GetView")

    for _ in range(600):  # commands sent: a game ends well before
        view = await site.rpc(view_path, {"gameId": game_id, "seat": 1}, admin=True)
        if view.get("outcome"):
            return False
        window = view.get("window")
        if window and 1 in window.get("waiting", []):
            break
        sent = False
        for seat in (0, 1):
            legal = await site.rpc(legal_path, {"gameId": game_id}, token=tokens[seat])
            command = preferred(legal.get("commands", []))
            if command is not None:
                await site.rpc("/arbiter.moody_bear.v1.Game/Act",
                               {"gameId": game_id, "command": command,
                                "expectedVersion": legal["version"]}, token=tokens[seat])
                sent = True
                break
        if not sent:
            await asyncio.sleep(0.05)  # a deadline is due: the server moves on its own
    else:
        raise AssertionError("600 commands and the game neither ended nor opened a window")

    # The guest's page shows the window and its decline button; the click answers it.
    decline = guest.locator("#commands button[data-kind='decline']")  # its words vary
    await decline.first.wait_for(timeout=30_000)
    await guest.locator("svg >> text=response stack").first.wait_for(timeout=30_000)
    await decline.first.click(timeout=30_000)
    for _ in range(300):
        now = (await site.rpc(view_path, {"gameId": game_id, "seat": 1},
                              admin=True)).get("window")
        if not now or now["id"] != window["id"] or 1 in now.get("passed", []):
            await shoot(guest, "moody_bear-window")
            await shoot(host_page, "moody_bear")
            return True
        await asyncio.sleep(0.1)
    raise AssertionError(f"the guest's decline did not reach window {window}")


async def test_a_seats_page_shows_nothing_its_view_hides(site: Site) -> None:
    made = await site.rpc("/arbiter.moody_bear.v1.Game/CreateGame", {"seats": [
        {"name": "ann"}, {"name": "bob"}, {"name": "cat"}]})
    game_id = made["gameId"]
    tokens = {t.get("seat", 0): t["token"] for t in made["tokens"]}
    page = await site.page()
    await page.evaluate("([id, seat, token]) => { const all = {}; all[id] = {}; "
                        "all[id][seat] = token; localStorage.setItem('arbiter.tokens', "
                        "JSON.stringify(all)); }", [game_id, 0, tokens[0]])
    await page.goto(f"{site.base}/#/game/moody_bear/{game_id}")
    await page.wait_for_selector("#table svg")
    shown = await page.inner_html("#main")
    mine = await site.rpc("/arbiter.moody_bear.v1.Game/GetView", {"gameId": game_id},
                          tokens[0])
    own_labels = set(await page.evaluate("v => (v.hand || []).map(label)", mine))
    assert own_labels and all(x in shown for x in own_labels)  # the page shows its hand
    hidden = set()
    for seat in (1, 2):
        theirs = await site.rpc("/arbiter.moody_bear.v1.Game/GetView",
                                {"gameId": game_id, "seat": seat}, admin=True)
        hidden |= set(await page.evaluate("v => (v.hand || []).map(label)", theirs))
        if theirs.get("team") and theirs.get("team") != mine.get("team"):
            assert f"your team {theirs['team'].lower()}" not in shown
    # A card another seat holds, and that seat 0's view shows nowhere, is not on its page.
    leaks = [t for t in hidden - own_labels if t not in json.dumps(mine) and t in shown]
    assert hidden - own_labels and not leaks, f"seat 0's page shows {leaks}"

    # With the admin token the same page switches to any seat's view, and the spectator's.
    await page.fill("#admin-token", ADMIN)
    await page.dispatch_event("#admin-token", "change")
    await page.wait_for_selector("#as option[value='admin:2']", state="attached")
    theirs = await site.rpc("/arbiter.moody_bear.v1.Game/GetView",
                            {"gameId": game_id, "seat": 2}, admin=True)
    hand = await page.evaluate("v => (v.hand || []).map(label)", theirs)
    await page.select_option("#as", "admin:2")
    await page.wait_for_function("h => h.every(x => document.querySelector('#table')"
                                 ".innerHTML.includes(x))", arg=hand)
    await page.select_option("#as", "spectator")
    await page.wait_for_function("() => !document.querySelector('#table').innerHTML"
                                 ".includes('your hand')")


SEATS = {
    "bubblee": [{"name": "me"}, {"name": "bot", "kind": "AI"}],
    "bubble_shadow": [{"name": "me"}, {"name": "bot", "kind": "AI"},
                      {"name": "bot2", "kind": "AI"}],
    "moody_bear": [{"name": "me"}, {"name": "bot", "kind": "AI"}, {"name": "bot2", "kind": "AI"}],
    "shadow_council": [{"name": "me"}] + [{"name": f"bot{i}", "kind": "AI"} for i in range(3)],
    "eila": [{"name": "me"}],
}


async def test_every_games_page_draws_its_table(site: Site) -> None:
    page = await site.page(admin=True)
    for game, seats in SEATS.items():
        made = await site.rpc(f"/arbiter.{game}.v1.Game/CreateGame", {"seats": seats})
        await asyncio.sleep(0.3)  # the bots' first moves
        token = made["tokens"][0]["token"]
        await page.evaluate("([id, token]) => { const all = JSON.parse(localStorage.getItem("
                            "'arbiter.tokens') || '{}'); all[id] = {0: token}; localStorage"
                            ".setItem('arbiter.tokens', JSON.stringify(all)); }",
                            [made["gameId"], token])
        await page.goto(f"{site.base}/#/game/{game}/{made['gameId']}")
        await page.wait_for_function(  # this game's page, drawn (not the last one's)
            "id => document.querySelector('h1') && document.querySelector('h1').textContent"
            ".includes(id) && document.querySelector('#table svg.table')", arg=made["gameId"])
        assert await page.locator("#table svg.table *").count() > 5, game
        await shoot(page, game)
    waiting = await site.rpc("/arbiter.moody_bear.v1.Game/CreateGame", {"seats": [
        {"name": "me"}, {"kind": "OPEN"}, {"kind": "OPEN"}]})
    await page.goto(f"{site.base}/#/")
    await page.select_option("#f-status", "WAITING")
    row = page.locator(f"tr[data-game-id='{waiting['gameId']}']")
    await row.wait_for()
    assert "waiting for 2 players" in await row.inner_text()  # a count, not seat numbers
    assert await page.locator("tr[data-game-id]").count() == 1  # the others are not waiting
    await shoot(page, "games-waiting")


async def test_a_page_follows_the_game_live(site: Site) -> None:
    """A spectator's page redraws when a seat acts elsewhere: the browser holds a Watch
    stream (Connect streaming over HTTP/1.1)."""
    made = await site.rpc("/arbiter.bubblee.v1.Game/CreateGame",
                          {"seats": [{"name": "ann"}, {"name": "bob"}]})
    game_id = made["gameId"]
    page = await site.page()
    await page.goto(f"{site.base}/#/game/bubblee/{game_id}")
    await page.wait_for_selector("#table svg")
    assert await page.inner_text("#live") == "live"
    before = await page.inner_text("#version")
    view = await site.rpc("/arbiter.bubblee.v1.Game/GetView", {"gameId": game_id})
    token = {t["seat"]: t["token"] for t in made["tokens"]}[view["toAct"][0]]
    legal = await site.rpc("/arbiter.bubblee.v1.Game/ListLegalActions", {"gameId": game_id},
                           token)
    acted = await site.rpc("/arbiter.bubblee.v1.Game/Act",
                           {"gameId": game_id, "command": legal["commands"][0]}, token)
    await page.wait_for_function("v => document.querySelector('#version').textContent === v",
                                 arg=f"version {acted['version']}", timeout=10_000)
    assert before != await page.inner_text("#version")


def strings(value: Any) -> set[str]:
    """Every text leaf of a view in JSON (enum names, card names, words), and each Bubble and
    Shadow pact card as the table names it ("pact 12:"): its secrets are numbers."""
    if isinstance(value, dict):
        found = {f"pact {value['id']}:"} if "ends" in value and "id" in value else set()
        return found.union(*(strings(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(strings(v) for v in value)) if value else set()
    return {value} if isinstance(value, str) else set()


@pytest.mark.parametrize("game,seats", [("moody_bear", 3), ("shadow_council", 4),
                                        ("bubble_shadow", 3)])
async def test_no_seats_table_shows_what_only_other_seats_see(site: Site, game: str,
                                                               seats: int) -> None:
    made = await site.rpc(f"/arbiter.{game}.v1.Game/CreateGame",
                          {"seats": [{"name": f"p{i}"} for i in range(seats)]})
    game_id = made["gameId"]
    tokens = {t["seat"]: t["token"] for t in made["tokens"]}
    page = await site.page()
    await page.evaluate("([id, all]) => { const t = {}; t[id] = all; localStorage.setItem("
                        "'arbiter.tokens', JSON.stringify(t)); }", [game_id, tokens])
    await page.goto(f"{site.base}/#/game/{game}/{game_id}")
    for seat in range(seats):
        await page.select_option("#as", f"token:{seat}")
        mine = await site.rpc(f"/arbiter.{game}.v1.Game/GetView", {"gameId": game_id},
                              tokens[seat])
        await page.wait_for_function(
            "s => document.querySelector('#table svg') && (document.querySelector('#as')"
            ".value === 'token:' + s)", arg=seat)
        await asyncio.sleep(0.3)  # the redraw for this seat
        table = await page.inner_html("#table")
        secrets: set[str] = set()
        for other in range(seats):
            if other != seat:
                theirs = await site.rpc(f"/arbiter.{game}.v1.Game/GetView",
                                        {"gameId": game_id, "seat": other}, admin=True)
                secrets |= strings(theirs) - strings(mine)
        secrets = {s for s in secrets if len(s) >= 5}
        assert secrets  # each seat holds something the others do not see
        leaks = [s for s in secrets if s in table or s.lower() in table]
        assert not leaks, f"seat {seat}'s table shows {leaks}, seen only by other seats"
    await shoot(page, f"{game}-last-seat")


async def seat_page(site: Site, game: str, seats: list[dict[str, Any]],
                    width: int = 1280) -> tuple[Page, dict[str, Any]]:
    """A new game over the API, and a page holding seat 0's token on it."""
    made = await site.rpc(f"/arbiter.{game}.v1.Game/CreateGame", {"seats": seats})
    page = await site.page(width=width)
    await page.evaluate("([id, token]) => localStorage.setItem('arbiter.tokens', "
                        "JSON.stringify({[id]: {0: token}}))",
                        [made["gameId"], made["tokens"][0]["token"]])
    await page.goto(f"{site.base}/#/game/{game}/{made['gameId']}")
    await page.wait_for_selector("#table svg")
    return page, made


@pytest.mark.parametrize("game", ["bubble_shadow", "moody_bear", "shadow_council", "eila"])
async def test_a_whole_game_played_by_clicking_the_table(site: Site, game: str) -> None:
    """The other games than Bubblee (played from the new-game page above), each against its
    AI seats; Eila's campaign is ended as soon as its first chapter is over."""
    page, _ = await seat_page(site, game, SEATS[game])
    clicks, _ = await play_by_clicking_the_table(page, game, prefer="end the campaign")
    print(f"{game}: {clicks} clicks on the table, to {await page.inner_text('#version')}")
    assert clicks >= 3, "the table was clicked, not only the chips beneath it"
    assert "Game over" in await page.inner_text("#result")
    assert not site.errors
    await shoot(page, f"{game}-finished")


async def test_a_waiting_game_says_so_and_the_list_offers_to_join_it(site: Site) -> None:
    host = await site.page()
    await host.goto(site.base + "/#/new")
    await host.select_option("#n-game", "moody_bear")
    await host.locator("#seats .s-kind").nth(1).select_option("OPEN")
    await host.click("#n-create")
    code = (await host.inner_text(".invitation")).strip()
    game_id = (await host.inner_text("#created-link")).strip()
    await host.click("#created-link")
    notice = host.locator("#waiting .notice")
    await notice.wait_for()
    assert "Waiting for 1 player" in await notice.inner_text()
    assert (await notice.locator(".invitation").inner_text()).strip() == code
    assert not await host.locator("#table .pickable").count()  # nothing to do yet
    assert not await host.locator("#commands button").count()
    await shoot(host, "moody_bear-waiting")

    guest = await site.page()  # another browser: no token, no invitation of its own
    await guest.goto(site.base + "/#/")
    row = guest.locator(f"tr[data-game-id='{game_id}']")
    await row.locator("a.join").click()
    await guest.wait_for_selector("#j-code")
    assert await guest.input_value("#j-code") == ""
    await guest.fill("#j-code", code)
    await guest.fill("#j-name", "guest")
    await guest.click("#j-join")
    await guest.wait_for_selector("#table svg")
    assert not await guest.locator("#waiting .notice").count()
    await notice.wait_for(state="detached", timeout=30_000)  # the host's page sees the join
    other = await site.page()
    await other.goto(site.base + "/#/")
    await other.locator(f"tr[data-game-id='{game_id}'] td.status-ACTIVE").wait_for()
    assert not await other.locator(f"tr[data-game-id='{game_id}'] a.join").count()
    assert not site.errors


async def test_the_console_fits_a_phone_and_leaving_a_game_page_throws_nothing(
        site: Site) -> None:
    overflow = "document.documentElement.scrollWidth - window.innerWidth"
    for game, seats in SEATS.items():
        page, _ = await seat_page(site, game, seats, width=360)
        await page.wait_for_selector("#events li")
        assert await page.evaluate(overflow) <= 0, f"{game}'s page scrolls sideways"
        await shoot(page, f"{game}-phone")
        await page.click("header >> text=Games")  # leaving while its stream is open
        await page.wait_for_selector("#games tr")
        assert await page.evaluate(overflow) <= 0, "the games list scrolls sideways"
        assert await page.locator("#error").is_hidden(), await page.inner_text("#error")
    for route in ("#/new", "#/join"):
        await page.goto(f"{site.base}/{route}")
        await page.wait_for_selector("h1")
        assert await page.evaluate(overflow) <= 0, f"{route} scrolls sideways"
    assert not site.errors, site.errors


async def test_a_seat_replays_its_own_game_with_its_own_hand_face_up(site: Site) -> None:
    made = await site.rpc("/arbiter.moody_bear.v1.Game/CreateGame", {"seats": [
        {"name": "ann"}, {"name": "bob"}, {"name": "cat"}]})
    game_id = made["gameId"]
    tokens = {t.get("seat", 0): t["token"] for t in made["tokens"]}
    while True:  # a few moves over the API, by whichever seat may move
        view = await site.rpc("/arbiter.moody_bear.v1.Game/GetView", {"gameId": game_id},
                              admin=True)
        if int(view["version"]) >= 16 or view.get("outcome"):
            break
        for token in tokens.values():
            legal = await site.rpc("/arbiter.moody_bear.v1.Game/ListLegalActions",
                                   {"gameId": game_id}, token)
            command = preferred(legal.get("commands", []))
            if command:
                await site.rpc("/arbiter.moody_bear.v1.Game/Act", {
                    "gameId": game_id, "command": command,
                    "expectedVersion": legal["version"]}, token)
                break
        else:
            await asyncio.sleep(0.05)  # a deadline is due: the server moves on its own
    page = await site.page()
    await page.evaluate("([id, token]) => localStorage.setItem('arbiter.tokens', "
                        "JSON.stringify({[id]: {0: token}}))", [game_id, tokens[0]])
    await page.goto(f"{site.base}/#/game/moody_bear/{game_id}")
    entries = page.locator("#events li")
    await entries.nth(11).wait_for()
    version = int(await entries.nth(11).get_attribute("data-version") or 0)
    await entries.nth(11).locator("a").click()  # a step in the game's own log
    await page.wait_for_function("v => document.querySelector('#version').textContent === "
                                 "`version ${v} (replay)`", arg=version)
    then = await site.rpc("/arbiter.v1.Arbiter/Replay",
                          {"gameId": game_id, "version": version, "seat": 0}, admin=True)
    hand = then["view"].get("hand", [])
    assert hand
    picks = await page.eval_on_selector_all("#table [data-pick^='card:']",
                                            "nodes => nodes.map(n => n.dataset.pick)")
    assert sorted(picks) == sorted(f"card:{c}" for c in hand), "seat 0's hand, face up"
    catalog = await site.rpc("/arbiter.v1.Arbiter/GetCatalog", {"game": "moody_bear"})
    entry = next(e for e in catalog["entries"] if e["id"] == hand[0])
    card = page.locator(f"#table rect[data-pick='card:{hand[0]}'] title").first
    hover = await card.text_content()
    assert hover == f"{entry['name']}: {entry['text']}", "a card's rules text on hover"
    await shoot(page, "moody_bear-replay-own-seat")
    await page.click("#back")  # one version back, then on again
    await page.wait_for_function("v => document.querySelector('#version').textContent === "
                                 "`version ${v} (replay)`", arg=version - 1)
    await page.click("#forward")
    await page.wait_for_function("v => document.querySelector('#version').textContent === "
                                 "`version ${v} (replay)`", arg=version)
