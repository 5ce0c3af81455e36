// The console: the games list, creating and joining games, and a page per game.
"use strict";

const ARBITER = "arbiter.v1.Arbiter";
// bots: each game's own bots; levels: whether search bots play it (a game that hides
// something needs a re-deal first). The server checks every name (UNKNOWN_BOT).
const GAMES = {
  bubblee: { title: "Bubblee Pop", seats: [2, 2], bots: ["greedy", "random"], levels: true },
  bubble_shadow: { title: "Bubble and Shadow", seats: [2, 5], bots: ["greedy", "random"], levels: true },
  moody_bear: { title: "Moody Bear Kingdom", seats: [3, 5], bots: ["keeper", "random"], levels: true },
  shadow_council: { title: "Shadow Council", seats: [4, 6], bots: ["sleuth", "random"], levels: true },
  eila: { title: "Eila and Something Shiny", seats: [1, 1], bots: ["greedy", "random", "random_options"], levels: false },
};
const LEVELS = ["easy", "medium", "hard"]; // search bots: 15, 60 and 225 ms of CPU a move
const botChoices = g => ["", ...(g.levels ? LEVELS : []), ...g.bots]
  .map(b => `<option value="${b}">${b || "default"}</option>`).join("");
const service = game => `arbiter.${game}.v1.Game`;
const $ = sel => document.querySelector(sel);
let leaving = []; // what to stop when the page changes (timers, streams)

// ---- tokens this browser holds, and the admin token --------------------------------------

function saved() { return JSON.parse(localStorage.getItem("arbiter.tokens") || "{}"); }
function remember(gameId, seat, token) {
  const all = saved();
  (all[gameId] = all[gameId] || {})[seat] = token;
  localStorage.setItem("arbiter.tokens", JSON.stringify(all));
}
function adminToken() { return $("#admin-token").value.trim(); }
$("#admin-token").value = sessionStorage.getItem("arbiter.admin") || "";
$("#admin-token").addEventListener("change", () => {
  sessionStorage.setItem("arbiter.admin", adminToken());
  route();
});

function showError(e) {
  const box = $("#error");
  box.textContent = e.message || String(e);
  box.hidden = false;
  setTimeout(() => { box.hidden = true; }, 6000);
}

function el(html) {
  const t = document.createElement("template");
  t.innerHTML = html.trim();
  return t.content.firstElementChild;
}

// ---- the games list ----------------------------------------------------------------------

function listPage() {
  const main = $("#main");
  main.innerHTML = `
    <h1>Games</h1>
    <div class="filters">
      <label>game <select id="f-game"><option value="">any</option>${Object.entries(GAMES).map(([k, g]) => `<option value="${k}">${g.title}</option>`).join("")}</select></label>
      <label>status <select id="f-status"><option value="">any</option><option>WAITING</option><option>ACTIVE</option><option>FINISHED</option><option>EXPIRED</option></select></label>
      <label>seat name <input id="f-seat"></label>
      <span class="muted">updates every 2 s</span>
    </div>
    <div class="scroll"><table class="games"><thead><tr><th>game</th><th>id</th><th>status</th><th>seats</th><th>to act</th><th>version</th></tr></thead><tbody id="games"></tbody></table></div>`;
  let alive = true; // false once the page is left: a late answer must not touch the next page
  const load = async () => {
    try {
      const reply = await call(ARBITER, "ListGames", {
        game: $("#f-game").value, status: $("#f-status").value || undefined,
        seatName: $("#f-seat").value, pageSize: 100,
      }, { admin: adminToken() });
      if (!alive) return;
      $("#games").innerHTML = (reply.games || []).map(g => {
        const open = (g.openSeats || []).length;
        return `
        <tr data-game-id="${esc(g.gameId)}"><td>${esc((GAMES[g.game] || {}).title || g.game)}</td>
        <td><a href="#/game/${esc(g.game)}/${esc(g.gameId)}">${esc(g.gameId)}</a></td>
        <td class="status-${esc(g.status || "")}">${esc((g.status || "").toLowerCase())}${open ? ` for ${open} player${open > 1 ? "s" : ""} <a class="join button" href="#/join/${esc(g.gameId)}">Join</a>` : ""}</td>
        <td>${(g.seats || []).map((s, i) => esc(s.name || (s.kind === "OPEN" ? "open" : `seat ${i}`)) + (s.kind === "AI" ? " 🤖" : "")).join(", ")}</td>
        <td>${(g.toAct || []).map(s => esc(seatName(g.seats, s))).join(", ")}</td><td>${esc(g.version || 0)}</td></tr>`;
      }).join("");
    } catch (e) { showError(e); }
  };
  ["#f-game", "#f-status", "#f-seat"].forEach(s => $(s).addEventListener("input", load));
  load();
  const timer = setInterval(load, 2000);
  leaving.push(() => { alive = false; clearInterval(timer); });
}

// ---- creating and joining --------------------------------------------------------------------

function newPage() {
  const main = $("#main");
  main.innerHTML = `
    <h1>New game</h1>
    <div class="card">
      <div class="form-row"><label>game <select id="n-game">${Object.entries(GAMES).map(([k, g]) => `<option value="${k}">${g.title}</option>`).join("")}</select></label>
      <button id="n-add">add a seat</button></div>
      <div id="seats"></div>
      <button class="primary" id="n-create">Create</button>
    </div>
    <div id="created"></div>`;
  const seatRow = (kind = "HUMAN", name = "") => {
    const row = el(`<div class="form-row seat"><label>name <input class="s-name" value="${esc(name)}"></label>
      <label>kind <select class="s-kind"><option>HUMAN</option><option>OPEN</option><option>AI</option></select></label>
      <label>bot (AI) <select class="s-bot">${botChoices(GAMES[$("#n-game").value])}</select></label><button class="s-remove">remove</button></div>`);
    row.querySelector(".s-kind").value = kind;
    row.querySelector(".s-remove").onclick = () => row.remove();
    $("#seats").append(row);
  };
  const reset = () => {
    $("#seats").innerHTML = "";
    const g = GAMES[$("#n-game").value];
    for (let i = 0; i < g.seats[0]; i++) seatRow(i === 0 ? "HUMAN" : "AI", i === 0 ? "me" : "");
  };
  $("#n-game").onchange = reset;
  $("#n-add").onclick = () => seatRow("OPEN");
  reset();
  $("#n-create").onclick = async () => {
    const game = $("#n-game").value;
    const seats = [...document.querySelectorAll("#seats .seat")].map(r => ({
      name: r.querySelector(".s-name").value, kind: r.querySelector(".s-kind").value,
      bot: r.querySelector(".s-kind").value === "AI" ? r.querySelector(".s-bot").value : "",
    }));
    try {
      const made = await call(service(game), "CreateGame", { seats });
      for (const t of made.tokens || []) remember(made.gameId, t.seat || 0, t.token);
      rememberInvitations(made.gameId, made.invitations || []);
      $("#created").innerHTML = `<div class="card"><p>Created <a id="created-link" href="#/game/${game}/${esc(made.gameId)}">${esc(made.gameId)}</a>.</p>
        ${(made.invitations || []).map(i => `<p>Invitation for seat ${i.seat || 0}: <span class="secret invitation">${esc(i.code)}</span></p>`).join("")}
        <p class="muted">The seat tokens are kept in this browser.</p></div>`;
    } catch (e) { showError(e); }
  };
}

// Joining takes an invitation code: from the list's Join button, this browser's own codes for
// the game are filled in; anyone else pastes the code they were given.
function joinPage(gameId) {
  $("#main").innerHTML = `<h1>Join a game</h1>${gameId ? `<p class="muted">game ${esc(gameId)}</p>` : ""}<div class="card form-row">
    <label>invitation code <input id="j-code" size="50"></label><label>your name <input id="j-name"></label>
    <button class="primary" id="j-join">Join</button></div>`;
  const known = gameId ? savedInvitations(gameId) : [];
  if (known.length) $("#j-code").value = known[0].code;
  $("#j-join").onclick = async () => {
    try {
      const joined = await call(ARBITER, "JoinGame", { code: $("#j-code").value.trim(), name: $("#j-name").value });
      remember(joined.gameId, joined.seat || 0, joined.token);
      location.hash = `#/game/${joined.game}/${joined.gameId}`;
    } catch (e) { showError(e); }
  };
}

// ---- a game's page ---------------------------------------------------------------------------

// Each legal command in words: the server's (LegalActions.words) or, from a server without
// them, the command itself.
function wordsOf(reply) {
  const commands = reply.commands || [];
  return commands.map((command, i) => (reply.words || [])[i] ||
    { label: label(command), group: Object.keys(command)[0].replace(/([A-Z])/g, " $1").toLowerCase() });
}

// The invitations this browser created, kept to show while a game waits for players.
function savedInvitations(gameId) { return (JSON.parse(localStorage.getItem("arbiter.invitations") || "{}"))[gameId] || []; }
function rememberInvitations(gameId, invitations) {
  const all = JSON.parse(localStorage.getItem("arbiter.invitations") || "{}");
  all[gameId] = invitations.map(i => ({ seat: i.seat || 0, code: i.code }));
  localStorage.setItem("arbiter.invitations", JSON.stringify(all));
}

async function summaryOf(game, gameId) {
  const listed = await call(ARBITER, "ListGames", { game, pageSize: 500 }, { admin: adminToken() });
  return (listed.games || []).find(g => g.gameId === gameId) || {};
}

const catalogs = {}; // each game's catalog entries, asked once a page load

async function gamePage(game, gameId) {
  const main = $("#main");
  const mine = saved()[gameId] || {};
  const admin = adminToken();
  let alive = true; // false once the page is left: late answers must not touch the next page
  leaving.push(() => { alive = false; });
  let summary = {};
  try { summary = await summaryOf(game, gameId); } catch (e) { /* names are a nicety */ }
  setCatalog(catalogs[game] || []);
  if (!catalogs[game]) {
    call(ARBITER, "GetCatalog", { game }).then(c => { setCatalog(catalogs[game] = c.entries || []); if (alive) refresh(); })
      .catch(() => setCatalog([])); // a server without catalogs: names from the ids
  }
  if (!alive) return;
  const seats = summary.seats || [];
  const options = [];
  const seatLabel = s => seats[s] && seats[s].name ? `${seats[s].name} · seat ${s}` : `seat ${s}`;
  for (const s of Object.keys(mine)) options.push([`token:${s}`, `${seatLabel(s)} (yours)`]);
  options.push(["spectator", "spectator"]);
  if (admin) for (let s = 0; s < Math.max(seats.length, 1); s++) options.push([`admin:${s}`, `${seatLabel(s)} (admin)`]);
  main.innerHTML = `
    <h1>${esc((GAMES[game] || {}).title || game)} <span class="muted">${esc(gameId)}</span></h1>
    <div id="waiting"></div>
    <div class="form-row"><label>view as <select id="as">${options.map(([v, t]) => `<option value="${v}">${esc(t)}</option>`).join("")}</select></label>
      <span class="replay"><button id="back" title="one version back">◀</button>
      <label>version <input id="slider" type="range" min="1" value="1"></label>
      <button id="forward" title="one version on">▶</button></span><span id="version"></span>
      <span id="live" class="muted"></span><button id="verify">verify</button><span id="verified"></span></div>
    <div class="grid"><div><div id="table"></div><div id="outcome"></div></div>
      <div><div class="card"><h3>Your commands</h3><div id="commands"></div></div>
      <div class="card"><h3>What happened</h3><ol id="happened"></ol></div>
      <div class="card"><h3>Events</h3><ol id="events"></ol></div></div></div>`;
  let latest = 0, replaying = false, controller = null, shownVersion = -1;
  // The table's clicks: the keys picked so far, matched against each legal command's paths.
  let legal = [], words = [], paths = [], chosen = [];

  const auth = () => {
    const [kind, s] = $("#as").value.split(":");
    if (kind === "token") return { auth: { token: mine[s] }, seat: undefined };
    if (kind === "admin") return { auth: { admin }, seat: Number(s) };
    return { auth: {}, seat: undefined };
  };

  // While seats are open the page asks again every 2 s: a join need not change the log.
  let poll = null;
  leaving.push(() => clearTimeout(poll));
  const waiting = open => {
    clearTimeout(poll);
    if (open.length && !replaying) poll = setTimeout(refresh, 2000);
    const codes = savedInvitations(gameId).filter(i => open.includes(i.seat));
    $("#waiting").innerHTML = open.length ? `<div class="card notice">Waiting for ${open.length} player${open.length > 1 ? "s" : ""}: the game begins when every seat is taken.
      ${codes.length ? codes.map(i => `<p>Invitation for ${esc(seatLabel(i.seat))}: <span class="secret invitation">${esc(i.code)}</span>
        <button class="copy" data-code="${esc(i.code)}">copy</button></p>`).join("") : "<p>Whoever created the game holds the invitations.</p>"}</div>` : "";
  };
  $("#waiting").onclick = e => { if (e.target.dataset.code) navigator.clipboard.writeText(e.target.dataset.code).catch(showError); };

  // Marks what the table lets you click now; the keys it does not draw and the commands the
  // picks so far complete become chips beneath it.
  const mark = () => {
    const { next, done } = reach(paths, chosen);
    const drawn = new Set();
    for (const node of $("#table").querySelectorAll("svg [data-pick]")) {
      const key = node.dataset.pick;
      drawn.add(key);
      node.classList.toggle("pickable", next.has(key));
      node.classList.toggle("chosen", chosen.includes(key));
    }
    const chips = [...[...next].filter(k => !drawn.has(k)).map(k => [k, keyText(k, seats)]),
      ...done.map(i => [`command:${i}`, words[i].label])];
    $("#moves").innerHTML = chips.map(([k, text]) => `<button class="chip pickable" data-pick="${esc(k)}">${esc(text)}</button>`).join("") +
      (chosen.length ? `<button id="unpick">start again</button>` : "");
  };
  $("#table").onclick = e => {
    if (e.target.id === "unpick") { chosen = []; return mark(); }
    const node = e.target.closest("[data-pick]");
    if (!node) return;
    const key = node.dataset.pick;
    if (key.startsWith("command:")) return act(legal[Number(key.slice(8))]);
    if (!reach(paths, chosen).next.has(key)) return;
    chosen.push(key);
    const after = reach(paths, chosen);
    if (after.done.length === 1 && !after.next.size) return act(legal[after.done[0]]);
    mark();
  };

  const show = (view, reply) => {
    if (!alive) return;
    const version = Number(view.version || 0);
    if (version !== shownVersion) chosen = [];
    shownVersion = version;
    const open = view.openSeats || summary.openSeats || [];
    legal = open.length ? [] : (reply || {}).commands || []; // nothing begins before every seat is taken
    words = wordsOf({ ...reply, commands: legal });
    paths = legal.map(command => commandPaths(game, command));
    $("#table").innerHTML = drawTable(game, view, seats, $("#table").clientWidth) + `<div id="moves"></div>`;
    mark();
    $("#version").textContent = `version ${version}`;
    waiting(open);
    const out = view.outcome;
    $("#outcome").innerHTML = out ? `<div class="card" id="result">Game over: ${esc(out.reason || "")}; winners ${(out.winners || []).map(w => esc(seatName(seats, w))).join(", ") || "none"}</div>` : "";
    // Descriptions of what happened, where the game's view carries them.
    $("#happened").innerHTML = (view.happened || []).map(h => `<li>${esc(h)}</li>`).join("");
    const groups = new Map();
    legal.forEach((command, i) => groups.set(words[i].group, [...(groups.get(words[i].group) || []), i]));
    // A group of many commands (Bubble and Shadow's pacts, say) opens on a click.
    $("#commands").innerHTML = [...groups].map(([group, members]) => `<details class="group"${members.length <= 8 ? " open" : ""}>
      <summary>${esc(group)} (${members.length})</summary>${members.map(i =>
      `<button data-command="${i}" data-kind="${esc(Object.keys(legal[i])[0])}" title="${esc(hoverText(legal[i]))}">${esc(words[i].label)}</button>`).join("")}</details>`).join("") ||
      `<p class="muted">${replaying ? "replaying" : out ? "the game is over" : "nothing to do now"}</p>`;
  };
  $("#commands").onclick = e => { const i = e.target.dataset.command; if (i !== undefined) act(legal[Number(i)]); };
  // A command's rules text: that of the catalogued things it names.
  const hoverText = command => (JSON.stringify(command).match(/"[A-Za-z0-9_]+"/g) || [])
    .map(id => id.slice(1, -1)).filter(id => catalog[id]).map(ruleOf).join("\n");

  const refresh = async () => {
    if (replaying || !alive) return;
    const { auth: a, seat } = auth();
    try {
      const view = await call(service(game), "GetView", { gameId, seat }, a);
      if (view.openSeats === undefined && (summary.openSeats || []).length) summary = await summaryOf(game, gameId);
      let reply = {};
      // Only seats to act have legal commands: the others need no second call per update.
      const shown = view.seat !== undefined ? view.seat : seat;
      const toAct = (view.toAct || []).map(Number).includes(Number(shown));
      if ((a.token || a.admin) && toAct) reply = await call(service(game), "ListLegalActions", { gameId, seat }, a);
      if (!alive || replaying) return;
      latest = Number(view.version || 0);
      $("#slider").max = latest;
      $("#slider").value = latest;
      show(view, reply);
    } catch (e) { if (alive) showError(e); }
  };

  const act = async command => {
    chosen = [];
    const { auth: a, seat } = auth();
    try {
      await call(service(game), "Act", { gameId, seat, command, commandId: `console-${Date.now()}-${Math.random().toString(36).slice(2)}` }, a);
    } catch (e) { showError(e); }
    await refresh();
  };

  // The game's log as this seat may see it, one entry a version, each a step of the replay.
  const entry = update => {
    const body = Object.keys(update.event || {}).find(k => k !== "version" && k !== "hidden") ||
      (update.started ? "started" : update.finished ? "finished" : "");
    const said = ((update.view || {}).happened || []).slice(-1)[0];
    return `<li data-version="${esc(update.version || 0)}"><a href="javascript:void 0">${esc(update.version || 0)}: ${esc(said || body.replace(/([A-Z])/g, " $1").toLowerCase())}</a></li>`;
  };
  let soon = null; // one refresh for a burst of updates
  const follow = () => {
    if (controller) controller.abort();
    controller = new AbortController();
    const { auth: a, seat } = auth();
    $("#events").innerHTML = "";
    $("#live").textContent = "live";
    stream(service(game), "Watch", { gameId, fromVersion: 0, seat }, a, update => {
      if (!alive) return;
      $("#events").insertAdjacentHTML("beforeend", entry(update));
      soon = soon || setTimeout(() => { soon = null; refresh(); }, 50);
    }, controller.signal)
      .then(err => { if (alive) $("#live").textContent = err ? `stream ended: ${err.message}` : "over"; })
      .catch(() => { if (alive) $("#live").textContent = ""; });
  };
  leaving.push(() => controller && controller.abort());

  const replayTo = async version => {
    version = Math.max(1, Math.min(latest, version));
    $("#slider").value = version;
    replaying = version < latest;
    if (!replaying) return refresh();
    const { auth: a, seat } = auth();
    try {
      // A seat's own token replays that seat's view; the admin token any seat's.
      const r = await call(ARBITER, "Replay", { gameId, version, seat }, a);
      if (!alive) return;
      show(r.view, null);
      $("#version").textContent = `version ${r.version} (replay)`;
    } catch (e) { showError(e); }
  };
  $("#as").onchange = async () => { replaying = false; await refresh(); follow(); };
  $("#slider").oninput = () => replayTo(Number($("#slider").value));
  $("#back").onclick = () => replayTo(Number($("#slider").value) - 1);
  $("#forward").onclick = () => replayTo(Number($("#slider").value) + 1);
  $("#events").onclick = e => { const li = e.target.closest("li"); if (li) replayTo(Number(li.dataset.version)); };
  $("#verify").onclick = async () => {
    try {
      const r = await call(ARBITER, "VerifyLog", { gameId }, { admin });
      $("#verified").textContent = r.ok ? `verified: ${r.entries} entries re-run` : `not verified: ${r.reason}`;
    } catch (e) { showError(e); }
  };
  await refresh();
  follow();
}

// ---- routing ---------------------------------------------------------------------------------

function route() {
  leaving.forEach(stop => stop());
  leaving = [];
  const parts = location.hash.replace(/^#\/?/, "").split("/");
  if (parts[0] === "new") return newPage();
  if (parts[0] === "join") return joinPage(parts[1]);
  if (parts[0] === "game" && parts[2]) return gamePage(parts[1], parts[2]);
  return listPage();
}
window.addEventListener("hashchange", route);
route();
