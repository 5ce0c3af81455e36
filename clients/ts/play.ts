// One whole game of Bubblee Pop against the server's greedy bot, played twice: over Connect
// (HTTP/1.1 JSON, unary calls: whose turn is it, then Act) and over a Play stream (gRPC on
// HTTP/2: Connect-ES streams both ways only on HTTP/2 in Node). Each game is then verified
// from its public log. Prints one JSON line per game. The code in gen/ comes from protos/
// (`npm run generate`).
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";

import { Game, type PlayRequest, PlayRequestSchema, type View } from "./gen/arbiter/bubblee/v1/bubblee_pb.js";
import { Arbiter, SeatKind } from "./gen/arbiter/v1/arbiter_pb.js";

const grpcAddress = process.env.ARBITER_GRPC_ADDR ?? "127.0.0.1:50051";
const httpAddress = process.env.ARBITER_HTTP_ADDR ?? "127.0.0.1:8080";
const seats = [{ name: "ann" }, { name: "bot", kind: SeatKind.AI, bot: "greedy" }];

async function overConnect(): Promise<void> {
  const transport = createConnectTransport({ baseUrl: `http://${httpAddress}`, httpVersion: "1.1" });
  const game = createClient(Game, transport);
  const { gameId, tokens } = await game.createGame({ seats });
  const headers = { "x-seat-token": tokens[0].token };
  let moves = 0;
  for (;;) {
    const view = await game.getView({ gameId }, { headers });
    if (view.outcome) return report("connect", transport, gameId, moves, view);
    // Ann's commands; none while the bot is to act (it may start): ask again shortly.
    const legal = await game.listLegalActions({ gameId }, { headers });
    if (legal.commands.length === 0) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      continue;
    }
    try {
      await game.act({ gameId, command: legal.commands[0], commandId: `ann-${legal.version}`,
                       expectedVersion: legal.version }, { headers });
      moves++;
    } catch (e) {
      // The game moved on between the list and the command: ask again.
      if (!(e instanceof ConnectError && e.code === Code.Aborted)) throw e;
    }
  }
}

/** What the client sends on a Play stream: an async iterable it can add to. */
class Outbox implements AsyncIterable<PlayRequest> {
  private queued: PlayRequest[] = [];
  private wake: (() => void) | null = null;
  private closed = false;

  send(request: PlayRequest): void {
    this.queued.push(request);
    this.wake?.();
  }

  close(): void {
    this.closed = true;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<PlayRequest> {
    for (;;) {
      const next = this.queued.shift();
      if (next) yield next;
      else if (this.closed) return;
      else await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }
}

async function overPlay(): Promise<void> {
  const transport = createGrpcTransport({ baseUrl: `http://${grpcAddress}` });
  const game = createClient(Game, transport);
  const { gameId, tokens } = await game.createGame({ seats });
  const outbox = new Outbox();
  outbox.send(create(PlayRequestSchema, { kind: { case: "open", value: { gameId } } }));
  let moves = 0;
  let last: View | undefined;
  // The server pushes what Ann may see, the view and, on her turns, her commands; the stream
  // ends after the game's last entry.
  for await (const message of game.play(outbox, { headers: { "x-seat-token": tokens[0].token } })) {
    if (message.answer?.error) throw new Error(`refused: ${message.answer.error.message}`);
    if (message.view) last = message.view;
    if (message.view?.outcome) outbox.close();
    else if (message.legal && message.legal.commands.length > 0) {
      const legal = message.legal;
      outbox.send(create(PlayRequestSchema, { kind: { case: "act", value: {
        gameId, command: legal.commands[0], commandId: `ann-${legal.version}`,
        expectedVersion: legal.version } } }));
      moves++;
    }
  }
  outbox.close();
  if (!last?.outcome) throw new Error("the Play stream ended before the game did");
  return report("play", transport, gameId, moves, last);
}

async function report(how: string, transport: Transport, gameId: string, moves: number,
                      view: View): Promise<void> {
  const arbiter = createClient(Arbiter, transport);
  const log = await arbiter.exportLog({ gameId });
  const check = await arbiter.verifyLog({ source: { case: "log", value: log } });
  console.log(JSON.stringify({
    transport: how, gameId, moves, version: Number(view.version),
    winners: view.outcome?.winners ?? [], scores: view.scores,
    verified: check.ok, entries: Number(check.entries),
  }));
}

await overConnect();
await overPlay();
