// The mission viewer: polls the mission list and the selected mission's
// trace from the dispatcher's JSON API and renders them. Every value is
// inserted as text, never as HTML.
"use strict";

const $ = (sel, el = document) => el.querySelector(sel);
let selected = document.body.dataset.selected || "";

function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v; else if (k === "style") e.style.cssText = v; else e.setAttribute(k, v);
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
  return e;
}

function dur(ns) {
  if (!ns || ns <= 0) return "0s";
  const ms = ns / 1e6;
  if (ms < 1) return Math.round(ns / 1e3) + "µs";
  if (ms < 1000) return Math.round(ms) + "ms";
  if (ms < 60000) return (ms / 1000).toFixed(1) + "s";
  return Math.round(ms / 1000) + "s";
}

function preview(v, max = 400) {
  // a large tool result the trace keeps by reference: what and where
  const ref = v && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 1 && v["$object"];
  if (ref && typeof ref === "object" && ref.bucket && ref.name) return "(" + ref.size + " bytes, kept in object store " + ref.bucket + " as " + ref.name + ")";
  let s = v === undefined ? "nil" : JSON.stringify(v);
  if (s === undefined) s = String(v);
  return s.length > max ? s.slice(0, max) + "…" : s;
}

async function getJSON(url) {
  const r = await fetch(url, { headers: { Accept: "application/json" } });
  if (!r.ok) throw new Error(url + ": " + r.status + " " + (await r.text()));
  return r.json();
}

function labelText(labels) {
  return Object.keys(labels || {}).sort().map((k) => k + "=" + labels[k]).join(" ");
}

async function refreshList() {
  const state = $("#state").value;
  const label = $("#label").value.trim();
  try {
    const list = await getJSON("/api/missions?limit=100" + (state ? "&state=" + encodeURIComponent(state) : "") +
      (label ? "&label=" + encodeURIComponent(label) : ""));
    const body = $("#missions tbody");
    body.replaceChildren();
    if (list.length === 0) body.append(el("tr", { class: "empty" }, el("td", { colspan: 7 }, "no missions yet")));
    // Nothing chosen yet: open the newest mission, so the first screen
    // shows one.
    if (!selected && list.length > 0) select(list[0].id);
    for (const m of list) {
      const tr = el("tr", { "data-id": m.id, class: "state-" + m.state + (m.id === selected ? " selected" : "") },
        el("td", { class: "id" }, m.id), el("td", {}, m.state, m.scripted ? el("span", { class: "tag" }, "scripted") : null),
        el("td", {}, dur(m.duration_ns)), el("td", {}, m.agent || (m.kind === "compiled" ? "(compiled)" : "")),
        el("td", { class: "prompt" }, m.prompt || ""), el("td", {}, labelText(m.labels)), el("td", {}, m.worker || ""));
      body.append(tr);
    }
    $("#updated").textContent = "updated " + new Date().toLocaleTimeString();
  } catch (e) {
    $("#updated").textContent = String(e);
  }
}

// select shows mission id's trace and puts it in the address.
function select(id) {
  selected = id;
  history.replaceState(null, "", "/missions/" + id + location.search);
  for (const r of document.querySelectorAll("#missions tr.selected")) r.classList.remove("selected");
  const tr = document.querySelector('#missions tr[data-id="' + CSS.escape(id) + '"]');
  if (tr) tr.classList.add("selected");
  refreshTrace();
}

async function refreshTrace() {
  if (!selected) return;
  // Someone is writing a decision: leave the page as it is.
  const a = document.activeElement;
  if (a && a.closest && a.closest(".approval.pending")) return;
  try {
    const v = await getJSON("/api/missions/" + encodeURIComponent(selected));
    renderTrace(v);
  } catch (e) {
    $("#trace").replaceChildren(el("p", { class: "err" }, String(e)));
  }
}

function renderTrace(v) {
  const root = $("#trace");
  const st = v.status || {};
  const step = v.step;
  const kids = [el("h2", { class: "mono" }, v.id)];
  const sm = st.summary || {};
  const what = [sm.agent || (sm.kind === "compiled" ? "(compiled)" : ""), sm.prompt || "", labelText(sm.labels)].filter((x) => x);
  if (what.length || sm.scripted) {
    kids.push(el("p", { class: "what" }, what.join(" · "), sm.scripted ? el("span", { class: "tag" }, "scripted: replies from the mission file, no model") : null));
  }
  const u = (step && step.usage) || {};
  kids.push(el("div", { class: "summary" },
    el("div", {}, "state", el("b", { class: v.state === "succeeded" ? "ok" : (v.state === "failed" || v.state === "dead" ? "err" : "") }, v.state)),
    el("div", {}, "attempt", el("b", {}, st.attempt || 0)),
    el("div", {}, "worker", el("b", {}, st.worker || "—")),
    el("div", {}, "turns", el("b", {}, u.turns || 0)),
    el("div", {}, "model requests", el("b", {}, u.requests || 0)),
    el("div", {}, "tool calls", el("b", {}, u.tool_calls || 0)),
    el("div", {}, "tokens in / out", el("b", {}, (u.input_tokens || 0) + " / " + (u.output_tokens || 0))),
    el("div", {}, "cache read / write", el("b", {}, (u.cache_read_tokens || 0) + " / " + (u.cache_write_tokens || 0))),
    el("div", { title: "from submit to the last status change, as in the list" }, "duration", el("b", {}, dur(v.duration_ns))),
    el("div", { title: "the run itself, without the time queued" }, "run", el("b", {}, dur(u.duration)))));
  if (step && v.full) {
    kids.push(el("p", { class: "what" }, "a large result (" + v.step_bytes + " bytes): values over 1 KiB show as {cut: {bytes, preview}} · ",
      el("a", { href: v.full, class: "full" }, "download the whole Step")));
  }
  if (v.approvals && v.approvals.length) kids.push(renderApprovals(v.id, v.approvals, v.stalled_call));
  if (step) {
    kids.push(renderStep(step));
  } else {
    kids.push(renderEvents(v.events || []));
  }
  root.replaceChildren(...kids);
}

// decision says who decided a call, when, why and what they changed.
function decision(a) {
  let s = a.state + " by " + (a.decided_by || "?") + (a.decided_at ? " at " + a.decided_at : "");
  if (a.reason) s += ": " + a.reason;
  if (a.edited_args) s += "; arguments changed to " + preview(a.edited_args);
  return s;
}

// programAt shows a program with the call at position ("line:column")
// marked: its line, from the call's column on, in a <mark class="call">.
function programAt(program, position) {
  const pre = el("pre", { class: "program" });
  const m = /^(\d+):(\d+)$/.exec(position || "");
  const lines = program.split("\n");
  const line = m ? Number(m[1]) - 1 : -1;
  if (line < 0 || line >= lines.length) {
    pre.textContent = program;
    return pre;
  }
  const chars = Array.from(lines[line]);
  const col = Math.min(Number(m[2]) - 1, chars.length);
  const before = lines.slice(0, line).map((l) => l + "\n").join("") + chars.slice(0, col).join("");
  const after = (line + 1 < lines.length ? "\n" : "") + lines.slice(line + 1).join("\n");
  pre.append(before, el("mark", { class: "call", title: "the call, at " + position }, chars.slice(col).join("")), after);
  return pre;
}

// renderApprovals lists the mission's calls that need approval: a pending
// one with its arguments (editable), a reason and Approve / Deny buttons;
// a decided one with its decision. stalledCall names the call whose
// decision the mission stalls on, its wake lost (the server's
// stalled_call): it gets a Queue again button, which resumes the mission
// with the recorded decision.
function renderApprovals(id, approvals, stalledCall) {
  const box = el("div", { class: "approvals" }, el("div", { class: "label" }, "tool calls that need approval"));
  for (const a of approvals) {
    const row = el("div", { class: "approval " + a.state, "data-call": a.call },
      el("div", { class: "mono" }, a.tool + " " + preview(a.args), el("span", { class: "muted" }, " turn " + a.turn + " · call " + a.call + " · " + (a.rule || "") + (a.position ? " · at " + a.position : ""))));
    if (a.state === "pending") {
      // Typing in the fields must survive the page's refresh: it is kept
      // while the same call is pending (see refreshTrace).
      const args = el("textarea", { class: "args mono", rows: 2, cols: 60 });
      args.value = JSON.stringify(a.args);
      const reason = el("input", { class: "reason", placeholder: "reason", size: 40 });
      const msg = el("span", { class: "msg" });
      const send = async (approve) => {
        const body = { call: a.call, approve: approve, reason: reason.value };
        if (approve && args.value.trim() !== JSON.stringify(a.args)) {
          try { body.args = JSON.parse(args.value); } catch (e) { msg.textContent = "arguments: " + e.message; return; }
        }
        const r = await fetch("/api/missions/" + encodeURIComponent(id) + "/decide",
          { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
        if (!r.ok) { msg.textContent = await r.text(); return; }
        msg.textContent = "";
        if (document.activeElement) document.activeElement.blur(); // the page may refresh again
        refreshTrace();
      };
      const approve = el("button", { class: "approve" }, "Approve");
      const deny = el("button", { class: "deny" }, "Deny");
      approve.addEventListener("click", () => send(true));
      deny.addEventListener("click", () => send(false));
      row.append(el("div", {}, "deadline " + a.deadline), args, el("div", {}, reason, approve, deny, msg));
      if (a.program) row.append(programAt(a.program, a.position));
    } else {
      row.append(el("div", { class: "decision" }, decision(a)));
      if (a.call === stalledCall) {
        const msg = el("span", { class: "msg" });
        const again = el("button", { class: "requeue" }, "Queue again");
        again.addEventListener("click", async () => {
          const r = await fetch("/api/missions/" + encodeURIComponent(id) + "/decide",
            { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ call: "", approve: true }) });
          msg.textContent = r.ok ? "queued again" : await r.text();
          if (r.ok) refreshTrace();
        });
        row.classList.add("stalled");
        row.append(el("div", {}, "the mission still waits after this decision: its wake was lost. ", again, msg));
      }
    }
    box.append(row);
  }
  return box;
}

function renderStep(step) {
  const box = el("div", { class: "step" });
  const turns = step.trace || [];
  const t0 = turns.length ? Date.parse(turns[0].started_at) : 0;
  const total = turns.reduce((m, t) => Math.max(m, Date.parse(t.started_at) - t0 + t.duration / 1e6), 1);
  for (const t of turns) {
    const left = ((Date.parse(t.started_at) - t0) / total) * 100;
    const width = Math.max((t.duration / 1e6 / total) * 100, 0.5);
    const u = t.usage || {};
    const turn = el("div", { class: "turn", "data-turn": t.turn },
      el("h3", {}, "turn " + t.turn, el("span", { class: "muted" }, dur(t.duration)),
        el("span", { class: "muted" }, (u.input_tokens || 0) + " in / " + (u.output_tokens || 0) + " out"),
        el("div", { class: "bar", title: "when this turn ran, within the mission" },
          el("span", { style: "left:" + left + "%;width:" + width + "%" }))));
    if (t.program) turn.append(el("div", { class: "label" }, "program"), el("pre", { class: "program" }, t.program));
    else if (t.raw) turn.append(el("div", { class: "label" }, "response"), el("pre", {}, t.raw));
    const calls = t.tool_calls || [];
    if (calls.length) {
      const tbl = el("table", { class: "tools" }, el("tr", {}, el("th", {}, "tool"), el("th", {}, "arguments"), el("th", {}, "duration"), el("th", {}, "result")));
      for (const c of calls) {
        const res = c.error ? el("span", { class: "err" }, "✗ " + c.error) : el("span", { class: "mono" }, preview(c.result));
        tbl.append(el("tr", { class: "tool-call" }, el("td", { class: "mono" }, c.name), el("td", { class: "mono" }, preview(c.args)),
          el("td", {}, dur(c.duration)), el("td", {}, res)));
        if (c.approval) tbl.append(el("tr", { class: "approval-note" }, el("td", { colspan: 4, class: "muted" }, "approval: " + decision(c.approval))));
        if (c.child) tbl.append(el("tr", {}, el("td", { colspan: 4, class: "subcell" }, el("div", { class: "sub" }, el("div", { class: "label" }, "sub-agent " + c.name), renderStep(c.child)))));
      }
      turn.append(el("div", { class: "label" }, "tool calls"), tbl);
    }
    for (const p of t.prints || []) turn.append(el("pre", { class: "muted" }, "printed: " + p));
    if (t.error) turn.append(el("div", { class: "label err" }, "error"), el("pre", { class: "err" }, t.error));
    else if (t.program) turn.append(el("div", { class: "label" }, "result"), el("pre", { class: "result" }, preview(t.result, 2000)));
    if (t.feedback) turn.append(el("div", { class: "label" }, "feedback the model received"), el("pre", { class: "feedback" }, t.feedback));
    box.append(turn);
  }
  if (step.plan && step.plan.length) box.append(el("div", { class: "label" }, "plan, " + step.plan.filter((s) => s.done).length + "/" + step.plan.length + " steps done"), planPre(step.plan));
  if (step.fail) box.append(el("div", { class: "label err" }, "failed: " + step.fail.reason), el("pre", { class: "err" }, step.fail.message || ""));
  else box.append(el("div", { class: "label ok" }, "return"), el("pre", { class: "return" }, preview(step.return, 4000)));
  return box;
}

// planPre shows a plan's steps, one a line: "[x] 1. Fetch the orders — fetched 3 orders".
function planPre(steps) {
  return el("pre", { class: "plan" }, steps.map((s) => "[" + (s.done ? "x" : " ") + "] " + s.id + ". " + s.description + (s.summary ? " — " + s.summary : "")).join("\n"));
}

function renderEvents(evs) {
  const box = el("div", { class: "events" }, el("p", { class: "muted" }, "running: progress so far"));
  let turn = null;
  for (const e of evs) {
    if (e.kind === "turn_started") { turn = el("div", { class: "turn", "data-turn": e.turn }, el("h3", {}, "turn " + e.turn)); box.append(turn); }
    const into = turn || box;
    // a value cut from a large event: its preview and size (fleet.MaxEventBytes)
    const cut = (e.data && e.data.cut) || {};
    const shown = (f, v) => cut[f] && cut[f].preview !== undefined ? cut[f].preview + " (" + cut[f].bytes + " bytes)" : preview(v);
    if (e.kind === "program") into.append(el("div", { class: "label" }, "program"), el("pre", { class: "program" }, e.program));
    if (e.kind === "tool_call") into.append(el("div", { class: "tool-call mono" }, "→ " + e.tool + " " + shown("args", e.args)));
    if (e.kind === "tool_result") into.append(el("div", { class: e.error ? "err mono" : "mono" }, (e.error ? "✗ " + e.error : "← " + shown("result", e.result)) + "  " + dur(e.duration)));
    if (e.kind === "turn_finished" && e.data && e.data.feedback) into.append(el("div", { class: "label" }, "feedback the model received"), el("pre", { class: "feedback" }, e.data.feedback));
    // a program's (emit v), and the plan's state when the run starts and after each step done
    if (e.kind === "emit") into.append(el("div", { class: "label" }, "emitted"), el("pre", { class: "emit mono" }, shown("result", e.result)));
    if (e.kind === "plan") {
      const steps = e.plan || [];
      const done = steps.filter((s) => s.done).length;
      into.append(el("div", { class: "label" }, (e.tool ? "plan: step " + e.tool + " done, " : "plan, ") + done + "/" + steps.length + " steps done"),
        planPre(steps));
    }
  }
  return box;
}

// The calls waiting for a decision across the fleet, each with a box to
// tick, and Approve selected / Deny selected, which decide the ticked
// calls at once. A filter (tool, service, submitter, a condition on an
// argument) narrows the list and offers Approve all / Deny all of the
// calls it counts: the longest waiting of them, never more than counted.
// The ticks, the filter, the reason being typed and the last answer
// survive the page's refresh.
const ticked = new Set();
let waitingMsg = "";
const waitFilter = { tool: "", service: "", submitter: "", when: "" };
const callKey = (c) => c.mission_id + " " + c.call;
const filtering = () => Object.values(waitFilter).some((v) => v !== "");

function filterRow() {
  const row = el("div", { class: "wait-filter" }, "filter: ");
  for (const [name, hint, size] of [["tool", "tool", 10], ["service", "service", 10], ["submitter", "submitter", 10],
    ["when", '{"arg":"amount","op":"<=","value":100}', 36]]) {
    const i = el("input", { class: "wf-" + name, "data-name": name, placeholder: hint, size: size });
    i.value = waitFilter[name];
    i.addEventListener("change", () => { waitFilter[name] = i.value.trim(); ticked.clear(); waitingMsg = ""; refreshWaiting(true); });
    row.append(i, " ");
  }
  return row;
}

async function refreshWaiting(force) {
  const box = $("#waiting");
  const a = document.activeElement;
  if (!force && a && a.closest && a.closest("#waiting input:not([type=checkbox])")) return;
  const q = Object.entries(waitFilter).filter(([, v]) => v !== "").map(([k, v]) => k + "=" + encodeURIComponent(v)).join("&");
  let p;
  try {
    p = await getJSON("/api/approvals" + (q ? "?" + q : ""));
  } catch (e) {
    box.replaceChildren(...(filtering() ? [filterRow()] : []), el("p", { class: "err" }, String(e)));
    return;
  }
  const calls = p.approvals || [];
  const shown = new Set(calls.map(callKey));
  for (const k of [...ticked]) if (!shown.has(k)) ticked.delete(k);
  if (calls.length === 0) {
    box.replaceChildren(...(filtering() ? [filterRow(), el("p", { class: "msg" }, "no waiting call matches the filter")] : []),
      waitingMsg ? el("p", { class: "msg" }, waitingMsg) : "");
    return;
  }
  const reason = el("input", { class: "reason", placeholder: "reason", size: 30 });
  const old = $("#waiting input.reason");
  if (old) reason.value = old.value;
  const all = el("input", { type: "checkbox", class: "tick-all", title: "tick every call shown" });
  all.checked = calls.every((c) => ticked.has(callKey(c)));
  const tbl = el("table", { class: "waiting" },
    el("tr", {}, el("th", {}, all), el("th", {}, "mission"), el("th", {}, "call"), el("th", {}, "waiting")));
  const boxes = [];
  for (const c of calls) {
    const k = callKey(c);
    const cb = el("input", { type: "checkbox", class: "tick", "data-mission": c.mission_id, "data-call": c.call });
    cb.checked = ticked.has(k);
    cb.addEventListener("change", () => { if (cb.checked) ticked.add(k); else ticked.delete(k); });
    boxes.push(cb);
    const id = el("td", { class: "id" }, c.mission_id);
    id.addEventListener("click", () => select(c.mission_id));
    tbl.append(el("tr", {}, el("td", {}, cb), id, el("td", { class: "mono" }, c.tool + " " + preview(c.args, 80)),
      el("td", {}, dur((Date.now() - Date.parse(c.requested_at)) * 1e6))));
  }
  all.addEventListener("change", () => {
    for (const cb of boxes) {
      cb.checked = all.checked;
      cb.dispatchEvent(new Event("change"));
    }
  });
  const msg = el("span", { class: "msg" }, waitingMsg);
  // the filter the count below is of
  const counted = { ...waitFilter };
  // decide sends a decision of the calls ticked, or, with count, of the
  // filter's calls, at most count of them: only while the filter on the
  // page is still the one counted.
  const decide = async (approve, count) => {
    let body, what;
    if (count) {
      const edited = [...box.querySelectorAll(".wait-filter input")].some((i) => i.value.trim() !== counted[i.dataset.name]) ||
        Object.keys(counted).some((k) => waitFilter[k] !== counted[k]);
      if (edited) {
        waitingMsg = "the filter was edited after its " + count + " calls were counted: press Enter to count again, then decide";
        msg.textContent = waitingMsg;
        return;
      }
      let when = null;
      if (counted.when) {
        try { when = JSON.parse(counted.when); } catch (e) { msg.textContent = "when: " + e; return; }
      }
      body = { approve: approve, reason: reason.value, filter: { tool: counted.tool, service: counted.service,
        submitter: counted.submitter, when: when, max: count } };
      what = count + " matching";
    } else {
      const picked = [...ticked].map((k) => { const [m, c] = k.split(" "); return { mission_id: m, call: c }; });
      if (picked.length === 0) { msg.textContent = "tick the calls to decide"; return; }
      body = { approve: approve, reason: reason.value, calls: picked };
      what = picked.length + " ticked";
      count = picked.length;
    }
    const r = await fetch("/api/approvals/decide", { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body) });
    if (!r.ok) { waitingMsg = await r.text(); msg.textContent = waitingMsg; return; }
    const out = await r.json();
    const notDecided = out.not_decided || [];
    waitingMsg = (approve ? "approved " : "denied ") + out.decided.length + " of " + what +
      (notDecided.length ? "; not decided: " + notDecided.map((n) => n.mission_id + " " + n.call + ": " + n.error).join("; ") : "") +
      ((out.not_queued || []).length ? "; decided, mission not queued (it resumes at its deadline or the workers' sweep): " +
        out.not_queued.map((n) => n.mission_id + " " + n.call + ": " + n.error).join("; ") : "") +
      (out.decided.length + notDecided.length < count ? "; the others no longer waited" : "");
    ticked.clear();
    reason.value = "";
    if (document.activeElement) document.activeElement.blur();
    refreshWaiting();
    refreshList();
    refreshTrace();
  };
  const button = (cls, text, approve, count) => {
    const b = el("button", { class: cls }, text);
    b.addEventListener("click", () => decide(approve, count));
    return b;
  };
  const row = el("div", {}, reason, button("approve-ticked", "Approve selected", true), button("deny-ticked", "Deny selected", false));
  if (filtering()) {
    row.append(button("approve-matching", "Approve all " + p.waiting + " matching", true, p.waiting),
      button("deny-matching", "Deny all " + p.waiting + " matching", false, p.waiting));
  }
  row.append(msg);
  box.replaceChildren(el("div", { class: "label" }, p.waiting + (filtering() ? " waiting tool calls match the filter" : " tool calls wait for a decision") +
    (p.waiting > calls.length ? " (the " + calls.length + " longest waiting shown)" : "")),
  filterRow(), tbl, row);
}

$("#missions").addEventListener("click", (ev) => {
  const tr = ev.target.closest("tr[data-id]");
  if (tr) select(tr.dataset.id);
});
$("#state").addEventListener("change", refreshList);
$("#label").addEventListener("change", refreshList);
$("#filter").addEventListener("submit", (ev) => { ev.preventDefault(); refreshList(); });

refreshList();
refreshTrace();
refreshWaiting();
setInterval(() => { refreshList(); refreshTrace(); refreshWaiting(); }, 2000);
