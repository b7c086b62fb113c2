// A tool service on the NATS micro protocol (docs/wire.md, "Tool calls"):
// Go workers discover its tools through $SRV.INFO and missions call them.
//
//   PTC_NATS_URL=nats://localhost:4222 node toolservice.mjs
//
// shout takes msgpack requests; word_stats asks for JSON requests with the
// ptc.content_type metadata key and answers in JSON; records returns a
// result larger than one NATS message, sent out of band (docs/wire.md,
// "Large results, out of band"). Prints "ready" once serving; stops on
// SIGTERM or SIGINT.
import { connect, headers } from "@nats-io/transport-node";
import { Svcm } from "@nats-io/services";
import { Objm } from "@nats-io/obj";
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

// A result whose encoding is over 256 KiB goes to the service's results
// bucket, tool_results_<service>; the reply names the object.
const LARGE_RESULT_BYTES = 256 * 1024;
const results = await new Objm(nc).create(`tool_results_${SERVICE}`, { ttl: 24 * 3600 * 1e9 });

svc.addEndpoint("records", {
  subject: toolSubject(SERVICE, "records"),
  metadata: {
    "ptc.tool": "records",
    "ptc.signature": "(n :int) -> [{id :int, body :string}]",
    "ptc.description": "Returns n records.",
  },
  handler: async (err, msg) => {
    if (err) return;
    let req;
    try {
      req = unpack(msg.data);
    } catch (e) {
      return fail(msg, "", "bad_request", `undecodable request: ${e.message}`, false);
    }
    const n = Number(req.args?.n ?? 0);
    const records = Array.from({ length: n }, (_, i) => ({ id: i, body: `record number ${i} of ${n}` }));
    const encoded = pack(records);
    if (encoded.length <= LARGE_RESULT_BYTES) {
      return msg.respond(pack({ v: TOOL_CALL_VERSION, call_id: req.call_id, result: records }));
    }
    try {
      const name = `${req.mission_id || "none"}.records.${req.call_id}.${Date.now()}`;
      const info = await results.putBlob({ name }, encoded);
      msg.respond(pack({
        v: TOOL_CALL_VERSION, call_id: req.call_id, result: null,
        result_ref: { bucket: info.bucket, name: info.name, size: info.size, digest: info.digest },
      }));
    } catch (e) {
      fail(msg, req.call_id, "tool_error", `the result could not be stored: ${e.message}`, false);
    }
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
