// The dev workspace page: the fake Slack's channels as Slack shows them, and what a person
// does there sent to the bot as Slack sends it (the server signs it). News arrives by
// server-sent events; the run console sits beside it.
"use strict";

const state = { people: [], names: {}, channel: "C0APPROVALS", data: null, token: "", opensModal: [], modal: null };
const $ = (id) => document.getElementById(id);
const { el, render } = SignoffBlocks;

async function post(path, body) {
  const answer = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!answer.ok) throw new Error(await answer.text());
  return answer.json();
}

function me() { return $("who").value; }

function notice(text) {
  $("notice").textContent = text;
}

async function refresh() {
  const answer = await fetch("/dev/api/workspace?user=" + encodeURIComponent(me()));
  state.data = await answer.json();
  draw();
  const updated = state.modal && (state.data.modals || {})[state.modal.id];
  if (updated && updated.hash !== state.modal.hash && !$("overlay").hidden) showModal(updated);
}

const HOME = "HOME";

function draw() {
  const nav = $("channels");
  nav.replaceChildren();
  const home = el("button", "channel-link" + (state.channel === HOME ? " active" : ""), "Home");
  home.dataset.channel = HOME;
  home.addEventListener("click", () => openHome());
  nav.appendChild(home);
  for (const channel of state.data.channels) {
    const link = el("button", "channel-link" + (channel.id === state.channel ? " active" : ""), "# " + channel.name);
    link.dataset.channel = channel.id;
    const count = channel.messages.length;
    if (count) link.appendChild(el("span", "count", String(count)));
    link.addEventListener("click", () => { state.channel = channel.id; draw(); });
    nav.appendChild(link);
  }
  const box = $("channel");
  box.replaceChildren();
  if (state.channel === HOME) { box.appendChild(drawHome(state.data.home)); return; }
  const channel = state.data.channels.find((c) => c.id === state.channel) || state.data.channels[0];
  if (!channel.messages.length) box.appendChild(el("p", "empty", "No messages in #" + channel.name + " yet."));
  for (const message of channel.messages) box.appendChild(drawMessage(message, channel.id));
  for (const eph of state.data.ephemerals.filter((e) => e.channel === channel.id)) {
    box.appendChild(drawEphemeral(eph.text, eph.blocks, channel.id));
  }
}

// The app's Home tab as the bot last published it for the person played; its buttons are
// clicked as Slack sends a click in a Home view (the view, no channel).
function drawHome(view) {
  const node = el("article", "message home");
  node.dataset.home = "1";
  if (!view) { node.appendChild(el("p", "empty", "Opening Home…")); return node; }
  const ctx = { names: state.names, onAction: (element, blockId) => click(element, blockId, "", "", false, view.id) };
  node.appendChild(render(view.blocks, ctx));
  return node;
}

async function openHome() {
  state.channel = HOME;
  draw();
  await post("/dev/api/home", { user: me() });
}

function drawMessage(message, channel) {
  const node = el("article", "message");
  node.dataset.ts = message.ts;
  const head = el("div", "message-head");
  head.appendChild(el("span", "author", "Signoff"));
  head.appendChild(el("span", "app-badge", "APP"));
  head.appendChild(el("time", "stamp", new Date(parseFloat(message.ts) * 1000).toLocaleTimeString()));
  if (message.edited) head.appendChild(el("span", "edited", "(edited)"));
  node.appendChild(head);
  const ctx = { names: state.names, onAction: (element, blockId) => click(element, blockId, channel, message.ts) };
  node.appendChild(message.blocks && message.blocks.length ? render(message.blocks, ctx) : plain(message.text));
  if (message.replies.length) {
    const thread = el("div", "thread");
    thread.appendChild(el("div", "thread-count", message.replies.length + (message.replies.length === 1 ? " reply" : " replies")));
    for (const reply of message.replies) thread.appendChild(drawMessage(reply, channel));
    node.appendChild(thread);
  }
  return node;
}

function plain(text) {
  const node = el("div", "plain");
  node.appendChild(SignoffBlocks.mrkdwn(text || "", state.names));
  return node;
}

// Its buttons are clicked as Slack sends a click on an ephemeral message: in its channel,
// with no message of its own.
function drawEphemeral(text, blocks, channel) {
  const node = el("article", "message ephemeral");
  node.appendChild(el("div", "message-head")).appendChild(el("span", "only-you", "Only visible to you"));
  const ctx = { names: state.names, onAction: (element, blockId) => click(element, blockId, channel, "", true) };
  node.appendChild(blocks && blocks.length ? render(blocks, ctx) : plain(text));
  return node;
}

// -- dialogs ---------------------------------------------------------------------------

function dialog({ title, body, ok, cancel }) {
  return new Promise((resolve) => {
    $("dialog-title").textContent = title;
    $("dialog-body").replaceChildren(body);
    $("dialog-error").textContent = "";
    $("dialog-ok").textContent = ok || "OK";
    $("dialog-cancel").textContent = cancel || "Cancel";
    $("overlay").hidden = false;
    const done = (value) => { $("overlay").hidden = true; resolve(value); };
    $("dialog-ok").onclick = () => resolve_ok();
    $("dialog-cancel").onclick = () => done(false);
    function resolve_ok() { done(true); }
  });
}

async function confirmFirst(confirm) {
  if (!confirm) return true;
  const body = el("div");
  body.appendChild(SignoffBlocks.textObject(confirm.text, state.names));
  return dialog({
    title: confirm.title ? confirm.title.text : "Are you sure?",
    body,
    ok: confirm.confirm ? confirm.confirm.text : "Yes",
    cancel: confirm.deny ? confirm.deny.text : "Cancel",
  });
}

async function click(element, blockId, channel, ts, ephemeral = false, viewId = "") {
  if (!(await confirmFirst(element.confirm))) return;
  const opens = state.opensModal.includes(element.action_id);
  const answer = await post("/dev/api/action", {
    user: me(), channel, ts, action_id: element.action_id, value: element.value,
    block_id: blockId, opens_modal: opens, ephemeral, view_id: viewId,
  });
  if (answer.view) await openModal(answer.view);
}

// A modal the bot opened: its inputs, submitted as a view_submission; errors the bot
// answers with are shown under their fields and the modal stays open. The bot may replace
// the modal (views.update, or an answer that updates it): it is redrawn, and what the person
// typed stays in the fields that are still there, as Slack keeps it.
async function openModal(view) {
  state.modal = null;
  showModal(view);
  $("overlay").hidden = false;
  $("dialog-cancel").onclick = () => { $("overlay").hidden = true; state.modal = null; };
}

function typedValues() {
  const values = {};
  for (const field of $("dialog-body").querySelectorAll(".input-field")) values[field.dataset.blockId] = field.value;
  return values;
}

function showModal(view) {
  const typed = state.modal ? typedValues() : {};
  state.modal = view;
  const body = render(view.blocks, { names: state.names, onAction: () => {} });
  for (const field of body.querySelectorAll(".input-field")) {
    if (field.dataset.blockId in typed) field.value = typed[field.dataset.blockId];
  }
  $("dialog-title").textContent = view.title ? view.title.text : "";
  $("dialog-body").replaceChildren(body);
  $("dialog-error").textContent = "";
  $("dialog-ok").textContent = view.submit ? view.submit.text : "Submit";
  $("dialog-cancel").textContent = view.close ? view.close.text : "Cancel";
  $("overlay").dataset.callbackId = view.callback_id || "";
  $("dialog-ok").onclick = () => submitModal(view, body);
}

async function submitModal(view, body) {
  const answer = await post("/dev/api/submit", {
    user: me(), view_id: view.id, callback_id: view.callback_id,
    private_metadata: view.private_metadata, values: typedValues(),
  });
  const reply = answer.answer;
  if (reply && reply.response_action === "update") {
    showModal(reply.view);
    return;
  }
  if (reply && reply.response_action === "errors") {
    // Each error once: under its field, or below the form when no field has its name.
    const placed = new Set();
    for (const field of body.querySelectorAll(".input-field")) {
      const message = reply.errors[field.dataset.blockId] || "";
      field.parentElement.querySelector(".input-error").textContent = message;
      if (message) placed.add(field.dataset.blockId);
    }
    const rest = Object.entries(reply.errors).filter(([blockId]) => !placed.has(blockId));
    $("dialog-error").textContent = rest.map(([, message]) => message).join(" ");
    return;
  }
  $("overlay").hidden = true;
  state.modal = null;
}

// -- /runs, the refund button, the console --------------------------------------------

async function runsCommand(event) {
  event.preventDefault();
  const text = $("runs-text").value;
  const answer = await post("/dev/api/command", { user: me(), text });
  const reply = answer.answer || {};
  const area = $("ephemeral");
  area.replaceChildren(el("div", "command-echo", "/runs " + text));
  area.appendChild(drawEphemeral(reply.text || "", reply.blocks, answer.channel));
}

async function startRefund() {
  const answer = await post("/dev/api/refund", { user: me() });
  notice("Started run " + answer.run_id + " for " + state.names[me()] + ". Its card appears in #approvals.");
  state.channel = "C0APPROVALS";
}

async function startAgent(agent) {
  const task = $("task").value.trim() || agent.task;
  const answer = await post("/dev/api/start", { user: me(), agent: agent.name, task });
  notice("Started run " + answer.run_id + " of " + agent.name + " for " + state.names[me()] + ".");
}

function showProject(project) {
  // Which project runs: the signoff.toml it loaded (its agents start here), or the demo.
  $("project").textContent = project.config ? "Project: " + project.config : "The demo (no signoff.toml)";
  $("project").title = project.loaded.join("\n");
  if (!project.config) return;
  $("start-refund").hidden = true;
  $("start-agents").hidden = false;
  for (const agent of project.agents) {
    const button = el("button", "primary", "Start " + agent.name);
    button.dataset.agent = agent.name;
    button.addEventListener("click", () => startAgent(agent));
    $("start-agents").appendChild(button);
  }
}

function listen() {
  const events = new EventSource("/dev/events");
  events.addEventListener("workspace", () => refresh());
  events.addEventListener("hello", () => refresh());
}

function showConsole(token) {
  // The console reads as the person played: the runs they may read in Slack, no others.
  const hash = "#token=" + encodeURIComponent(token) + "&reader=" + encodeURIComponent($("who").value);
  $("console").src = "/console/" + hash;
}

async function main() {
  const session = await (await fetch("/dev/api/session")).json();
  state.people = session.people;
  state.token = session.token;
  state.opensModal = session.opens_modal;
  for (const person of session.people) {
    state.names[person.id] = person.name;
    const option = el("option", null, person.name + " (" + person.role + ")");
    option.value = person.id;
    $("who").appendChild(option);
  }
  $("who").addEventListener("change", () => (state.channel === HOME ? openHome() : refresh()));
  $("who").addEventListener("change", () => showConsole(session.token));
  $("start-refund").textContent = session.refund_task;
  $("start-refund").addEventListener("click", startRefund);
  $("runs-form").addEventListener("submit", runsCommand);
  showProject(session.project);
  showConsole(session.token);
  await refresh();
  listen();
  document.body.dataset.ready = "1";
}

main();
