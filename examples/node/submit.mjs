// Submits a mission to the fleet and awaits its Step (docs/wire.md,
// "Mission" and "Step"), then prints {"id", "step"} as JSON.
//
//   PTC_NATS_URL=nats://localhost:4222 node submit.mjs [--json]
//
// --json sends the mission as JSON (Content-Type: application/json) instead
// of msgpack; the result is msgpack either way.
import { connect, headers } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { MISSION_VERSION, pack, resultSubject, submitSubject, submitterOf, ulid, unpack } from "./wire.mjs";

const asJSON = process.argv.includes("--json");
const user = process.env.PTC_NATS_USER;
const nc = await connect({ servers: process.env.PTC_NATS_URL, user, pass: process.env.PTC_NATS_PASSWORD });
const submitter = submitterOf(user);
const js = jetstream(nc);
const jsm = await jetstreamManager(nc);

const id = ulid();
const tools = ["shout", "word_stats", "records"];
const mission = {
  v: MISSION_VERSION,
  id,
  kind: "agent",
  agent: {
    prompt: "Shout the greeting and count the words of the text (n is {{n}}).",
    signature: "(n :int) -> {loud :string, words :int, top :string, n :int}",
    tools,
  },
  tools,
  context: { n: 41, greeting: "hello from node", text: "the quick brown fox jumps over the lazy dog the end" },
  labels: { client: "examples/node" },
};

const h = headers();
h.set("Ptc-Mission-Id", id);
if (asJSON) {
  h.set("Content-Type", "application/json");
}
// Subscribe before publishing, so the result cannot slip by.
const signals = nc.subscribe(resultSubject(submitter, id));
const body = asJSON ? JSON.stringify(mission) : pack(mission);
await js.publish(submitSubject(submitter, "normal", id), body, { headers: h, msgID: id });

// The stored message is the answer; a message on the subject is a signal.
async function stored() {
  const m = await jsm.direct.getMessage("RESULTS", { last_by_subj: resultSubject(submitter, id) });
  return m ?? null;
}
let msg = await stored();
if (!msg) {
  for await (const _ of signals) {
    msg = await stored();
    if (msg) break;
  }
}
signals.unsubscribe();
const step = unpack(msg.data);
if (step.type !== "step") {
  throw new Error(`not a step: type ${step.type}`);
}
process.stdout.write(JSON.stringify({ id, step }) + "\n");
await nc.drain();
