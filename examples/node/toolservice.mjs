// A tool service on the NATS micro protocol (docs/wire.md, "Tool calls"):
// Go workers discover its tools through $SRV.INFO and missions call them.
//
//   PTC_NATS_URL=nats://localhost:4222 node toolservice.mjs
//
// shout takes msgpack requests; word_stats asks for JSON requests with the
// ptc.content_type metadata key and answers in JSON. Prints "ready" once
// serving; stops on SIGTERM or SIGINT.
import { connect, headers } from "@nats-io/transport-node";
import { Svcm } from "@nats-io/services";
import { TOOL_CALL_VERSION, pack, toolSubject, unpack } from "./wire.mjs";

const SERVICE = "nodetools";
const nc = await connect({ servers: process.env.PTC_NATS_URL });
const svc = await new Svcm(nc).add({ name: SERVICE, version: "1.0.0", description: "example tools written in Node.js" });

// fail answers a call with a tool error: the micro error headers, which
// workers read first, and the same error in the body.
function fail(msg, callID, code, message, json) {
  const h = headers();
  h.set("Nats-Service-Error-Code", code);
  h.set("Nats-Service-Error", message);
  const response = { v: TOOL_CALL_VERSION, call_id: callID, result: null, error: { code, message } };
  if (json) {
    h.set("Content-Type", "application/json");
    msg.respond(JSON.stringify(response), { headers: h });
  } else {
    msg.respond(pack(response), { headers: h });
  }
}

svc.addEndpoint("shout", {
  subject: toolSubject(SERVICE, "shout"),
  metadata: {
    "ptc.tool": "shout",
    "ptc.signature": "(text :string) -> {loud :string, length :int}",
    "ptc.description": "Upper-cases a text and adds an exclamation mark.",
  },
  handler: (err, msg) => {
    if (err) return;
    let req;
    try {
      req = unpack(msg.data);
    } catch (e) {
      return fail(msg, "", "bad_request", `undecodable request: ${e.message}`, false);
    }
    const text = req.args?.text;
    if (typeof text !== "string") {
      return fail(msg, req.call_id, "bad_request", "text: expected a string", false);
    }
    msg.respond(pack({ v: TOOL_CALL_VERSION, call_id: req.call_id, result: { loud: text.toUpperCase() + "!", length: text.length } }));
  },
});

svc.addEndpoint("word_stats", {
  subject: toolSubject(SERVICE, "word_stats"),
  metadata: {
    "ptc.tool": "word_stats",
    "ptc.signature": "(text :string) -> {words :int, top :string}",
    "ptc.description": "Counts the words of a text and names the most frequent one.",
    "ptc.content_type": "application/json",
  },
  handler: (err, msg) => {
    if (err) return;
    let req;
    try {
      req = JSON.parse(new TextDecoder().decode(msg.data));
    } catch (e) {
      return fail(msg, "", "bad_request", `undecodable request: ${e.message}`, true);
    }
    const text = req.args?.text;
    if (typeof text !== "string") {
      return fail(msg, req.call_id, "bad_request", "text: expected a string", true);
    }
    const counts = new Map();
    const words = text.split(/\s+/).filter(Boolean);
    for (const w of words) counts.set(w, (counts.get(w) ?? 0) + 1);
    const top = [...counts.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0]?.[0] ?? "";
    const h = headers();
    h.set("Content-Type", "application/json");
    msg.respond(JSON.stringify({ v: TOOL_CALL_VERSION, call_id: req.call_id, result: { words: words.length, top } }), { headers: h });
  },
});

console.log("ready");
const stop = async () => {
  await svc.stop();
  await nc.drain();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
