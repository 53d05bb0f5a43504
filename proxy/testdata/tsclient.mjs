// The official TypeScript SDK as a client of the proxy. SERVER_URL is a
// proxy in emulate mode whose upstream's model calls tool_search_tool_bm25;
// CLIENT_URL one whose upstream's model calls ToolSearch (Claude Code's
// client-side search). Prints one JSON object with what each run saw.
import Anthropic from '@anthropic-ai/sdk';

const bash = { name: 'Bash', description: 'Run a shell command', input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } };
const deferred = [
  { name: 'mcp__slack__post_message', description: 'Post a message to a Slack channel', input_schema: { type: 'object', properties: { channel: { type: 'string' }, text: { type: 'string' } } }, defer_loading: true },
  { name: 'mcp__github__create_pull_request', description: 'Open a pull request on a GitHub repository', input_schema: { type: 'object', properties: { repo: { type: 'string' } } }, defer_loading: true },
  { name: 'mcp__jira__create_ticket', description: 'Create a Jira ticket in a project', input_schema: { type: 'object', properties: { project: { type: 'string' } } }, defer_loading: true },
];
const task = 'post a message to the slack channel';
const opts = { apiKey: 'sk-test-secret', maxRetries: 0, timeout: 15000 };

async function serverSide(stream) {
  const client = new Anthropic({ ...opts, baseURL: process.env.SERVER_URL });
  const params = {
    model: 'claude-standin', max_tokens: 512,
    tools: [bash, { type: 'tool_search_tool_bm25_20251119', name: 'tool_search_tool_bm25' }, ...deferred],
    messages: [{ role: 'user', content: task }],
  };
  const send = async () => stream ? await client.messages.stream(params).finalMessage() : await client.messages.create(params);
  const m1 = await send();
  const call = m1.content.find((b) => b.type === 'tool_use');
  params.messages.push({ role: 'assistant', content: m1.content });
  params.messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'posted' }] });
  const m2 = await send();
  return { types: m1.content.map((b) => b.type), refs: m1.content[1]?.content?.tool_references?.map((r) => r.tool_name), called: call?.name, final: m2.content[0]?.text };
}

async function clientSide() {
  const client = new Anthropic({ ...opts, baseURL: process.env.CLIENT_URL });
  const toolSearch = { name: 'ToolSearch', description: 'Search deferred tools', input_schema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] } };
  const betas = ['advanced-tool-use-2025-11-20', 'mid-conversation-system-2026-04-07'];
  const messages = [
    { role: 'user', content: task },
  ];
  const base = { model: 'claude-standin', max_tokens: 512, betas };
  const m1 = await client.beta.messages.stream({ ...base, tools: [bash, toolSearch], messages }).finalMessage();
  const use = m1.content.find((b) => b.type === 'tool_use');
  messages.push({ role: 'assistant', content: m1.content });
  messages.push({ role: 'user', content: [
    { type: 'tool_result', tool_use_id: use.id, content: [{ type: 'tool_reference', tool_name: 'mcp__slack__post_message' }] },
    { type: 'text', text: 'Tool loaded.' },
  ] });
  const tools = [bash, toolSearch, deferred[0]];
  const m2 = await client.beta.messages.stream({ ...base, tools, messages }).finalMessage();
  const call = m2.content.find((b) => b.type === 'tool_use');
  messages.push({ role: 'assistant', content: m2.content });
  messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'posted' }] });
  const m3 = await client.beta.messages.create({ ...base, tools, messages });
  return { searched: use?.name, called: call?.name, final: m3.content[0]?.text };
}

async function errorShape() {
  const client = new Anthropic({ ...opts, baseURL: process.env.SERVER_URL });
  try {
    await client.messages.create({ model: 'claude-standin', max_tokens: 0, messages: [{ role: 'user', content: 'x' }] });
    return { ok: true };
  } catch (e) {
    return { status: e.status, type: e.error?.error?.type };
  }
}

const out = {
  serverSide: await serverSide(false),
  serverSideStream: await serverSide(true),
  clientSide: await clientSide(),
  error: await errorShape(),
};
console.log(JSON.stringify(out));
