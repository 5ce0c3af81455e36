// The Connect protocol in a few lines: unary calls are JSON POSTs, server streams are
// enveloped JSON messages read from a fetch body. No library, no build step.
"use strict";

class RpcError extends Error {
  constructor(code, message, details) {
    super(`${code}: ${message}`);
    this.code = code;
    this.reason = (details || []).map(d => (d.debug || {}).reason).find(Boolean) || "";
  }
}

function headers(auth) {
  const h = { "content-type": "application/json" };
  if (auth && auth.token) h["x-seat-token"] = auth.token;
  if (auth && auth.admin) h["x-admin-token"] = auth.admin;
  return h;
}

async function call(service, method, body, auth) {
  const r = await fetch(`/${service}/${method}`, {
    method: "POST", headers: headers(auth), body: JSON.stringify(body || {}),
  });
  const data = await r.json();
  if (!r.ok) throw new RpcError(data.code, data.message, data.details);
  return data;
}

// Calls onMessage(message) for each message of a server stream until it ends or
// `signal` aborts; resolves with the end message's error (null when the stream ended OK).
async function stream(service, method, body, auth, onMessage, signal) {
  const h = headers(auth);
  h["content-type"] = "application/connect+json";
  const payload = new TextEncoder().encode(JSON.stringify(body || {}));
  const framed = new Uint8Array(5 + payload.length);
  new DataView(framed.buffer).setUint32(1, payload.length);
  framed.set(payload, 5);
  const r = await fetch(`/${service}/${method}`, { method: "POST", headers: h, body: framed, signal });
  const reader = r.body.getReader();
  let buffer = new Uint8Array(0);
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return null;
    const joined = new Uint8Array(buffer.length + value.length);
    joined.set(buffer); joined.set(value, buffer.length);
    buffer = joined;
    while (buffer.length >= 5) {
      const flags = buffer[0];
      const size = new DataView(buffer.buffer, buffer.byteOffset).getUint32(1);
      if (buffer.length < 5 + size) break;
      const message = JSON.parse(new TextDecoder().decode(buffer.slice(5, 5 + size)));
      buffer = buffer.slice(5 + size);
      if (flags & 2) return message.error ? new RpcError(message.error.code, message.error.message, message.error.details) : null;
      onMessage(message);
    }
  }
}
