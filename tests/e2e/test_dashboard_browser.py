"""The website in a real browser (headless Chromium driven by Playwright) against the server under
gunicorn: the front page and its chart (with an announcement, the strongest network and GNU Go's
line), the releases page (notes, strength in words, the stable links), the Elo chart (GNU Go's
rated level drawn as a labelled line at its Elo, hover, zoom, the time axis), a game stepped
through with the arrow keys, signing up and making a client token, and a phone-sized screen.

The pages must load nothing from outside the server (the chart library is served by it) and raise no
script errors. Screenshots are the test's artifacts: they are saved in ``test-artifacts/screenshots``
in the project (``SENTE_ARTIFACTS=DIR``: in ``DIR/screenshots``), replaced at each run.

Needs the Debian package ``chromium`` (``.ci/run`` installs it); elsewhere the test is skipped.
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
import requests

from tests.e2e.needs import missing
from tests.server import helpers

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

CHROMIUM = (
    shutil.which("chromium")
    or shutil.which("chromium-browser")
    or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
)
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
CAPTURE_SGF = (
    b"(;FF[4]GM[1]SZ[7]KM[6.5]RU[koSIMPLEscoreAREAtaxNONEsui0]PB[net]PW[net]RE[B+R]"
    b";B[ab];W[bb];B[ba];W[dd];B[cb];W[ee];B[bc])"
)  # black captures the white stone at bb (B6)
NINE_SGF = b"(;FF[4]GM[1]SZ[9]KM[7]RU[Chinese]PB[net]PW[net]RE[W+R];B[ee];W[cc])"
# Japanese rules: Black takes a ko in encore phase 1 (move 11, C4), White passes for ko at B4 (move 12)
TERRITORY_SGF = (
    b"(;FF[4]GM[1]SZ[5]KM[0.5]RU[Japanese]PB[net]PW[net]RE[B+0.5]"
    b";B[ba];W[ca];B[ab];W[bb];B[bc];W[db];B[ee];W[cc];B[];W[];B[cb];W[bb];B[];W[];B[];W[])"
)


@pytest.fixture(scope="module")
def chromium() -> str:
    """The browser's path (the test is skipped, or fails in CI, without Chromium and Playwright)."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing("Playwright for Python", "pip install -r requirements-dev.txt (it pins it)")
    if CHROMIUM is None:
        missing("Chromium", "apt-get install chromium chromium-driver (.ci/run installs it)")
    return CHROMIUM


def in_a_thread(work, *args):
    """Run work(*args) in a thread of its own and return what it returns (or raise what it raised).
    Playwright's synchronous API runs an event loop in the thread that uses it; kept out of the
    test's thread, Django's database work there stays plainly synchronous."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(work, *args).result()


ARTIFACTS = Path(os.environ.get("SENTE_ARTIFACTS") or Path(__file__).resolve().parents[2] / "test-artifacts")


class Screens:
    """Screenshots kept as the test's artifacts (the folder's old ones are removed first)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.png"):
            old.unlink()
        self.paths: list[Path] = []

    def take(self, page, name: str) -> None:
        path = self.folder / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        self.paths.append(path)

    def keep(self) -> None:
        for path in self.paths:
            print(f"screenshot: {path}")


def _data(run_name: str, selfplay: list[helpers.PlayedGame]) -> dict:
    """Networks with ratings, a training line, and games of two contributors (one game with a capture)."""
    from django.utils import timezone

    from server.accounts.models import User
    from server.files import StoredFiles
    from server.networks.models import Network
    from server.notices.models import Announcement
    from server.ratings.anchors import gnugo_anchor
    from server.ratings.models import AnchorRating, Gating, Rating
    from server.runs.models import Run
    from server.training.models import TrainingLine

    run = Run.objects.get(name=run_name)
    now = timezone.now()
    random_net = run.networks.get(is_random=True)
    Network.objects.filter(pk=random_net.pk).update(created_at=now - timedelta(days=9))
    Rating.objects.create(network=random_net, elo=0.0, elo_se=0.0, games=50)
    parent = random_net
    networks = []
    for k in range(1, 9):
        state = "rejected" if k == 5 else "rating" if k == 8 else "accepted"
        n = Network.objects.create(
            name=f"{run.name}-n{k}",
            run=run,
            parent=parent,
            state=state,
            size_name="b6c96",
            released=k in (3, 6),
            file=f"networks/{k:064x}.safetensors",
            size_bytes=3_900_000 + k,
            sha256=f"{k:064x}",
            train_step=k * 2_000_000,
            rows_seen=k * 120_000,
            created_at=now - timedelta(days=9 - k),
        )
        Rating.objects.create(network=n, elo=90.0 * k - (150 if k == 5 else 0), elo_se=12.0 + 2 * k, games=40 * k)
        Gating.objects.create(
            candidate=n,
            opponent=parent,
            rule="fixed",
            wins=13,
            draws=0,
            losses=7,
            decision={"rejected": "reject", "rating": "continue"}.get(state, "accept"),
        )
        networks.append(n)
        if state == "accepted":
            parent = n
    TrainingLine.objects.create(
        run=run,
        architecture="b6c96",
        role="current",
        status="training",
        status_note="training on the newest window",
        samples=16_000_000,
        rows_total=960_000,
        window_rows=400_000,
        losses={"policy": 2.31, "value": 0.64, "score": 0.4},
        last_export=networks[-1],
    )
    # for Go players and maintainers: release notes, an announcement, GNU Go on the Elo scale
    Network.objects.filter(pk=networks[5].pk).update(
        release_notes="## Stronger in the endgame\n\n- counts **seki** right\n- [the training run](/elo/)"
    )
    Announcement.objects.create(message="Maintenance on Sunday 02:00 UTC: uploads wait a few minutes", level="warning")
    AnchorRating.objects.create(run=run, anchor=gnugo_anchor(5), elo=300.0, elo_se=20.0, games=120)
    AnchorRating.objects.create(run=run, anchor=gnugo_anchor(10), elo=None, elo_se=None, games=0)  # not rated
    alice = User.objects.create_user("alice", "alice@example.org", "a long enough password")
    bob = User.objects.create_user("bob", "bob@example.org", "a long enough password")
    games = helpers.store_training_games(run, alice, selfplay[:4], network=networks[6])
    helpers.store_training_games(run, bob, selfplay[4:], network=networks[6], minutes_apart=30)
    # The rows of the games whose records are swapped say what their records say.
    capture = games[0]
    capture.sgf = StoredFiles().put("games", CAPTURE_SGF, ".sgf")
    capture.moves, capture.result, capture.komi = 7, "B+R", 6.5
    capture.save()
    nine = games[2]
    nine.sgf = StoredFiles().put("games", NINE_SGF, ".sgf")
    nine.board_x_size = nine.board_y_size = 9
    nine.moves, nine.result, nine.komi = 2, "W+R", 7.0
    nine.save()
    territory = games[3]
    territory.sgf = StoredFiles().put("games", TERRITORY_SGF, ".sgf")
    territory.board_x_size = territory.board_y_size = 5
    territory.moves, territory.result, territory.score, territory.komi = 16, "B+0.5", -0.5, 0.5
    territory.save()
    return {
        "networks": networks,
        "capture_game": capture.pk,
        "game": games[1].pk,
        "nine_game": nine.pk,
        "territory_game": territory.pk,
    }


ANCHOR_LINES = """el => {
  // The rows of the chart's canvas that hold the anchors' line colour (a neutral grey, darker than the
  // grid's) in the right half of the plot, where no label is; the share of that half's columns the
  // line covers; how many grey text pixels lie just above its left end (the label); and the row at
  // which the chart's y scale puts Elo 300 (GNU Go level 5 in the test's data).
  const canvas = el.querySelector("canvas"), over = el.querySelector(".u-over");
  const dpr = window.devicePixelRatio, c = canvas.getBoundingClientRect(), o = over.getBoundingClientRect();
  const left = Math.round((o.left - c.left) * dpr), top = Math.round((o.top - c.top) * dpr);
  const width = Math.round(o.width * dpr), height = Math.round(o.height * dpr);
  const px = canvas.getContext("2d").getImageData(left, top, width, height).data;
  const grey = (x, y) => {
    // the canvas is transparent: its pixels as the page shows them, over white
    const i = 4 * (y * width + x), a = px[i + 3] / 255, on = v => v * a + 255 * (1 - a);
    const r = on(px[i]), g = on(px[i + 1]), b = on(px[i + 2]);
    return r < 200 && Math.abs(r - g) < 10 && Math.abs(g - b) < 10;
  };
  const ymin = parseFloat(el.dataset.yMin), ymax = parseFloat(el.dataset.yMax);
  const expected = (ymax - 300) / (ymax - ymin) * height;
  const rows = [], covered = new Set();
  for (let y = 0; y < height; y++) {
    let found = false;
    for (let x = Math.floor(width / 2); x < width; x++) if (grey(x, y)) { found = true; covered.add(x); }
    if (found) rows.push(y);
  }
  let label = 0;
  const line = Math.round(expected);
  for (let y = Math.max(0, line - 18 * dpr); y < line - 1; y++)
    for (let x = 0; x < Math.min(width, 160 * dpr); x++) if (grey(x, y)) label++;
  return { rows, expected, dashed: covered.size / (width - Math.floor(width / 2)), label };
}"""


def _anchor_lines(page) -> dict:
    """Where the Elo chart's canvas has the anchors' lines (see ANCHOR_LINES)."""
    return page.eval_on_selector("#elo-chart", ANCHOR_LINES)


def test_the_website_in_a_browser(server, chromium, tmp_path, settings):
    from server.accounts.models import ClientToken

    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "server.files.AtomicFileSystemStorage",
            "OPTIONS": {"location": str(server.data_dir / "files")},
        },
    }
    played = helpers.selfplay_games(tmp_path / "selfplay", helpers.RANDOM_NET, count=6)
    data = _data(helpers.RUN, played)
    data["moves"] = played[1].metadata["moves"]
    screens = Screens(ARTIFACTS / "screenshots")
    try:
        errors, outside = in_a_thread(browse, chromium, server.url, data, screens, server.log_path)
    finally:
        screens.keep()
    assert errors == [], errors
    assert outside == [], f"pages asked for things outside the server: {outside}"
    assert ClientToken.objects.filter(user__username="carol", name="gpu-box").count() == 1


def browse(chromium: str, url: str, data: dict, screens: Screens, server_log: Path) -> tuple[list[str], list[str]]:
    """Everything the browser does; returns the pages' script errors and the addresses they asked
    for outside the server. The server's mails are in its log (Django's console mail backend)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS)
        try:
            return _browse(browser, url, data, screens, server_log)
        finally:
            browser.close()


def _browse(browser, url: str, data: dict, screens: Screens, server_log: Path) -> tuple[list[str], list[str]]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    outside: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)

    def only_this_server(route):
        if route.request.url.startswith(url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    def watch(p) -> None:
        """Collect a page's script errors and console errors, and keep it on this server."""
        p.on("pageerror", lambda e: errors.append(f"{p.url}: {e}"))
        p.on("console", lambda m: errors.append(f"{p.url}: {m.text}") if m.type == "error" else None)
        p.route("**/*", only_this_server)

    page.route("**/*", only_this_server)
    try:
        # the front page: the run, its numbers, the training line and the small chart
        page.goto(url + "/")
        assert page.inner_text("h1") == f"Run {helpers.RUN}"
        assert page.inner_text('[data-live="games_total"]') == "6"
        assert page.inner_text('[data-live="contributors_day"]') == "2"
        assert "training on the newest window" in page.inner_text("body")
        page.wait_for_selector('#elo-chart[data-ready="1"]')
        assert page.get_attribute("#elo-chart", "data-points") == "9"
        assert page.locator("#elo-chart canvas").count() == 1
        assert page.get_attribute("#elo-chart", "data-anchors") == "GNU Go level 5"
        assert "Maintenance on Sunday" in page.inner_text(".announcement-warning")
        strongest = page.inner_text("#strongest")
        assert f"{helpers.RUN}-n7" in strongest and "630 ± 51" in strongest, strongest
        screens.take(page, "home")

        # the releases page: the stable links, notes in Markdown, strength in words
        page.goto(url + "/releases/")
        assert page.inner_text(".release-notes h2") == "Stronger in the endgame"
        assert page.locator(".release-notes li strong").inner_text() == "seki"
        releases = page.inner_text("main")
        assert f"against {helpers.RUN}-n3, the previous release" in releases and "above GNU Go level 5" in releases
        assert f"{url}/networks/strongest/file" in page.inner_text("#stable-links")
        screens.take(page, "releases")

        # the numbers refresh by themselves: the page polls /live.json (here answered with new
        # numbers) every 15 s of the page's clock, which the test moves on
        live = context.new_page()
        live.route("**/*", only_this_server)
        live.clock.install()
        live.goto(url + "/")
        numbers = requests.get(url + "/live.json", timeout=30).json()
        assert numbers["games_total"] == 6
        new = {**numbers, "games_total": 1234567, "network_elo": 100.4, "network_elo_se": 10.0}
        live.route("**/live.json*", lambda route: route.fulfill(json=new))
        assert live.inner_text('[data-live="games_total"]') == "6"
        live.clock.run_for(16_000)
        live.wait_for_function("document.querySelector('[data-live=\"games_total\"]').textContent === '1,234,567'")
        assert live.inner_text('[data-live="network_elo"]') == "100 ± 20"  # 1.96 standard errors, from the server
        live.close()

        # the Elo chart: GNU Go's rated level a labelled line at its Elo (the level not rated: none),
        # hover names a network, dragging zooms in, the time axis redraws it
        page.goto(url + "/elo/")
        page.wait_for_selector('#elo-chart[data-ready="1"]')
        assert page.get_attribute("#elo-chart", "data-anchors") == "GNU Go level 5"
        assert "a dashed line is GNU Go at a level" in page.inner_text("main")
        lines = _anchor_lines(page)
        assert lines["rows"] and all(abs(row - lines["expected"]) <= 1.5 for row in lines["rows"]), lines
        assert lines["dashed"] > 0.4, lines  # a dashed line across the chart
        assert lines["label"] > 20, lines  # its label's text, just above its left end
        over = page.locator("#elo-chart .u-over")
        box = over.bounding_box()
        page.mouse.move(box["x"] + box["width"] * 0.98, box["y"] + box["height"] / 2)
        page.wait_for_function("document.getElementById('elo-hover').textContent.includes('test-n')")
        assert "Elo" in page.inner_text("#elo-hover") and "data rows" in page.inner_text("#elo-hover")
        assert "rows" in page.inner_text("#elo-chart .u-legend")
        full = float(page.get_attribute("#elo-chart", "data-x-max")) - float(
            page.get_attribute("#elo-chart", "data-x-min")
        )
        screens.take(page, "elo")
        page.mouse.move(box["x"] + box["width"] * 0.2, box["y"] + box["height"] / 2)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] / 2, steps=8)
        page.mouse.up()
        zoomed = float(page.get_attribute("#elo-chart", "data-x-max")) - float(
            page.get_attribute("#elo-chart", "data-x-min")
        )
        assert 0 < zoomed < full * 0.5, (zoomed, full)
        screens.take(page, "elo-zoomed")
        page.click('button[data-action="reset"]')
        reset = float(page.get_attribute("#elo-chart", "data-x-max")) - float(
            page.get_attribute("#elo-chart", "data-x-min")
        )
        assert abs(reset - full) <= full * 1e-6, (reset, full)  # the whole range again
        page.click('button[data-axis="time"]')
        page.wait_for_selector('#elo-chart[data-axis="time"]')
        assert page.get_attribute('button[data-axis="time"]', "aria-pressed") == "true"

        # the controls used before the data arrives (the data held back meanwhile), in a browser whose
        # clock is not on UTC: no script error, the chart drawn as the controls say, the time axis's
        # ticks on UTC hours (Kathmandu is 5:45 off UTC) as its label and the hover text say
        nepal = browser.new_context(viewport={"width": 1280, "height": 900}, timezone_id="Asia/Kathmandu")
        early = nepal.new_page()
        watch(early)
        held = []
        early.route("**/elo/data.json*", lambda route: held.append(route))
        early.goto(url + "/elo/")
        for _ in range(200):
            if held:
                break
            early.wait_for_timeout(50)
        assert len(held) == 1 and early.get_attribute("#elo-chart", "data-ready") is None
        early.click('button[data-axis="time"]')
        early.uncheck('[data-option="rejected"]')
        early.click('button[data-action="reset"]')
        held[0].continue_()
        early.wait_for_selector('#elo-chart[data-ready="1"]')
        assert early.get_attribute("#elo-chart", "data-axis") == "time"
        ticks = [float(t) for t in early.get_attribute("#elo-chart", "data-x-ticks").split(",") if t]
        assert ticks and all(t % 3600 == 0 for t in ticks), ticks
        box = early.locator("#elo-chart .u-over").bounding_box()
        early.mouse.move(box["x"] + box["width"] * 0.98, box["y"] + box["height"] / 2)
        early.wait_for_function("document.getElementById('elo-hover').textContent.includes('UTC')")
        hover = early.inner_text("#elo-hover")
        newest = data["networks"][-1]
        assert hover.startswith(newest.name) and newest.created_at.strftime("%Y-%m-%d %H:%M UTC") in hover, hover
        nepal.close()

        # a game: the arrow keys step through the moves and the stones change, captures included
        page.goto(url + f"/games/{data['capture_game']}/")
        board = page.locator("#board")
        assert board.get_attribute("data-move") == "7"
        assert (board.get_attribute("data-black"), board.get_attribute("data-white")) == ("4", "2")
        assert page.locator('#board circle.stone.white[data-vertex="B6"]').count() == 0  # captured
        stars = page.eval_on_selector_all("#board circle.star", "cs => cs.map(c => c.dataset.vertex).sort()")
        assert stars == ["C3", "C5", "E3", "E5"]  # 7x7: no centre star
        page.keyboard.press("End")  # nothing has the focus: the key is the page's (scrolling), not the board's
        page.keyboard.press("Home")
        assert board.get_attribute("data-move") == "7"
        page.keyboard.press("ArrowLeft")  # the arrows step whenever no field has the focus
        assert board.get_attribute("data-move") == "6"
        board.click()  # the board has the focus: Home, End and Page Up/Down are its
        page.keyboard.press("Home")
        assert board.get_attribute("data-move") == "0" and page.locator("#board circle.stone").count() == 0
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        assert board.get_attribute("data-move") == "2"
        assert page.locator('#board circle.stone.black[data-vertex="A6"]').count() == 1
        assert page.locator('#board circle.stone.white[data-vertex="B6"]').count() == 1
        assert "Move 2 of 7: white B6" in page.inner_text("#move-info")
        for _ in range(5):
            page.keyboard.press("ArrowRight")
        assert board.get_attribute("data-move") == "7"
        assert page.locator('#board circle.stone.white[data-vertex="B6"]').count() == 0
        assert "captured: 1 by black" in page.inner_text("#move-info")
        page.keyboard.press("ArrowLeft")
        assert board.get_attribute("data-move") == "6"
        assert page.locator('#board circle.stone.white[data-vertex="B6"]').count() == 1
        screens.take(page, "game")
        sgf = requests.get(url + f"/games/{data['capture_game']}.sgf", timeout=30)
        assert sgf.status_code == 200 and sgf.content == CAPTURE_SGF

        # a real self-play game replays to its last move
        page.goto(url + f"/games/{data['game']}/")
        moves = data["moves"]
        assert page.get_attribute("#board", "data-move") == str(moves)
        page.focus("#board")
        page.keyboard.press("PageUp")
        assert page.get_attribute("#board", "data-move") == str(max(0, moves - 10))

        # a 9x9 board has the five usual star points; on a screen too short for the page, Page Down
        # scrolls it unless the board has the focus
        page.set_viewport_size({"width": 1280, "height": 420})
        page.goto(url + f"/games/{data['nine_game']}/")
        stars = page.eval_on_selector_all("#board circle.star", "cs => cs.map(c => c.dataset.vertex).sort()")
        assert stars == ["C3", "C7", "E5", "G3", "G7"]
        page.keyboard.press("PageDown")
        page.wait_for_function("window.scrollY > 0")
        assert page.get_attribute("#board", "data-move") == "2"
        page.focus('.board-controls [data-step="first"]')
        page.keyboard.press("End")
        page.keyboard.press("PageUp")
        assert page.get_attribute("#board", "data-move") == "0"
        page.set_viewport_size({"width": 1280, "height": 900})

        # a game under Japanese rules: the phase of each move, a pass for ko marked on its point, and
        # the result by territory counting at the end
        page.goto(url + f"/games/{data['territory_game']}/")
        board = page.locator("#board")
        assert (board.get_attribute("data-move"), board.get_attribute("data-phase")) == ("16", "2")
        info = page.inner_text("#move-info")
        assert "Move 16 of 16 (encore phase 2): white pass" in info and "result B+0.5 by territory counting" in info
        assert "counted by territory" in page.inner_text(".game-info")
        board.click()
        for _ in range(4):
            page.keyboard.press("ArrowLeft")
        assert (board.get_attribute("data-move"), board.get_attribute("data-phase")) == ("12", "1")
        assert page.locator('#board polygon.ko-pass[data-vertex="B4"]').count() == 1
        assert page.locator('#board circle.stone.black[data-vertex="C4"]').count() == 1  # the board stays
        assert "Move 12 of 16 (encore phase 1): white passes for ko at B4" in page.inner_text("#move-info")
        screens.take(page, "territory-game")
        page.keyboard.press("ArrowLeft")
        assert page.locator("#board polygon.ko-pass").count() == 0
        assert "(encore phase 1): black C4" in page.inner_text("#move-info")
        page.keyboard.press("Home")
        assert board.get_attribute("data-phase") == "0" and "Move 0 of 16 (main phase): the start" in page.inner_text(
            "#move-info"
        )

        # sign up, open the link the server mailed, then make a client token, which the API takes
        page.goto(url + "/accounts/signup/")
        page.fill('input[name="username"]', "carol")
        page.fill('input[name="email"]', "carol@example.org")
        page.fill('input[name="password1"]', "correct horse battery 42")
        page.fill('input[name="password2"]', "correct horse battery 42")
        page.click('form.form button[type="submit"]')
        assert page.inner_text("h1") == "Check your mail"
        link = re.findall(r"https?://\S+/accounts/signup/confirm/\S+/", server_log.read_text(errors="replace"))[-1]
        page.goto(link)
        page.click('form.form button[type="submit"]')
        page.wait_for_url(url + "/")
        assert page.inner_text("nav a.me") == "carol"
        page.click('nav a[href="/accounts/tokens/"]')
        page.fill('input[name="name"]', "gpu-box")
        with page.expect_response(lambda r: r.url == url + "/accounts/tokens/" and r.request.method == "POST") as made:
            page.click('form.form button[type="submit"]')
        assert made.value.status == 200 and "no-store" in made.value.headers["cache-control"]  # no redirect
        key = page.inner_text("#new-token-key").strip()
        assert key.startswith("sente_")
        screens.take(page, "token")
        me = requests.get(url + "/api/v1/me/", headers={"Authorization": f"Token {key}"}, timeout=30)
        assert me.status_code == 200 and me.json()["username"] == "carol"
        page.goto(url + "/accounts/tokens/")  # the page again: the key is not shown twice
        assert page.locator("#new-token-key").count() == 0 and "gpu-box" in page.inner_text("table.tokens")
        assert key not in page.content()
        page.goto(url + "/start/")
        assert f"--server {url}/ --username carol" in page.inner_text("#contribute-command")

        # a phone: the page fits the screen, wide tables scroll inside their frame
        phone = browser.new_context(
            viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True, has_touch=True
        )
        small = phone.new_page()
        watch(small)
        for path, name in (
            ("/networks/", "phone-networks"),
            (f"/games/{data['capture_game']}/", "phone-game"),
            ("/", "phone-home"),
            ("/elo/", "phone-elo"),
            ("/contributors/", "phone-contributors"),
        ):
            small.goto(url + path)
            if path in ("/", "/elo/"):
                small.wait_for_selector('#elo-chart[data-ready="1"]')
            overflow = small.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 0, f"{path} is {overflow} px wider than the phone's screen"
            screens.take(small, name)
        phone.close()
    finally:
        context.close()
    return errors, outside
