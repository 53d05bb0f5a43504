// An MCP server written with the official TypeScript SDK, for the gateway's
// tests of messages over its size limit. The SDK writes a response's id
// after its result, so the id comes at the very end of a large message.
//
//   echo {text}      answers the text
//   huge {bytes}     answers a text of that many bytes
//   shout {bytes}    first writes a log notification of that many bytes
//   derail {bytes}   first writes a JSON object of that many bytes with no id
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const sized = (description) => ({
  description,
  inputSchema: { type: "object", properties: { bytes: { type: "integer" } } },
});
const tools = [
  { name: "echo", description: "Echo the text back.", inputSchema: { type: "object", properties: { text: { type: "string" } } } },
  { name: "huge", ...sized("Answer a text of the given size.") },
  { name: "shout", ...sized("Send a log message of the given size, then answer.") },
  { name: "derail", ...sized("Write a message of the given size with no id, then answer.") },
];
const server = new Server({ name: "big", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
const write = (s) => new Promise((resolve) => process.stdout.write(s, resolve));
server.setRequestHandler(CallToolRequestSchema, async (req) => {
  const args = req.params.arguments || {};
  const text = (t) => ({ content: [{ type: "text", text: t }] });
  switch (req.params.name) {
    case "echo":
      return text(args.text);
    case "huge":
      return text("x".repeat(args.bytes));
    case "shout":
      await write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "x".repeat(args.bytes) } }) + "\n");
      return text("shouted");
    case "derail":
      await write(JSON.stringify({ junk: "x".repeat(args.bytes) }) + "\n");
      return text("derailed");
  }
  throw new Error("unknown tool " + req.params.name);
});
await server.connect(new StdioServerTransport());
