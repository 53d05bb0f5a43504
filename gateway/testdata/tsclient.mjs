// A client written with the official TypeScript MCP SDK, driven by the Go
// tests: connect to the gateway (stdio or streamable HTTP), list tools,
// search, call, and print what happened as one JSON object.
//
//   node tsclient.mjs http URL MODE
//   node tsclient.mjs stdio COMMAND MODE   (COMMAND's environment comes from ours)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [kind, target, mode] = process.argv.slice(2);
const client = new Client({ name: "ts-test-client", version: "1.0.0" });
let listChanged = 0;
client.setNotificationHandler(ToolListChangedNotificationSchema, () => { listChanged++; });
const transport = kind === "stdio"
  ? new StdioClientTransport({ command: target, args: [], env: process.env, stderr: "inherit" })
  : new StreamableHTTPClientTransport(new URL(target));
await client.connect(transport);
const text = (r) => (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");
const out = { mode, before: [], after: [], found: [], result: "", isError: false, listChanged: 0 };
out.before = (await client.listTools()).tools.map((t) => t.name);
if (mode === "full") {
  // Over stdio the gateway may still be starting its servers: wait for them.
  for (let i = 0; i < 100 && !out.before.includes("echo__echo"); i++) {
    await new Promise((r) => setTimeout(r, 100));
    out.before = (await client.listTools()).tools.map((t) => t.name);
  }
  const r = await client.callTool({ name: "echo__echo", arguments: { text: "from typescript" } });
  out.result = text(r); out.isError = !!r.isError;
} else {
  let found = [];
  for (let i = 0; i < 100 && !found.includes("echo__echo"); i++) {
    const s = await client.callTool({ name: "search_tools", arguments: { query: "echo the text back" } });
    const res = JSON.parse(text(s));
    found = res.tools.map((t) => t.name);
    if (!found.includes("echo__echo")) await new Promise((r) => setTimeout(r, 100));
  }
  out.found = found;
  const r = await client.callTool({ name: "call_tool", arguments: { name: "echo__echo", arguments: { text: "from typescript" } } });
  out.result = text(r); out.isError = !!r.isError;
  if (mode === "dynamic") {
    for (let i = 0; i < 50 && listChanged === 0; i++) await new Promise((r) => setTimeout(r, 100));
    const r2 = await client.callTool({ name: "echo__echo", arguments: { text: "natively" } });
    out.native = text(r2);
  }
}
out.after = (await client.listTools()).tools.map((t) => t.name);
out.listChanged = listChanged;
console.log(JSON.stringify(out));
await client.close();
