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
    <table class="games"><thead><tr><th>game</th><th>id</th><th>status</th><th>seats</th><th>to act</th><th>version</th></tr></thead><tbody id="games"></tbody></table>`;
  const load = async () => {
    try {
      const reply = await call(ARBITER, "ListGames", {
        game: $("#f-game").value, status: $("#f-status").value || undefined,
        seatName: $("#f-seat").value, pageSize: 100,
      }, { admin: adminToken() });
      $("#games").innerHTML = (reply.games || []).map(g => `
        <tr data-game-id="${esc(g.gameId)}"><td>${esc((GAMES[g.game] || {}).title || g.game)}</td>
        <td><a href="#/game/${esc(g.game)}/${esc(g.gameId)}">${esc(g.gameId)}</a></td>
        <td class="status-${esc(g.status || "")}">${esc((g.status || "").toLowerCase())}${(g.openSeats || []).length ? ` (open: ${g.openSeats.join(", ")})` : ""}</td>
        <td>${(g.seats || []).map((s, i) => esc(s.name || (s.kind === "OPEN" ? "open" : `seat ${i}`)) + (s.kind === "AI" ? " 🤖" : "")).join(", ")}</td>
        <td>${(g.toAct || []).join(", ")}</td><td>${esc(g.version || 0)}</td></tr>`).join("");
    } catch (e) { showError(e); }
  };
  ["#f-game", "#f-status", "#f-seat"].forEach(s => $(s).addEventListener("input", load));
  load();
  const timer = setInterval(load, 2000);
  leaving.push(() => clearInterval(timer));
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
      $("#created").innerHTML = `<div class="card"><p>Created <a id="created-link" href="#/game/${game}/${esc(made.gameId)}">${esc(made.gameId)}</a>.</p>
        ${(made.invitations || []).map(i => `<p>Invitation for seat ${i.seat || 0}: <span class="secret invitation">${esc(i.code)}</span></p>`).join("")}
        <p class="muted">The seat tokens are kept in this browser.</p></div>`;
    } catch (e) { showError(e); }
  };
}

function joinPage() {
  $("#main").innerHTML = `<h1>Join a game</h1><div class="card form-row">
    <label>invitation code <input id="j-code" size="50"></label><label>your name <input id="j-name"></label>
    <button class="primary" id="j-join">Join</button></div>`;
  $("#j-join").onclick = async () => {
    try {
      const joined = await call(ARBITER, "JoinGame", { code: $("#j-code").value.trim(), name: $("#j-name").value });
      remember(joined.gameId, joined.seat || 0, joined.token);
      location.hash = `#/game/${joined.game}/${joined.gameId}`;
    } catch (e) { showError(e); }
  };
}

// ---- a game's page ---------------------------------------------------------------------------

function commandLabel(command) { return label(command); }

async function gamePage(game, gameId) {
  const main = $("#main");
  const mine = saved()[gameId] || {};
  const admin = adminToken();
  let seats = [];
  try {
    const listed = await call(ARBITER, "ListGames", { game, pageSize: 500 }, { admin });
    seats = ((listed.games || []).find(g => g.gameId === gameId) || {}).seats || [];
  } catch (e) { /* names are a nicety */ }
  const options = [];
  for (const s of Object.keys(mine)) options.push([`token:${s}`, `seat ${s} (yours)`]);
  options.push(["spectator", "spectator"]);
  if (admin) for (let s = 0; s < Math.max(seats.length, 1); s++) options.push([`admin:${s}`, `seat ${s} (admin)`]);
  main.innerHTML = `
    <h1>${esc((GAMES[game] || {}).title || game)} <span class="muted">${esc(gameId)}</span></h1>
    <div class="form-row"><label>view as <select id="as">${options.map(([v, t]) => `<option value="${v}">${t}</option>`).join("")}</select></label>
      <label>version <input id="slider" type="range" min="1" value="1"></label><span id="version"></span>
      <span id="live" class="muted"></span><button id="verify">verify</button><span id="verified"></span></div>
    <div class="grid"><div><div id="table"></div><div id="outcome"></div></div>
      <div><div class="card"><h3>Your commands</h3><div id="commands"></div></div>
      <div class="card"><h3>What happened</h3><ol id="happened"></ol></div></div></div>`;
  let latest = 0, replaying = false, controller = null;

  const auth = () => {
    const [kind, s] = $("#as").value.split(":");
    if (kind === "token") return { auth: { token: mine[s] }, seat: undefined };
    if (kind === "admin") return { auth: { admin }, seat: Number(s) };
    return { auth: {}, seat: undefined };
  };

  const show = (view, legal) => {
    $("#table").innerHTML = drawTable(game, view, seats);
    $("#version").textContent = `version ${view.version || 0}`;
    const out = view.outcome;
    $("#outcome").innerHTML = out ? `<div class="card" id="result">Game over: ${esc(out.reason || "")}; winners ${(out.winners || []).map(w => esc(seatName(seats, w))).join(", ") || "none"}</div>` : "";
    // Descriptions of what happened, where the game's view carries them.
    $("#happened").innerHTML = (view.happened || []).map(h => `<li>${esc(h)}</li>`).join("");
    const box = $("#commands");
    box.innerHTML = "";
    (legal || []).forEach((command, i) => {
      const b = el(`<button data-command="${i}">${esc(commandLabel(command))}</button>`);
      b.onclick = () => act(command);
      box.append(b);
    });
    if (!box.children.length) box.innerHTML = `<p class="muted">${replaying ? "replaying" : out ? "the game is over" : "nothing to do now"}</p>`;
  };

  const refresh = async () => {
    if (replaying) return;
    const { auth: a, seat } = auth();
    try {
      const view = await call(service(game), "GetView", { gameId, seat }, a);
      latest = Number(view.version || 0);
      $("#slider").max = latest;
      $("#slider").value = latest;
      let legal = [];
      if (a.token || a.admin) {
        legal = (await call(service(game), "ListLegalActions", { gameId, seat }, a)).commands || [];
      }
      show(view, legal);
    } catch (e) { showError(e); }
  };

  const act = async command => {
    const { auth: a, seat } = auth();
    try {
      await call(service(game), "Act", { gameId, seat, command, commandId: `console-${Date.now()}-${Math.random().toString(36).slice(2)}` }, a);
    } catch (e) { showError(e); }
    await refresh();
  };

  const follow = () => {
    if (controller) controller.abort();
    controller = new AbortController();
    const { auth: a, seat } = auth();
    $("#live").textContent = "live";
    stream(service(game), "Watch", { gameId, fromVersion: latest, seat }, a, () => refresh(), controller.signal)
      .then(err => { $("#live").textContent = err ? `stream ended: ${err.message}` : "over"; })
      .catch(() => { $("#live").textContent = ""; });
  };
  leaving.push(() => controller && controller.abort());

  $("#as").onchange = async () => { replaying = false; await refresh(); follow(); };
  $("#slider").oninput = async () => {
    const version = Number($("#slider").value);
    replaying = version < latest;
    if (!replaying) return refresh();
    const { auth: a, seat } = auth();
    try {
      const r = await call(ARBITER, "Replay", { gameId, version, seat }, { admin: a.admin });
      show(r.view, []);
      $("#version").textContent = `version ${r.version} (replay)`;
    } catch (e) { showError(e); }
  };
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
  if (parts[0] === "join") return joinPage();
  if (parts[0] === "game" && parts[2]) return gamePage(parts[1], parts[2]);
  return listPage();
}
window.addEventListener("hashchange", route);
route();
