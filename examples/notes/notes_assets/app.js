// The notes page: lists the notes, adds one with the form (REST), and
// follows every change live over the WebSocket at /ws (notes.subscribe),
// whoever made it, without reloading.
"use strict";

const list = document.getElementById("notes");
const total = document.getElementById("total");
const totalNoun = document.getElementById("total-noun");
const statusEl = document.getElementById("status");
const errorEl = document.getElementById("error");
const form = document.getElementById("new-note");
let count = 0;

function setTotal(n) {
  count = n;
  total.textContent = String(n);
  totalNoun.textContent = n === 1 ? "note" : "notes";
}

function render(note) {
  const li = document.createElement("li");
  li.dataset.id = String(note.id);
  const h = document.createElement("h2");
  h.textContent = note.title;
  const p = document.createElement("p");
  p.textContent = note.body;
  const foot = document.createElement("footer");
  const when = document.createElement("time");
  when.dateTime = note.updated_at;
  when.textContent = new Date(note.updated_at).toLocaleString();
  const del = document.createElement("button");
  del.type = "button";
  del.textContent = "Delete";
  del.addEventListener("click", () => fetch(`/notes/${note.id}`, { method: "DELETE" }));
  foot.append(when, del);
  li.append(h, p, foot);
  return li;
}

function find(id) {
  return list.querySelector(`li[data-id="${id}"]`);
}

// A change pushed by the server: {"op": ..., "note": {...}}.
function apply(change) {
  const { op, note } = change;
  const old = find(note.id);
  if (op === "created" && !old) {
    list.prepend(render(note));
    setTotal(count + 1);
  } else if (op === "updated" && old) {
    old.replaceWith(render(note));
  } else if (op === "deleted" && old) {
    old.remove();
    setTotal(Math.max(0, count - 1));
  }
}

// A frame of the stream "audit": a snapshot carries the state, a patch the
// counts that changed (every one, as the audit manager publishes them).
const audit = { created: 0, updated: 0, deleted: 0 };
function showAudit(frame) {
  Object.assign(audit, frame.state || frame.patch);
  for (const k of Object.keys(audit)) document.getElementById(`audit-${k}`).textContent = audit[k];
  window.auditRevision = frame.revision;
}

function connect() {
  const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`);
  ws.addEventListener("open", () => {
    // Subscribe first, then list: no change can fall between the two.
    ws.send(JSON.stringify({ command: "notes.subscribe" }));
    // The audit counts are a live stream: a snapshot, then patches.
    ws.send(JSON.stringify({ command: "stream.subscribe", stream: "audit" }));
    ws.send(JSON.stringify({ command: "notes.list", limit: 100, offset: 0 }));
  });
  ws.addEventListener("message", (e) => {
    const msg = JSON.parse(e.data);
    if (msg.stream === "audit") {
      showAudit(msg);
    } else if (msg.command === "notes.changed") {
      apply(msg.event);
    } else if (msg.command === "notes.list" && msg.response) {
      list.replaceChildren(...msg.response.items.map(render));
      setTotal(msg.response.total);
      statusEl.textContent = "live";
      statusEl.classList.add("live");
      window.notesReady = true;
    } else if (msg.error) {
      errorEl.textContent = msg.error.detail || msg.error.title;
    }
  });
  ws.addEventListener("close", () => {
    window.notesReady = false;
    statusEl.textContent = "reconnecting…";
    statusEl.classList.remove("live");
    setTimeout(connect, 1000);
  });
}

form.addEventListener("submit", async (e) => {
  e.preventDefault();
  errorEl.textContent = "";
  const title = form.title.value.trim();
  const body = form.body.value;
  const r = await fetch("/notes", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ title, body }),
  });
  if (r.ok) {
    // The note appears through the push, like everyone else's.
    form.reset();
    return;
  }
  const problem = await r.json().catch(() => ({}));
  errorEl.textContent = (problem.errors || []).map((x) => `${x.field} ${x.message}`).join("; ") ||
                        problem.detail || `failed: ${r.status}`;
});

connect();
