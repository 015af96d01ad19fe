// A client of `ferry mcp` written with the official MCP TypeScript SDK (from npm,
// scripts/e2e-npm): it lists the tools, binds the tab whose URL it is given, waits
// for the page's tools, calls one, and tries to bind a tab that does not exist.
// It prints what it saw as one JSON object; the Go test judges it.
//
//   node mcp-client.mjs NPM_DIR FERRY_BIN PAGE_URL
const [npm, ferry, pageURL] = process.argv.slice(2);
const sdk = `${npm}/node_modules/@modelcontextprotocol/sdk/dist/esm`;
const { Client } = await import(`${sdk}/client/index.js`);
const { StdioClientTransport } = await import(`${sdk}/client/stdio.js`);

const client = new Client({ name: 'ferry-e2e-ts-client', version: '1.0.0' });
await client.connect(new StdioClientTransport({ command: ferry, args: ['mcp'], env: process.env, stderr: 'ignore' }));
const out = {};
const text = (r) => JSON.parse(r.content[0].text);
const first = await client.listTools();
out.first = first.tools.map((t) => t.name);
const tabs = text(await client.callTool({ name: 'ferry_list_tabs', arguments: {} }));
const tab = (tabs.result?.tabs ?? []).find((t) => t.url === pageURL);
out.tab = tab?.tab_id ?? 0;
const missing = await client.callTool({ name: 'ferry_bind_tab', arguments: { tab_id: 987654321 } });
out.bindMissing = { isError: missing.isError, result: text(missing) };
out.bind = text(await client.callTool({ name: 'ferry_bind_tab', arguments: { tab_id: out.tab } }));
let tools = [];
for (let i = 0; i < 50; i++) {
  tools = (await client.listTools()).tools;
  if (tools.some((t) => t.name === 'todo.add')) break;
  await new Promise((r) => setTimeout(r, 200));
}
out.tools = tools.map((t) => ({ name: t.name, title: t.title ?? null, inputSchema: t.inputSchema }));
const add = await client.callTool({ name: 'todo.add', arguments: { text: 'from the TypeScript SDK' } });
out.add = { isError: add.isError ?? false, result: text(add) };
await client.close();
console.log(JSON.stringify(out));
