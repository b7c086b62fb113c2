// Helpers shared by the examples: names and encodings from docs/wire.md.
import { randomBytes } from "node:crypto";
import { encode, decode } from "@msgpack/msgpack";

export const MISSION_VERSION = 2; // docs/wire.md, "Versions and compatibility"
export const TOOL_CALL_VERSION = 1;

// A submitter is the name of its NATS user ("anonymous" without one); it is
// a token of its missions' subjects (docs/wire.md, "Subjects").
export const submitterOf = (user) => user || "anonymous";
export const submitSubject = (submitter, priority, id) => `mission.submit.${submitter}.${priority}.${id}`;
export const resultSubject = (submitter, id) => `mission.result.${submitter}.${id}`;
export const toolSubject = (service, tool) => `tool.${service}.${tool}`;

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

// ulid returns a new mission id: 48 bits of milliseconds then 80 random
// bits, in Crockford base32 (26 characters).
export function ulid() {
  let time = BigInt(Date.now());
  let out = "";
  for (let i = 0; i < 10; i++) {
    out = CROCKFORD[Number(time % 32n)] + out;
    time /= 32n;
  }
  let rnd = BigInt("0x" + randomBytes(10).toString("hex"));
  let tail = "";
  for (let i = 0; i < 16; i++) {
    tail = CROCKFORD[Number(rnd % 32n)] + tail;
    rnd /= 32n;
  }
  return out + tail;
}

export const pack = (value) => encode(value);
export const unpack = (bytes) => decode(bytes);
