'use strict';
// Reference server that `bench fanout` measures side by side with edri's live
// streams (shared/specs/streams.md beside the repository): the same wire
// protocol on HTTP and WebSocket, written the way a Node.js user would write
// it with `http` and `ws`. One process, state in memory, and no coalescing:
// every revision goes to every subscriber as its own frame.
//
// Run:    PORT=0 node server.js      (PORT=0: any free port)
// Prints: listening on <port>        (once, when it accepts connections)
// Env:    DEFLATE=1 turns on permessage-deflate with the `ws` defaults.

const http = require('http');
const { WebSocketServer, WebSocket } = require('ws');

const NAME = /^[A-Za-z0-9._:-]{1,128}$/;

// name -> { state, revision, ts, subscribers: Set<WebSocket> }
const streams = new Map();

function stream(name) {
  let s = streams.get(name);
  if (!s) {
    s = { state: {}, revision: 0, ts: 0, subscribers: new Set() };
    streams.set(name, s);
  }
  return s;
}

// Microseconds since the Unix epoch: finer than Date.now() so latency measured
// as receipt time - ts is not rounded to milliseconds.
function nowMicros() {
  return Math.round((performance.timeOrigin + performance.now()) * 1000);
}

function isObject(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

// RFC 7386. Objects in the patch are copied into the result, never shared, so
// later patches cannot change what an earlier frame was built from.
function mergePatch(target, patch) {
  if (!isObject(patch)) return patch;
  const out = isObject(target) ? target : {};
  for (const key of Object.keys(patch)) {
    const value = patch[key];
    if (value === null) {
      delete out[key];
    } else if (key === '__proto__') {
      // Assignment would set the prototype; this keeps it a plain member.
      Object.defineProperty(out, key, {
        value: mergePatch(out[key], value), enumerable: true, writable: true, configurable: true,
      });
    } else {
      out[key] = mergePatch(out[key], value);
    }
  }
  return out;
}

// The one publish path, for POST /stream/{name} and /stream-burst.
function publish(name, patch) {
  const s = stream(name);
  s.state = mergePatch(s.state, patch);
  s.revision += 1;
  s.ts = nowMicros();
  if (s.subscribers.size > 0) {
    // Serialized once, sent to everyone.
    const frame = JSON.stringify({
      stream: name, from: s.revision - 1, revision: s.revision, patch, ts: s.ts,
    });
    for (const ws of s.subscribers) {
      if (ws.readyState === WebSocket.OPEN) ws.send(frame);
    }
  }
  return s.revision;
}

// ---- HTTP ----

function send(res, status, body, type = 'application/json') {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

function problem(res, status, detail) {
  send(res, status, { status, detail }, 'application/problem+json');
}

function readJson(req, done) {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      done(undefined);
      return;
    }
    done(body);
  });
}

function intIn(v, lo, hi) {
  return Number.isInteger(v) && v >= lo && v <= hi;
}

function burst(req, res) {
  readJson(req, (body) => {
    if (!isObject(body)) return problem(res, 422, 'the body must be a JSON object');
    const { streams: names, updates, interval_ms: interval, fields } = body;
    if (!Array.isArray(names) || names.length === 0 || names.length > 100000)
      return problem(res, 422, 'streams: an array of 1..100000 names');
    if (!names.every((n) => typeof n === 'string' && NAME.test(n)))
      return problem(res, 422, 'streams: names of A-Z a-z 0-9 . _ : -');
    if (!intIn(updates, 1, 1000000)) return problem(res, 422, 'updates: an integer 1..1000000');
    if (!intIn(interval, 0, 60000)) return problem(res, 422, 'interval_ms: an integer 0..60000');
    if (!intIn(fields, 1, 1000)) return problem(res, 422, 'fields: an integer 1..1000');

    const start = process.hrtime.bigint();
    let k = 0;
    // One round now, then one every interval_ms, each scheduled after the
    // previous round so rounds never overlap.
    const round = () => {
      for (const name of names) publish(name, { [`f${k % fields}`]: k + 1, rev: k + 1 });
      k += 1;
      if (k < updates) {
        setTimeout(round, interval);
      } else {
        const seconds = Number(process.hrtime.bigint() - start) / 1e9;
        send(res, 200, { published: updates * names.length, seconds });
      }
    };
    round();
  });
}

const server = http.createServer((req, res) => {
  const path = req.url.split('?', 1)[0];

  if (path === '/stream-burst' && req.method === 'POST') return burst(req, res);

  if (path.startsWith('/stream/') && (req.method === 'GET' || req.method === 'POST')) {
    const name = path.slice('/stream/'.length);
    if (!NAME.test(name)) {
      req.resume(); // drain any body so the connection can be reused
      return problem(res, 422, 'a stream name is 1 to 128 of A-Z a-z 0-9 . _ : -');
    }
    if (req.method === 'GET') {
      req.resume();
      const s = streams.get(name);
      return send(res, 200, { stream: name, revision: s ? s.revision : 0, state: s ? s.state : {} });
    }
    return readJson(req, (patch) => {
      if (!isObject(patch)) return problem(res, 422, 'the body must be a JSON object (a merge patch)');
      let revision;
      try {
        revision = publish(name, patch);
      } catch (e) {
        // Only a patch nested too deep for the recursion gets here.
        return problem(res, 422, `the patch cannot be applied: ${e.message}`);
      }
      send(res, 200, { stream: name, revision });
    });
  }

  req.resume();
  problem(res, 404, 'not found');
});

// ---- WebSocket ----

const wss = new WebSocketServer({ noServer: true, perMessageDeflate: process.env.DEFLATE === '1' });

server.on('upgrade', (req, socket, head) => {
  if (req.url.split('?', 1)[0] !== '/ws') {
    socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
    return;
  }
  wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
});

function wsError(ws, command, status, detail) {
  ws.send(JSON.stringify({ command, error: { status, detail } }));
}

wss.on('connection', (ws) => {
  // The streams this connection follows, to drop them when it closes.
  const held = new Set();

  ws.on('message', (data, isBinary) => {
    let msg;
    try {
      msg = JSON.parse(isBinary ? Buffer.from(data).toString('utf8') : data.toString());
    } catch {
      msg = undefined;
    }
    if (!isObject(msg) || typeof msg.command !== 'string')
      return wsError(ws, null, 400, 'a message must be a JSON object with a string "command"');
    const { command } = msg;
    if (command !== 'stream.subscribe' && command !== 'stream.unsubscribe')
      return wsError(ws, command, 404, `unknown command ${command}`);
    const name = msg.stream;
    if (typeof name !== 'string' || !NAME.test(name))
      return wsError(ws, command, 422, '"stream" must be a name of 1 to 128 of A-Z a-z 0-9 . _ : -');

    if (command === 'stream.unsubscribe') {
      const s = streams.get(name);
      if (s) s.subscribers.delete(ws);
      held.delete(name);
      return;
    }

    const since = msg.since;
    if (since !== undefined && !(Number.isInteger(since) && since >= 0))
      return wsError(ws, command, 422, '"since" must be a revision (an integer >= 0)');
    const s = stream(name);
    s.subscribers.add(ws);
    held.add(name);
    // No log is kept: a current `since` gets an empty patch, anything else a
    // snapshot. Either way later revisions follow as patch frames.
    if (since === s.revision) {
      ws.send(JSON.stringify({ stream: name, from: since, revision: since, patch: {}, ts: s.ts }));
    } else {
      ws.send(JSON.stringify({ stream: name, revision: s.revision, state: s.state, ts: s.ts }));
    }
  });

  ws.on('close', () => {
    for (const name of held) {
      const s = streams.get(name);
      if (s) s.subscribers.delete(ws);
    }
    held.clear();
  });

  ws.on('error', () => {}); // a broken client only closes its own connection
});

server.listen(Number(process.env.PORT || 0), '127.0.0.1', () => {
  console.log(`listening on ${server.address().port}`);
});
