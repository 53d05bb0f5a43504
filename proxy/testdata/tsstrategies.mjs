// The official TypeScript SDK drives search → load → call through the
// proxy, once per case of CASES (a JSON array of {name, url, style,
// stream}): style "inline" hands the found tool over as a tool_addition
// holding its definition in a system message, "classic" as a
// tool_reference in the search's tool_result (the catalog deferred in
// tools). Prints one JSON object: per case, what the client saw.
import Anthropic from '@anthropic-ai/sdk';

const bash = { name: 'Bash', description: 'Run a shell command', input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } };
const search = { name: 'tool_search', description: 'Search the deferred tools', input_schema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] } };
const slack = { name: 'mcp__slack__post_message', description: 'Post a message to a Slack channel', input_schema: { type: 'object', properties: { channel: { type: 'string' }, text: { type: 'string' } }, required: ['channel', 'text'] } };
const deferred = [
  { ...slack, defer_loading: true },
  { name: 'mcp__github__create_pull_request', description: 'Open a pull request on a GitHub repository', input_schema: { type: 'object', properties: { repo: { type: 'string' } } }, defer_loading: true },
  { name: 'mcp__jira__create_ticket', description: 'Create a Jira ticket in a project', input_schema: { type: 'object', properties: { project: { type: 'string' } } }, defer_loading: true },
];
const betas = {
  inline: ['mid-conversation-tool-changes-2026-07-01', 'inline-tools-2026-09-15'],
  classic: ['advanced-tool-use-2025-11-20'],
};

async function roundTrip({ url, style, stream, task, output }) {
  const client = new Anthropic({ apiKey: 'sk-test-secret', baseURL: url, maxRetries: 0, timeout: 15000 });
  const params = {
    model: 'claude-standin', max_tokens: 512, betas: betas[style],
    tools: style === 'classic' ? [bash, search, ...deferred] : [bash, search],
    messages: [{ role: 'user', content: task }],
  };
  const send = async () => stream ? await client.beta.messages.stream(params).finalMessage() : await client.beta.messages.create(params);
  const m1 = await send();
  const use = m1.content.find((b) => b.type === 'tool_use');
  params.messages.push({ role: 'assistant', content: m1.content });
  if (style === 'classic') {
    params.messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: [{ type: 'tool_reference', tool_name: slack.name }] }] });
  } else {
    params.messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'Loaded tools: ' + slack.name }] });
    params.messages.push({ role: 'system', content: [{ type: 'tool_addition', tool: { type: 'tool_definition', definition: slack } }] });
  }
  const m2 = await send();
  const call = m2.content.find((b) => b.type === 'tool_use');
  params.messages.push({ role: 'assistant', content: m2.content });
  params.messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: output }] });
  const m3 = await send();
  return {
    searched: use?.name, searchStop: m1.stop_reason,
    called: call?.name, callID: call?.id, callStop: m2.stop_reason, input: call?.input,
    final: m3.content.filter((b) => b.type === 'text').map((b) => b.text).join(''),
  };
}

const out = {};
for (const c of JSON.parse(process.env.CASES)) {
  try {
    out[c.name] = await roundTrip(c);
  } catch (e) {
    out[c.name] = { error: String(e?.message ?? e) };
  }
}
console.log(JSON.stringify(out));
