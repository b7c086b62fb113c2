// Drives `dispatcher mcp` over stdio with the official TypeScript MCP SDK and
// prints what it saw as one JSON object on stdout; the Go test
// (TestMCPServerWithTypeScriptSDK) starts the fleet, runs this script and
// checks the output.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ProgressNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const transport = new StdioClientTransport({
  command: process.env.PTC_TEST_DISPATCHER,
  args: ["mcp"],
  env: process.env,
  stderr: "inherit",
});
const client = new Client({ name: "ptc-mcp-test", version: "1.0.0" });
await client.connect(transport);

const out = {};
out.tools = (await client.listTools()).tools.map((t) => t.name).sort();

const fleetTools = await client.callTool({ name: "list_tools", arguments: {} });
out.fleetTools = fleetTools.structuredContent.tools.map((t) => `${t.name} ${t.signature}`);

// Progress is recorded by a notification handler of the script's own: the
// SDK hands each notification to the call's onprogress asynchronously and
// forgets the call when its response arrives, so a notification sent just
// before the response would be dropped.
const progress = [];
client.setNotificationHandler(ProgressNotificationSchema, (n) => {
  progress.push(n.params.message);
});
const run = await client.callTool(
  {
    name: "run_mission",
    arguments: {
      prompt: "How many paid orders are there in {{region}}?",
      signature: "(region :string, big :int) -> {paid :int, region :string, big :int}",
      tools: ["list_orders"],
      context: { region: "north", big: 1234567 },
      plan: ["Count the paid orders", "Answer"],
    },
  },
  undefined,
  { onprogress: () => {} }, // asks the server for progress
);
out.run = { isError: run.isError ?? false, structured: run.structuredContent, text: run.content[0].text };
out.progress = [...progress];

const bad = await client.callTool({ name: "run_mission", arguments: { prompt: "" } });
out.bad = { isError: bad.isError ?? false, text: bad.content[0].text };

const sub = await client.callTool({
  name: "submit_mission",
  arguments: { prompt: "Count paid orders.", signature: "{paid :int}", tools: ["list_orders"] },
});
const id = sub.structuredContent.mission_id;
const res = await client.callTool({ name: "mission_result", arguments: { mission_id: id, wait: true } });
// mission_status reports the final state once the result is stored, also
// before the worker's final status write (docs/fleet.md, "Life of a
// mission"): one read right after the result.
const status = await client.callTool({ name: "mission_status", arguments: { mission_id: id } });
const state = status.structuredContent.state;
out.submitted = { id, result: res.structuredContent, state };

await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
