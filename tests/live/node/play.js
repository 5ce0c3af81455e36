// A Node.js Play client for the live tests: every seat it is given plays over its own Play
// stream, choosing from the legal commands the server pushes; each message received is
// printed raw (base64), one JSON line per message, for the test to check against Watch.
//
//   node play.js <address> <game> <game id> <tokens JSON {seat: token}> <proto dir>
//                <googleapis proto dir> <max commands>
"use strict";

const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

const [address, game, gameId, tokensJson, protoDir, googleDir, maxCommands] =
  process.argv.slice(2);
const tokens = JSON.parse(tokensJson);
const definition = protoLoader.loadSync(`arbiter/${game}/v1/${game}.proto`, {
  includeDirs: [protoDir, googleDir],
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: false,
  oneofs: true,
});
const play = definition[`arbiter.${game}.v1.Game`].Play;
const client = new grpc.Client(address, grpc.credentials.createInsecure());

let budget = Number(maxCommands);
const calls = [];

// Moody Bear: play cards (they open response windows); seat 3 never answers a window, so the
// server's deadline closes it; proclaiming only when nothing else is left. Others: the first.
function choose(seat, commands) {
  if (game !== "moody_bear") return commands[0];
  const kinds = commands.map((c) => c.kind);
  if (kinds.includes("decline")) return seat === 3 ? null : commands[kinds.indexOf("decline")];
  for (const wanted of ["play", "end_turn", "pass_turn", "reject", "accept", "choose_pass",
                        "arrange", "offer"]) {
    if (kinds.includes(wanted)) return commands[kinds.indexOf(wanted)];
  }
  return kinds.every((k) => k === "proclaim") ? null : commands[0];
}

function closedByDeadline(message) {
  return (message.updates || []).some(
    (u) => u.event && u.event.window_closed && u.event.window_closed.by_deadline);
}

function stopAll() {
  budget = 0;
  for (const call of calls) call.cancel();
}

function seatStream(seat, token) {
  return new Promise((resolve) => {
    const metadata = new grpc.Metadata();
    metadata.set("x-seat-token", token);
    const call = client.makeBidiStreamRequest(
      `/arbiter.${game}.v1.Game/Play`, play.requestSerialize, (raw) => raw, metadata);
    calls.push(call);
    let inFlight = false;
    let version = 0;
    let legal = null;
    call.on("data", (raw) => {
      process.stdout.write(JSON.stringify({ seat, message: raw.toString("base64") }) + "\n");
      const message = play.responseDeserialize(raw);
      if (message.answer) inFlight = false;
      if (message.view) {
        version = message.view.version || 0;
        legal = message.legal || null;
      }
      if (game === "moody_bear" && closedByDeadline(message)) {
        budget = 0;  // every seat gets this batch: each stops on it
        call.cancel();
        return;
      }
      if (budget <= 0) return;
      if (!inFlight && legal && (legal.version || 0) === version) {
        const command = choose(seat, legal.commands || []);
        if (command) {
          budget -= 1;
          inFlight = true;
          call.write({ act: { command, expected_version: version,
                              command_id: `node-${seat}-${version}` } });
          if (budget <= 0) setTimeout(stopAll, 500);  // its answer comes first
        }
      }
    });
    call.on("error", (e) => {
      if (e.code !== grpc.status.CANCELLED) {
        process.stderr.write(`seat ${seat}: ${e.message}\n`);
        process.exitCode = 1;
      }
      resolve();
    });
    call.on("end", resolve);
    call.write({ open: { game_id: gameId, from_version: 0 } });
  });
}

Promise.all(Object.entries(tokens).map(([seat, token]) => seatStream(Number(seat), token)))
  .then(() => client.close());
