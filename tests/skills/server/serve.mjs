// A skills server for the gateway's tests: serves the skill folders under
// the folder named by its first argument with the TypeScript SDK's
// implementation of the MCP Skills extension. A second argument sets the
// skills/list page size. Over stdio by default; with --http it listens on a
// loopback port of its own choosing at /mcp (both protocol eras: 2026-07-28
// per request, 2025 requests statelessly) and prints its URL as the first
// line of its standard output.
import http from 'node:http';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { loadSkills } from '@modelcontextprotocol/server/ext/skills/node';

const args = process.argv.slice(2);
const overHTTP = args.includes('--http');
const [root, size] = args.filter((a) => a !== '--http');
if (!root) {
  console.error('usage: node serve.mjs SKILLS_FOLDER [PAGE_SIZE] [--http]');
  process.exit(2);
}
const pageSize = size ? Number(size) : 100;
const catalog = await loadSkills(root, { pageSize, onWarning: (w) => console.error(`skill warning: ${w.path}: ${w.message}`) });
const factory = () => {
  const server = new McpServer({ name: 'skills-fixture', version: '1.0.0' });
  catalog.attach(server);
  return server;
};

if (!overHTTP) {
  serveStdio(factory);
} else {
  const handler = createMcpHandler(factory);
  // node:http to the handler's web-standard fetch face, and back.
  const server = http.createServer(async (req, res) => {
    try {
      const chunks = [];
      for await (const c of req) chunks.push(c);
      const body = chunks.length ? Buffer.concat(chunks) : undefined;
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) {
        if (Array.isArray(v)) v.forEach((x) => headers.append(k, x));
        else if (v !== undefined) headers.set(k, v);
      }
      const request = new Request(`http://${req.headers.host}${req.url}`, {
        method: req.method,
        headers,
        body: req.method === 'GET' || req.method === 'HEAD' ? undefined : body,
      });
      const response = await handler.fetch(request);
      res.writeHead(response.status, Object.fromEntries(response.headers));
      if (response.body) {
        for await (const chunk of response.body) res.write(chunk);
      }
      res.end();
    } catch (err) {
      console.error(`skills server: ${err?.stack ?? err}`);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    }
  });
  server.listen(0, '127.0.0.1', () => {
    console.log(`http://127.0.0.1:${server.address().port}/mcp`);
  });
}
