// A skills server for the gateway's tests: serves the skill folders under
// the folder named by its first argument, over stdio, with the TypeScript
// SDK's implementation of the MCP Skills extension. A second argument sets
// the skills/list page size.
import { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { loadSkills } from '@modelcontextprotocol/server/ext/skills/node';

const root = process.argv[2];
if (!root) {
  console.error('usage: node serve.mjs SKILLS_FOLDER [PAGE_SIZE]');
  process.exit(2);
}
const pageSize = process.argv[3] ? Number(process.argv[3]) : 100;
const catalog = await loadSkills(root, { pageSize, onWarning: (w) => console.error(`skill warning: ${w.path}: ${w.message}`) });
serveStdio(() => {
  const server = new McpServer({ name: 'skills-fixture', version: '1.0.0' });
  catalog.attach(server);
  return server;
});
