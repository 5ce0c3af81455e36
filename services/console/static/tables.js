// Each game's table in SVG, drawn from the seat's view (proto3 JSON: absent = zero or hidden).
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";

function esc(s) {
  return String(s).replace(/[&<>"]/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
}

// A short text for any value of a view: objects as "key value" pairs, lists joined.
function label(v) {
  if (v === undefined || v === null) return "";
  if (Array.isArray(v)) return v.map(label).join(", ");
  if (typeof v === "object") {
    // Unset values (an unspecified enum, an empty list or text, false) say nothing; a 0 may
    // be a seat or a column, so it stays.
    const said = Object.entries(v).filter(([, x]) => !(x === "" || x === false ||
      (Array.isArray(x) && !x.length) || String(x).endsWith("_UNSPECIFIED")));
    return said.map(([k, x]) => typeof x === "object" ? `${k}(${label(x)})` : `${k} ${x}`).join(" ");
  }
  return String(v);
}

class Canvas {
  constructor(width) { this.width = width; this.y = 10; this.parts = []; }
  add(s) { this.parts.push(s); }
  text(x, y, s, opts = {}) {
    this.add(`<text x="${x}" y="${y}" fill="${opts.fill || "#f4f1e8"}" font-size="${opts.size || 13}"` +
      `${opts.bold ? ' font-weight="bold"' : ""}${opts.anchor ? ` text-anchor="${opts.anchor}"` : ""}>${esc(s)}</text>`);
  }
  rect(x, y, w, h, fill, opts = {}) {
    this.add(`<rect x="${x}" y="${y}" width="${w}" height="${h}" rx="${opts.rx ?? 5}" fill="${fill}"` +
      ` stroke="${opts.stroke || "#0006"}"${opts.title ? ` data-label="${esc(opts.title)}"` : ""}${picks(opts.pick)}>` +
      `${opts.title ? `<title>${esc(opts.title)}</title>` : ""}</rect>`);
  }
  circle(x, y, r, fill, title) {
    this.add(`<circle cx="${x}" cy="${y}" r="${r}" fill="${fill}" stroke="#0008">` +
      `${title ? `<title>${esc(title)}</title>` : ""}</circle>`);
  }
  // A zone: a title, then its items as cards (wrapping), face-down ones as backs. A zone
  // with `pick` (a seat, say) is clicked by its title bar or any of its items.
  zone(title, items, opts = {}) {
    const cardW = Math.min(opts.cardW || 118, this.width - 20), cardH = opts.cardH || 46, pad = 8;
    const perRow = Math.max(1, Math.floor((this.width - 20) / (cardW + pad)));
    if (opts.pick) this.rect(4, this.y, this.width - 8, 20, "#ffffff14", { pick: opts.pick, stroke: "none", title });
    this.text(10, this.y + 14, title, { bold: true });
    this.y += 22;
    const list = items.length ? items : [{ text: opts.empty || "(none)", empty: true }];
    list.forEach((item, i) => {
      const x = 10 + (i % perRow) * (cardW + pad);
      const y = this.y + Math.floor(i / perRow) * (cardH + pad);
      if (item.empty) { this.text(x, y + 16, item.text, { fill: "#9fb8ad", size: 12 }); return; }
      const fill = item.back ? "#6c4f86" : (item.fill || "#fdf8ea");
      this.rect(x, y, cardW, cardH, fill, { title: item.title || item.text, pick: item.pick || opts.pick });
      const words = wrap(item.text, Math.floor(cardW / 6.6));
      words.slice(0, 3).forEach((line, k) => this.text(x + 5, y + 15 + k * 13, line,
        { fill: item.back ? "#fff" : "#1d2330", size: 11 }));
    });
    this.y += Math.ceil(list.length / perRow) * (cardH + pad) + 6;
  }
  svg() {
    return `<svg xmlns="${SVGNS}" class="table" viewBox="0 0 ${this.width} ${this.y + 10}">${this.parts.join("")}</svg>`;
  }
}

// The key a click on a drawn thing picks (see commandPaths), as an attribute.
function picks(key) { return key ? ` data-pick="${esc(key)}"` : ""; }

function wrap(s, width) {
  const lines = [];
  let line = "";
  for (const word of String(s).split(/\s+/)) {
    if ((line + " " + word).trim().length > width && line) { lines.push(line); line = word; }
    else line = (line + " " + word).trim();
  }
  if (line) lines.push(line);
  return lines;
}

// An enum's name in lower case; "" for an unspecified (hidden or unset) value.
function named(v) { return v && !String(v).endsWith("UNSPECIFIED") ? String(v).toLowerCase() : ""; }

// Display names and rules text by id (Arbiter.GetCatalog), where the server serves them.
let catalog = {};
function setCatalog(entries) { catalog = Object.fromEntries((entries || []).map(e => [e.id, e])); }
function nameOf(id) {
  const entry = catalog[id];
  if (entry && entry.name) return entry.name;
  const enumName = /^[A-Z][A-Z_]+$/.test(String(id)); // "THUNDER_ASSASSIN"; an id like "I02" stays
  return enumName ? String(id).replace(/^(CARD|IDENTITY|EVENT)_/, "").toLowerCase().replace(/_/g, " ") : String(id);
}
function ruleOf(id) { const entry = catalog[id]; return entry && entry.text ? `${nameOf(id)}: ${entry.text}` : nameOf(id); }

// ---- clicking the table: each legal command as the keys of the things clicked, in order ----

// The fields of a command that name something drawn on the table, as the key prefix drawn
// there; a command's other fields (a guess, a blank end, an order) are told apart by words.
const PICKED_FIELDS = [["cards", "card"], ["card", "card"], ["give", "card"], ["discard", "card"],
  ["publicSlot", "slot"], ["target", "seat"], ["mortal", "seat"], ["secondTarget", "seat"],
  ["option", "option"], ["resource", "resource"], ["conversion", "conversion"]];

// Every order in which a few cards may be clicked (a pair played together, say).
function orders(list) {
  if (list.length < 2 || list.length > 3) return [list];
  const all = list.flatMap((x, i) => orders([...list.slice(0, i), ...list.slice(i + 1)]).map(rest => [x, ...rest]));
  return [...new Map(all.map(o => [o.join(" "), o])).values()];
}

// The paths of keys (alternatives) that pick `command` on the table; [[]]: nothing to click.
function commandPaths(game, command) {
  if (game === "bubblee") return bubbleePaths(command);
  const body = Object.values(command)[0] || {};
  const cards = [], rest = [];
  for (const [field, prefix] of PICKED_FIELDS) {
    const value = body[field];
    if (value === undefined || value === "" || String(value).endsWith("UNSPECIFIED")) continue;
    for (const x of [].concat(value)) {
      const key = `${prefix}:${prefix === "resource" ? String(x).toLowerCase() : x}`;
      (prefix === "card" ? cards : rest).push(key);
    }
  }
  return orders(cards).map(order => [...order, ...rest]);
}

// Bubblee: a sky cell to place the drawn Bubblee; two sky Bubblees to swap; two sky Bubblees
// and then a column of your planet to drop them; a power from the pool.
function bubbleePaths(command) {
  const sky = cell => `sky:${(cell || {}).column || 0}:${(cell || {}).row || 0}`;
  if (command.place) return [[sky(command.place.cell)]];
  const pair = command.swap || command.drop;
  if (pair) {
    const both = [[sky(pair.a), sky(pair.b)], [sky(pair.b), sky(pair.a)]];
    if (command.swap) return both;
    const columns = [...new Set([(pair.a || {}).column || 0, (pair.b || {}).column || 0])];
    return both.flatMap(p => columns.map(c => [...p, `column:${c}`]));
  }
  const power = command.applyPower || command.declinePower;
  return power ? [[`power:${power.index || 0}`]] : [[]];
}

// The next keys the legal commands allow after `chosen`, and the commands `chosen` completes.
function reach(paths, chosen) {
  const next = new Set(), done = [];
  paths.forEach((alternatives, i) => {
    let complete = false;
    for (const path of alternatives) {
      if (path.length < chosen.length || !chosen.every((k, j) => path[j] === k)) continue;
      if (path.length === chosen.length) complete = true;
      else next.add(path[chosen.length]);
    }
    if (complete) done.push(i);
  });
  return { next, done };
}

// A key's words, for a key the table does not draw (a seat of a game without seat zones).
function keyText(key, seats) {
  const [prefix, value] = key.split(":");
  if (prefix === "seat") return seatName(seats, Number(value));
  if (prefix === "card") return nameOf(value);
  return key.replace(/:/g, " ");
}

function seatName(seats, i) {
  const s = (seats || [])[i];
  return s && s.name ? `${s.name} (seat ${i})` : `seat ${i}`;
}

// ---- Bubblee Pop: the shared sky between the two planets ------------------------------------

const BUBBLEE_COLOURS = {
  COLOUR_RED: "#e0443a", COLOUR_PURPLE: "#8e4fc7", COLOUR_BLUE: "#3a7be0",
  COLOUR_GREEN: "#3fae4f", COLOUR_YELLOW: "#f2c531", COLOUR_BLACK: "#222",
};

function bubblee(view, seats) {
  const c = new Canvas(560);
  const cell = 44, left = 170;
  const planets = view.planets || [];
  const grid = (top, planet, rows, title, flip) => {
    const cells = (planets[planet] || {}).cells;
    const own = planet === (view.seat || 0) && view.seat !== undefined; // drops land on it
    c.text(10, top + rows * cell / 2, title, { bold: true });
    for (let r = 0; r < rows; r++) {
      for (let col = 0; col < 5; col++) {
        const row = flip ? r : rows - 1 - r; // planet 0 grows downwards towards its sky row
        const colour = (cells || [])[row * 5 + col];
        const x = left + col * cell, y = top + r * cell;
        const full = colour && colour !== "COLOUR_UNSPECIFIED";
        c.rect(x, y, cell - 4, cell - 4, "#1b5a46", { rx: 8, pick: own ? `column:${col}` : "",
          title: full ? `${colour.slice(7).toLowerCase()} at column ${col + 1}, row ${row + 1}` : "" });
        if (full) c.circle(x + cell / 2 - 2, y + cell / 2 - 2, cell / 2 - 6, BUBBLEE_COLOURS[colour]);
      }
    }
  };
  const sky = view.sky || [];
  const planetTitle = i => view.options && view.options.level ? (i === 0 ? "your planet" : "target") : seatName(seats, i);
  // Top: planet 1 (its ground at the top); middle: the sky; bottom: planet 0.
  grid(c.y, 1, 4, planetTitle(1), true);
  c.y += 4 * cell + 8;
  c.text(10, c.y + cell, "sky", { bold: true });
  for (let r = 0; r < 2; r++) {
    for (let col = 0; col < 5; col++) {
      const row = 1 - r;
      const colour = sky[row * 5 + col];
      const x = left + col * cell, y = c.y + r * cell;
      const full = colour && colour !== "COLOUR_UNSPECIFIED";
      c.rect(x, y, cell - 4, cell - 4, "#22364f", { rx: 20, pick: `sky:${col}:${row}`,
        title: full ? `${colour.slice(7).toLowerCase()} in the sky, column ${col + 1}, row ${row + 1}` : "" });
      if (full) c.circle(x + cell / 2 - 2, y + cell / 2 - 2, cell / 2 - 6, BUBBLEE_COLOURS[colour]);
    }
  }
  c.y += 2 * cell + 8;
  grid(c.y, 0, 4, planetTitle(0), false);
  c.y += 4 * cell + 10;
  const scores = view.scores || [];
  c.text(10, c.y + 14, `scores: ${scores.map((s, i) => `${seatName(seats, i)} ${s || 0}`).join(" · ")}`);
  c.y += 22;
  if (view.drawn && view.drawn !== "COLOUR_UNSPECIFIED") {
    c.text(10, c.y + 14, "drawn:");
    c.circle(80, c.y + 10, 10, BUBBLEE_COLOURS[view.drawn], `drawn ${view.drawn}`);
    c.y += 24;
  }
  c.text(10, c.y + 14, `phase ${(view.phase || "").replace("PHASE_", "").toLowerCase()} · bag ${view.bagSize || 0}`);
  c.y += 20;
  if ((view.pool || []).length) {
    c.zone("powers", view.pool.map((p, i) => ({ text: `${p.slice(7).toLowerCase()} power`, fill: BUBBLEE_COLOURS[p], title: ruleOf(p), pick: `power:${i}` })), { cardW: 110, cardH: 30 });
  }
  return c.svg();
}

// ---- Bubble and Shadow: screens, pacts and the soul ----------------------------------------

function tokens(list) { return (list || []).map(t => `${t.count || 0} ${String(t.token || "").toLowerCase()}`).join(", "); }
function pact(p) { return p ? `pact ${p.id || 0}${p.blank ? " (blank)" : ""}: ${(p.ends || []).map(e => `${e.quantity || 0} ${String(e.token).toLowerCase()}`).join(" / ")}` : ""; }

function bubbleShadow(view, seats, width) {
  const c = new Canvas(width);
  c.text(10, c.y + 12, `round ${view.round || 0} · ${String(view.stage || "").replace("STAGE_", "").toLowerCase()} · magician ${seatName(seats, view.magician || 0)}`);
  c.y += 22;
  for (const p of view.players || []) {
    const s = p.seat || 0;
    c.zone(`${seatName(seats, s)} — soul ${p.soul || 0}${p.satisfied ? " · satisfied" : ""}`, [
      { text: `in front: ${tokens(p.front) || "nothing"}`, fill: "#e8f1ff" },
      p.behind && p.behind.length ? { text: `behind the screen: ${tokens(p.behind)}`, fill: "#f3e5ff" }
        : { text: `screen: ${p.behindCount || 0} tokens`, back: true },
      ...(p.hand || []).map(h => ({ text: pact(h), pick: `card:${h.id || 0}` })),
      ...Array.from({ length: (p.hand || []).length ? 0 : (p.handCount || 0) }, () => ({ text: "pact", back: true })),
      ...(p.pacts || []).map(sp => ({ text: `signed pact ${sp.card || 0} with ${seatName(seats, sp.mortal || 0)}`, fill: "#fff1c9" })),
    ], { cardW: 170, pick: s === view.seat ? "" : `seat:${s}` });
  }
  if (view.pending) c.zone("pact on the table", [{ text: `${pact(view.pending.card)} from ${seatName(seats, view.pending.magician || 0)} to ${seatName(seats, view.pending.mortal || 0)}`, fill: "#fff1c9" }], { cardW: 360 });
  c.zone("public pacts", (view.publicPacts || []).map((p, i) => ({ text: pact(p), pick: `slot:${i}` })), { cardW: 170 });
  return c.svg();
}

// ---- Moody Bear Kingdom: hands and the response stack --------------------------------------

function card(cd) { return cd ? nameOf(cd) : ""; }
function cardItem(cd, fill) { return { text: card(cd), title: ruleOf(cd), pick: `card:${cd}`, fill }; }

// A play on the response stack: its cards by name, and its target.
function played(play, seats) {
  const target = play.target === undefined ? "" : ` on ${seatName(seats, play.target)}`;
  return `${(play.cards || []).map(nameOf).join(" + ")}${target}${named(play.named) ? ", naming " + nameOf(play.named) : ""}`;
}

function moodyBear(view, seats, width) {
  const c = new Canvas(width);
  c.text(10, c.y + 12, `${String(view.phase || "").toLowerCase()} · ${seatName(seats, view.turn || 0)} to play · deck ${view.deckSize || 0}${named(view.team) ? " · your team " + named(view.team) : ""}`);
  c.y += 22;
  for (const p of view.players || []) {
    const s = p.seat || 0;
    if (s === view.seat) continue;
    const shown = (p.revealedHand || []).map(cd => ({ text: card(cd), title: ruleOf(cd) }));
    c.zone(`${seatName(seats, s)}${named(p.team) ? " · " + named(p.team) : ""}`,
      shown.length ? shown : Array.from({ length: p.handSize || 0 }, () => ({ text: "card", back: true })),
      { cardW: 60, cardH: 40, pick: `seat:${s}` });
  }
  if (view.window) {
    const w = view.window;
    c.zone(`response stack (window ${w.id || 0}; waiting for ${(w.waiting || []).map(s => seatName(seats, s)).join(", ") || "nobody"})`,
      (w.stack || []).map(e => ({ text: `${String(e.kind || "").toLowerCase()} by ${seatName(seats, e.seat || 0)}${e.play ? ": " + played(e.play, seats) : ""}`, fill: "#ffe1d6" })),
      { cardW: 220, empty: "(empty)" });
  }
  if (view.trade) c.zone("trade", [{ text: `${seatName(seats, view.trade.seat || 0)} offers ${seatName(seats, view.trade.target || 0)} ${view.trade.card ? card(view.trade.card) : "a card"}` }], { cardW: 360 });
  c.zone("discard", (view.discard || []).slice(-6).map(cd => ({ text: card(cd), title: ruleOf(cd), fill: "#eee" })));
  if ((view.knownTop || []).length) c.zone("the deck's top as you arranged it", view.knownTop.map(cd => ({ text: card(cd), title: ruleOf(cd), fill: "#eee" })));
  if (view.seat !== undefined) c.zone("your hand", (view.hand || []).map(cd => cardItem(cd)));
  return c.svg();
}

// ---- Shadow Council: the zones' tracks and the clues ---------------------------------------

function shadowCouncil(view, seats, width) {
  const c = new Canvas(width);
  c.text(10, c.y + 12, `round ${view.round || 0}/${view.rounds || 0} · ${String(view.phase || "").toLowerCase()}${named(view.event) ? " · " + nameOf(view.event) : ""}`);
  c.y += 24;
  const zones = [["military", view.military], ["economy", view.economy], ["strategy", view.strategy], ["shadow alley", view.shadowAlley]];
  zones.forEach(([name, value], i) => {
    const boxW = (width - 20) / 4 - 8, x = 10 + i * (boxW + 8);
    c.rect(x, c.y, boxW, 60, "#234a6b", { title: `${name} ${value || 0}` });
    c.text(x + 8, c.y + 20, name, { bold: true });
    c.text(x + 8, c.y + 46, String(value || 0), { size: 22 });
  });
  c.y += 72;
  c.zone("seats", (view.seats || []).map(s => ({
    text: `${seatName(seats, s.seat || 0)} ${s.alive === false ? "✝" : ""} gold ${s.gold || 0} · ${s.handSize || 0} cards · ${named(s.publicIdentity) ? nameOf(s.publicIdentity) : ""}${named(s.shadowIdentity) ? " / shadow " + nameOf(s.shadowIdentity) : ""}`,
    fill: s.alive === false ? "#bbb" : "#fdf8ea", pick: `seat:${s.seat || 0}`,
  })), { cardW: 240 });
  c.zone("your hand", (view.hand || []).map(cd => cardItem(cd)), { cardW: 170 });
  c.zone("your clues", (view.clues || []).map(cl => ({ text: label(cl), fill: "#e5f5e0" })), { cardW: 240 });
  c.zone("public facts", (view.facts || []).map(f => ({ text: label(f), fill: "#eee" })), { cardW: 240 });
  return c.svg();
}

// ---- Eila and Something Shiny: cards, dice, resources and the mine -------------------------

function eila(view, seats, width) {
  const c = new Canvas(width);
  c.text(10, c.y + 12, `chapter ${view.chapter || 0} · day ${view.day || 0} · ${view.phase || ""} · HP ${view.hp || 0}/${view.maxHp || 0}`);
  c.y += 22;
  const storage = Object.entries(view.storage || {});
  c.zone("resources", storage.map(([k, v]) => ({ text: `${k} ${v}`, fill: "#e8f1ff", pick: `resource:${k.toLowerCase()}` })), { cardW: 110, cardH: 30 });
  const cardOf = cv => ({ text: `${cv.title || cv.id || ""}: ${cv.text || ""}`, fill: { green: "#dff3df", blue: "#dde8fb", red: "#fbdede" }[cv.color] || "#fdf8ea", title: cv.text, pick: `card:${cv.id}` });
  if (view.present) {
    c.zone("present card", [cardOf(view.present)], { cardW: 360, cardH: 60 });
    c.zone("its options", (view.present.options || []).map((o, i) => ({ text: `${o.label || ""}: ${o.text || ""}`, title: o.whyNot || o.text, fill: o.available === false ? "#ccc" : "#fff7d6", pick: `option:${i}` })), { cardW: 360, cardH: 46 });
  }
  if (view.location) {
    c.zone("location", [cardOf(view.location)], { cardW: 360, cardH: 60 });
    c.zone("its actions", (view.location.options || []).map((o, i) => ({ text: `${o.label || ""}: ${o.text || ""}`, fill: "#fff7d6", pick: `option:${i}` })), { cardW: 360, cardH: 46 });
  }
  if ((view.conversions || []).length) {
    c.zone("conversions", view.conversions.map(cv => ({ text: cv.text || "", fill: cv.available ? "#e5f5e0" : "#ccc", pick: `conversion:${cv.index || 0}` })), { cardW: 170, cardH: 30 });
  }
  if (view.combat) {
    const cb = view.combat;
    c.text(10, c.y + 14, `combat: ${cb.enemy || ""} (${cb.enemyValue || 0}) against ${cb.total || 0}`, { bold: true });
    c.y += 22;
    const die = (x, value, colour, name) => {
      c.rect(x, c.y, 40, 40, colour, { rx: 8, title: `${name} die ${value}` });
      c.text(x + 20, c.y + 27, value < 0 ? "–" : String(value), { anchor: "middle", size: 18, fill: "#fff", bold: true });
    };
    die(10, cb.red || 0, "#c0392b", "red");
    die(60, cb.green === undefined ? 0 : cb.green, "#27ae60", "green");
    c.y += 50;
  }
  c.zone("items", (view.items || []).map(t => cardItem(t)));
  c.zone("support cards", (view.supports || []).map(t => cardItem(t, "#dde8fb")));
  c.zone("habits", (view.habits || []).map(t => ({ ...cardItem(t, "#f3e5ff"), pick: "" })));
  c.zone("offers", (view.offers || []).map(cardOf), { cardW: 240 });
  if (view.mine) {
    const m = view.mine;
    c.text(10, c.y + 14, `mine: Eila at (${m.x || 0}, ${m.y || 0}) · ${m.movesLeft || 0} moves left`, { bold: true });
    c.y += 22;
    const cells = m.cells || [];
    const size = 34;
    cells.forEach(cell => {
      const x = 10 + (cell.x || 0) * size, y = c.y + (cell.y || 0) * size;
      const here = (cell.x || 0) === (m.x || 0) && (cell.y || 0) === (m.y || 0);
      c.rect(x, y, size - 3, size - 3, here ? "#f2c531" : "#5b4a3a", { rx: 3, title: label(cell) });
    });
    const rows = Math.max(0, ...cells.map(cl => (cl.y || 0) + 1));
    c.y += rows * size + 8;
  }
  c.zone("upcoming", [{ text: `${view.upcomingCount || 0} cards`, back: true }, ...(view.upcomingTop || []).map(t => ({ text: nameOf(t), title: ruleOf(t) }))]);
  return c.svg();
}

const TABLES = {
  bubblee: bubblee,
  bubble_shadow: bubbleShadow,
  moody_bear: moodyBear,
  shadow_council: shadowCouncil,
  eila: eila,
};

// `width`: the drawing's own units, about the pixels it has (a phone draws fewer cards a row,
// larger, rather than every card small).
function drawTable(game, view, seats, width = 760) {
  const draw = TABLES[game];
  return draw ? draw(view || {}, seats || [], Math.max(360, Math.min(760, width))) : `<pre>${esc(JSON.stringify(view, null, 1))}</pre>`;
}
