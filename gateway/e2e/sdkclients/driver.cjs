'use strict';
// Runs the gateway's SDK cases for the Go test (sdk_test.go): one JSON command a
// line on stdin ({"id", "sdk", "case", "args"}), one JSON line back on stdout
// ({"id", ...what the SDK gave back}, or {"id", "error": …} for what it raised).
// Commands run one at a time, in order, so the Go side can script the fake
// upstream between them.
const readline = require('node:readline');

const sdks = { openai: require('./openai.cjs'), anthropic: require('./anthropic.cjs') };

// recorder wraps fetch to note every HTTP attempt the SDK makes: when (ms after
// the first), the retry count the SDK sent, the status it got, and the headers of
// the first attempt. This is how a case sees the SDK's own retries.
function recorder() {
  const attempts = [];
  let t0 = 0;
  let sent = null;
  const fetchFn = async (url, init = {}) => {
    const now = Date.now();
    if (!attempts.length) t0 = now;
    const h = new Headers(init.headers);
    if (!sent) sent = Object.fromEntries(h.entries());
    const a = { at_ms: now - t0, retry: h.get('x-stainless-retry-count'), method: init.method || 'GET' };
    attempts.push(a);
    const res = await fetch(url, init);
    a.status = res.status;
    return res;
  };
  return { fetchFn, attempts, sent: () => sent };
}

// describe turns what the SDK raised into JSON: its class as the SDK names it and
// the fields an application reads.
function describe(e, sdk) {
  const h = e && e.headers;
  const get = (k) => (h && typeof h.get === 'function' ? h.get(k) : null);
  return {
    class: e && e.constructor ? e.constructor.name : typeof e,
    api_error: e instanceof sdk.APIError,
    status: e && e.status,
    type: e && e.type,
    code: e && e.code,
    message: e && e.message,
    request_id: e && e.requestID,
    retry_after: get('retry-after'),
    retry_after_ms: get('retry-after-ms'),
    should_retry: get('x-should-retry'),
  };
}

// Cases both SDKs run alike.
const common = {
  // models: the list as the SDK pages it, and one model.
  async models(a, ctx, sdk) {
    const c = sdk.client(a, ctx);
    const ids = [];
    for await (const m of c.models.list()) ids.push(m.id);
    const one = await c.models.retrieve(a.retrieve);
    return { ids, retrieved: one.id };
  },
};

async function run(cmd) {
  const sdk = sdks[cmd.sdk];
  const fn = sdk && (sdk.cases[cmd.case] || common[cmd.case]);
  if (!fn) return { error: { class: 'NoSuchCase', message: `no case ${cmd.sdk}.${cmd.case}` } };
  const rec = recorder();
  const partial = {};
  try {
    const out = await fn(cmd.args || {}, { fetch: rec.fetchFn, partial }, sdk);
    return { ...out, attempts: rec.attempts, sent_headers: rec.sent() };
  } catch (e) {
    return { error: describe(e, sdk), partial, attempts: rec.attempts, sent_headers: rec.sent() };
  }
}

let chain = Promise.resolve();
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  if (!line.trim()) return;
  chain = chain.then(async () => {
    let cmd;
    try {
      cmd = JSON.parse(line);
    } catch (e) {
      process.stdout.write(JSON.stringify({ id: -1, error: { class: 'BadCommand', message: String(e) } }) + '\n');
      return;
    }
    const out = await run(cmd);
    process.stdout.write(JSON.stringify({ id: cmd.id, ...out }) + '\n');
  });
});
process.stdout.write(JSON.stringify({ id: 0, ready: true, versions: Object.fromEntries(Object.entries(sdks).map(([k, v]) => [k, v.version])) }) + '\n');
