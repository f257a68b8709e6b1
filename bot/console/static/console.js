// The run console: the runs list, one run's timeline, and fork / roll back / cancel /
// resume, all through /v1/console/ with the API token. Text from runs is set as text only.
"use strict";

const $ = (id) => document.getElementById(id);
// `who` counts the people the console has acted as: an answer that comes back after the
// person changed is about the one before and is dropped, never drawn.
const state = { token: "", reader: "", selected: null, busy: false, shown: "", rules: "", names: {}, who: 0, allowed: [] };

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

async function api(method, path, body) {
  const asked = state.who;
  const answer = await fetch("/v1/console" + path, {
    method,
    headers: Object.assign(
      { Authorization: "Bearer " + state.token, "Content-Type": "application/json" },
      state.reader ? { "X-Signoff-Reader": state.reader } : {},
    ),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await answer.json().catch(() => ({}));
  if (answer.status === 401) { showLogin(); throw new Error("the token was refused"); }
  if (asked !== state.who) throw new Error("the person changed; not shown");
  if (!answer.ok) throw new Error(data.error || answer.statusText);
  return data;
}

function say(text) { $("message").textContent = text; }

function age(seconds) {
  if (seconds < 60) return Math.round(seconds) + "s";
  if (seconds < 3600) return Math.round(seconds / 60) + "m";
  if (seconds < 86400) return Math.round(seconds / 3600) + "h";
  return Math.round(seconds / 86400) + "d";
}

// The server's words for a state (the same as Slack's and the CLI's): a run restored by a
// rollback reads "rolled back", a parked run with every approval decided "ready to resume".
function statusLabel(run) {
  return run.label || run.status;
}

// How an ended run came out colours it (only "done" is green): a run that answered after a
// declined call, or a tool that failed, is not done as asked.
function statusClass(run) {
  return "status " + (run.outcome ? run.outcome.replace(/ /g, "-") : run.status);
}

// People by name, as Slack shows them; an id the server could not name stays an id.
function person(id) {
  if (!id) return "nobody";
  return state.names[id] ? "@" + state.names[id] : id;
}

// Server text that names people by id (the call's proposed -> approved -> executed line).
function withNames(text) {
  return text.replace(/\b[UW][A-Z0-9]{2,}\b/g, (id) => (state.names[id] ? "@" + state.names[id] : id));
}

function money(cost) { return "$" + Number(cost || 0).toFixed(4); }

// -- approval rules: the file's and the learned ones -------------------------------------

// Polled with the runs list: a rule saved, confirmed or revoked in Slack shows up here
// without a reload. Redrawn only on news, like a run's timeline.
async function loadRules() {
  const data = await api("GET", "/rules");
  const shown = JSON.stringify(data.rules);
  if (shown === state.rules) return;
  state.rules = shown;
  const body = $("rules");
  body.replaceChildren();
  for (const rule of data.rules) {
    const row = el("tr");
    row.dataset.ruleId = rule.id;
    row.appendChild(el("td", "id", rule.id));
    row.appendChild(el("td", null, rule.source === "file" ? "file" : rule.status));
    row.appendChild(el("td", "id", rule.when));
    const why = rule.source === "file" ? rule.action : rule.reason + " (by " + rule.author + ")";
    row.appendChild(el("td", null, why));
    row.appendChild(el("td", null, rule.expires || ""));
    row.appendChild(el("td", null, rule.uses === undefined ? "" : String(rule.uses)));
    body.appendChild(row);
  }
}

// -- runs list ---------------------------------------------------------------------------

async function loadRuns() {
  const params = new URLSearchParams();
  if ($("status-filter").value) params.set("status", $("status-filter").value);
  if ($("text-filter").value) params.set("q", $("text-filter").value);
  const data = await api("GET", "/runs?" + params.toString());
  const body = $("runs");
  body.replaceChildren();
  for (const run of data.runs) {
    const row = el("tr", "run-row" + (run.id === state.selected ? " selected" : ""));
    row.dataset.runId = run.id;
    const first = el("td");
    first.appendChild(el("div", "id", run.id));
    first.appendChild(el("div", null, run.task));
    row.appendChild(first);
    row.appendChild(el("td")).appendChild(el("span", statusClass(run), statusLabel(run)));
    row.appendChild(el("td", null, run.stop_words || ""));
    row.appendChild(el("td", null, money(run.cost)));
    row.appendChild(el("td", null, age(run.age_seconds)));
    row.addEventListener("click", () => select(run.id));
    body.appendChild(row);
  }
}

async function select(runId) {
  state.selected = runId;
  await loadRun();
  await loadRuns();
}

// -- one run -----------------------------------------------------------------------------

// The run pane: emptied and hidden, with nothing of the run left to read or click.
function clearRun() {
  state.selected = null;
  state.shown = "";
  state.allowed = [];
  const box = $("run");
  box.replaceChildren();
  box.hidden = true;
  delete box.dataset.runId;
}

async function loadRun() {
  if (!state.selected) return;
  const data = await api("GET", "/runs/" + encodeURIComponent(state.selected));
  if (!state.selected) return;
  // What this person may do to the run (the server's permission table): only those buttons.
  state.allowed = data.allowed || [];
  // Redraw only on news, so what someone reads or clicks stays put between polls.
  const shown = JSON.stringify({ ...data, run: { ...data.run, age_seconds: 0 } });
  if (shown === state.shown) return;
  state.shown = shown;
  state.names = data.names || {};
  const box = $("run");
  box.hidden = false;
  box.dataset.runId = data.run.id;
  box.replaceChildren();
  const head = el("h2");
  head.appendChild(el("span", "id", data.run.id + " "));
  head.appendChild(el("span", statusClass(data.run), statusLabel(data.run)));
  box.appendChild(head);
  if (data.view.ended) box.appendChild(el("div", "ended " + statusClass(data.run), withNames(data.view.ended)));
  box.appendChild(el("div", null, data.run.task + " (agent " + data.run.agent + ", asked by " + person(data.run.requested_by) + ")"));
  box.appendChild(links(data));
  box.appendChild(budget(data.budget));
  box.appendChild(runButtons(data.run));
  const steps = el("div", "timeline");
  for (const row of data.timeline) steps.appendChild(stepRow(row, data.run));
  box.appendChild(steps);
  const events = el("div", "events");
  events.appendChild(el("strong", null, "Audit"));
  for (const event of data.events) {
    const line = el("div", "event", event.at.slice(0, 19).replace("T", " ") + "  " + event.action.replace(/_/g, " ") + " by " + person(event.actor));
    line.dataset.action = event.action;
    events.appendChild(line);
  }
  box.appendChild(events);
}

function runLink(runId, label) {
  const link = el("a", "run-link", label);
  link.href = "#";
  link.dataset.runId = runId;
  link.addEventListener("click", (event) => { event.preventDefault(); select(runId); });
  return link;
}

function links(data) {
  const box = el("div", "links");
  if (data.run.parent_id) {
    box.appendChild(document.createTextNode("forked from "));
    box.appendChild(runLink(data.run.parent_id, data.run.parent_id + " at step " + data.run.fork_step));
    if (data.run.dry_run) box.appendChild(el("span", "badge", "dry run"));
  }
  if (data.forks.length) {
    box.appendChild(document.createTextNode(" forks: "));
    for (const fork of data.forks) box.appendChild(runLink(fork, fork));
  }
  return box;
}

function budget(lines) {
  const box = el("div", "budget");
  for (const line of lines) {
    box.appendChild(el("span", null, line.name));
    const track = el("div", "bar-track");
    const fill = el("div", "bar-fill" + (line.fraction !== null && line.fraction > 0.8 ? " high" : ""));
    fill.style.width = line.fraction === null ? "0%" : Math.round(line.fraction * 100) + "%";
    track.appendChild(fill);
    box.appendChild(track);
    const used = line.name === "cost" ? money(line.used) : String(line.used);
    const limit = line.limit === null ? "no limit" : (line.name === "cost" ? money(line.limit) : String(line.limit));
    box.appendChild(el("span", null, used + " of " + limit));
  }
  return box;
}

function may(what) { return state.allowed.includes(what); }

function runButtons(run) {
  const box = el("div", "actions");
  const cancel = el("button", "danger", "Cancel run");
  cancel.id = "cancel-run";
  cancel.addEventListener("click", () => {
    if (!window.confirm("Cancel run " + run.id + "? It stops for good and its pending approvals are withdrawn.")) return;
    operate("cancel", () => api("POST", "/runs/" + encodeURIComponent(run.id) + "/cancel"));
  });
  const resume = el("button", null, "Resume");
  resume.id = "resume-run";
  // A finished run has nothing left to stop or to drive on.
  cancel.disabled = resume.disabled = run.status === "done" || run.status === "cancelled";
  resume.addEventListener("click", () => operate("resume", () => api("POST", "/runs/" + encodeURIComponent(run.id) + "/resume")));
  if (may("cancel")) box.append(cancel);
  if (may("resume")) box.append(resume);
  return box;
}

function stepRow(row, run) {
  const box = el("div", "step" + (row.rolled_back ? " undone" : ""));
  box.dataset.step = row.step;
  const head = el("div", "step-head");
  head.appendChild(el("span", null, "step " + row.step + (row.rolled_back ? " (undone by a rollback)" : "") + (row.restored ? " (restored)" : "")));
  // Each step says what it came to (a finished step is not "running").
  head.appendChild(el("span", row.outcome ? statusClass(row) : "status " + (row.status === "running" ? "finished" : row.status), row.label || row.status));
  head.appendChild(el("span", "grow"));
  if (!row.rolled_back && may("fork")) {
    const fork = el("button", "fork", "Fork from here");
    fork.addEventListener("click", () => forkFrom(run.id, row.step, false));
    const dry = el("button", "dry-fork", "Dry-run fork");
    dry.addEventListener("click", () => forkFrom(run.id, row.step, true));
    head.append(fork, dry);
  }
  if (!row.rolled_back && may("rollback")) {
    const back = el("button", "rollback danger", "Roll back to here");
    back.addEventListener("click", () => rollbackTo(run.id, row.step));
    head.append(back);
  }
  box.appendChild(head);
  for (const note of row.notes) box.appendChild(el("div", "note", note));
  for (const reply of row.replies) box.appendChild(el("div", "reply", reply));
  for (const call of row.calls) box.appendChild(callView(call));
  return box;
}

function callView(call) {
  const box = el("div", "call");
  box.dataset.tool = call.tool;
  const name = el("div", "call-name", call.tool + "(" + JSON.stringify(call.args) + ")");
  if (call.effect) {
    name.appendChild(el("span", "badge " + call.effect.classification, call.effect.classification));
    const effectState = el("span", "badge effect-state " + call.effect.state, call.effect.label || call.effect.state);
    name.appendChild(effectState);
    if (call.effect.compensated_by) name.appendChild(el("span", "badge", "undone by " + call.effect.compensated_by));
  }
  box.appendChild(name);
  if (call.reads) box.appendChild(el("div", "reads", call.reads));
  for (const approval of call.approvals) {
    const label = approval.label || approval.state;
    let text = label.charAt(0).toUpperCase() + label.slice(1);
    if (approval.decided_by) text += " by " + person(approval.decided_by) + " at " + (approval.decided_at || "").slice(0, 19).replace("T", " ");
    if (approval.reason) text += ": " + approval.reason;
    if (approval.edits) text += " (edited: " + approval.edits + ")";
    if (approval.separate) text += " as a separate effect (conflicted with run " + approval.conflict_run + ")";
    const line = el("div", "approval", text);
    line.dataset.state = approval.state;
    box.appendChild(line);
    for (const limit of approval.limits || []) box.appendChild(el("div", "limit", limit));
    for (const line of approval.context || []) box.appendChild(el("div", "context", line));
    for (const line of approval.cool_off || []) box.appendChild(el("div", "cool-off", line));
    if (approval.state === "pending" && approval.deciders) box.appendChild(el("div", "deciders", withNames(approval.deciders)));
  }
  if (call.binding) box.appendChild(el("div", "binding", withNames(call.binding)));
  if (call.result) box.appendChild(el("div", "result", "-> " + withNames(call.result)));
  // Handed another run's effect (the same key and arguments): it relies on that run's, and
  // says so once that run undid it.
  if (call.relied_on) box.appendChild(el("div", "relied-on", "relies on " + call.relied_on.call_id + " of run " + call.relied_on.run_id));
  if (call.undone) {
    box.appendChild(el("div", "undone-under", "undone since by a rollback of run " + call.undone.by_run + " (by " + person(call.undone.by) + "): this may no longer hold"));
  }
  // A tool that raised: its error, as recorded (the traceback is in the server's log).
  if (call.effect && call.effect.state === "failed" && call.effect.error) {
    box.appendChild(el("div", "tool-error", call.tool + " failed: " + call.effect.error));
  }
  for (const page of call.pages) {
    const line = el("div", "page", "Page (" + page.reason + ", " + (page.label || "open") + "): " + page.detail + (page.acknowledged_by ? " - acknowledged by " + person(page.acknowledged_by) : ""));
    box.appendChild(line);
  }
  return box;
}

// -- operations ----------------------------------------------------------------------------

async function operate(what, work) {
  state.busy = true;
  try {
    const result = await work();
    say(what + ": done");
    return result;
  } catch (error) {
    say(what + " refused: " + error.message);
    return null;
  } finally {
    state.busy = false;
    await loadRun().catch(() => {});
    await loadRuns().catch(() => {});
    await loadRules().catch(() => {});
  }
}

function panel(title, body) {
  return new Promise((resolve) => {
    $("panel-title").textContent = title;
    $("panel-body").replaceChildren(body);
    $("panel").hidden = false;
    state.busy = true;
    const done = (value) => { $("panel").hidden = true; state.busy = false; resolve(value); };
    $("panel-ok").onclick = () => done(true);
    $("panel-cancel").onclick = () => done(false);
  });
}

async function forkFrom(runId, step, dryRun) {
  const forked = await operate(dryRun ? "dry-run fork" : "fork", () =>
    api("POST", "/runs/" + encodeURIComponent(runId) + "/fork", { from_step: step, dry_run: dryRun }));
  if (forked) {
    say("forked as " + forked.run_id + (forked.already_happened.length ? " (" + forked.already_happened.length + " effect(s) already happened and will not run again)" : ""));
    await select(forked.run_id);
  }
}

async function rollbackTo(runId, step) {
  let preview;
  try {
    preview = await api("GET", "/runs/" + encodeURIComponent(runId) + "/rollback?to_step=" + step);
  } catch (error) { say("rollback refused: " + error.message); return; }
  const body = el("div", "preview");
  body.appendChild(el("p", null, "Rolling " + runId + " back to step " + step + ":"));
  const list = el("ul");
  for (const item of preview.compensate) {
    const line = el("li", "will-compensate", item.tool + " (step " + item.step + ") will be compensated by " + item.compensator);
    if (item.relied_on_by && item.relied_on_by.length) {
      line.appendChild(el("div", "relied-on-by", "other runs rely on it: " + item.relied_on_by.join(", ") + "; they are paged for and noted"));
    }
    list.appendChild(line);
  }
  for (const item of preview.page) {
    list.appendChild(el("li", "will-page", item.tool + " (step " + item.step + ") will page a human: " + item.why));
  }
  if (!preview.compensate.length && !preview.page.length) list.appendChild(el("li", null, "nothing to undo; the state of step " + step + " is restored"));
  body.appendChild(list);
  // Undoing what other runs rely on is a choice of its own: without it the server refuses.
  const shared = el("input");
  shared.type = "checkbox";
  shared.id = "compensate-shared";
  if (preview.shared) {
    const choice = el("label", "shared-choice", " also undo what other runs rely on");
    choice.prepend(shared);
    body.appendChild(choice);
  }
  if (!(await panel("Roll back?", body))) return;
  const report = await operate("rollback", () =>
    api("POST", "/runs/" + encodeURIComponent(runId) + "/rollback", { to_step: step, compensate_shared: shared.checked }));
  if (report) say("rolled back: " + report.compensated.length + " compensated, " + report.paged.length + " paged");
}

// -- start ---------------------------------------------------------------------------------

function showLogin() {
  $("app").hidden = true;
  $("login").hidden = false;
}

// The dev workspace plays another person: from now on act as them. The run pane of the
// person before is cleared at once (and a panel they opened closed), and whatever was
// asked as them is dropped when it answers.
window.addEventListener("hashchange", () => {
  const hash = new URLSearchParams(location.hash.slice(1));
  if (!hash.has("reader")) return;
  state.who += 1;
  state.reader = hash.get("reader") || "";
  clearRun();
  if (!$("panel").hidden) $("panel-cancel").click();
  say("");
  history.replaceState(null, "", location.pathname);
  loadRuns().catch(() => {});
});

async function start() {
  const hash = new URLSearchParams(location.hash.slice(1));
  const fromHash = hash.get("token");
  // Whom the dev workspace plays: the console then shows only the runs they may read.
  state.reader = hash.get("reader") || "";
  if (fromHash) {
    sessionStorage.setItem("signoff-token", fromHash);
    history.replaceState(null, "", location.pathname);
  }
  state.token = sessionStorage.getItem("signoff-token") || "";
  $("login").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem("signoff-token", $("token").value);
    state.token = $("token").value;
    start();
  });
  if (!state.token) { showLogin(); return; }
  $("login").hidden = true;
  $("app").hidden = false;
  $("status-filter").onchange = () => loadRuns();
  $("text-filter").oninput = () => loadRuns();
  await loadRuns();
  await loadRules().catch(() => {});
  document.body.dataset.ready = "1";
  setInterval(() => {
    if (state.busy || document.hidden) return;
    loadRuns().catch(() => {});
    loadRun().catch(() => {});
    loadRules().catch(() => {});
  }, 1500);
}

start();
