// Measuring code evaluated inside the extension's service worker by bench_test.go.
// The same loop times every host and every client, so the ratios compare hosts, not
// harnesses. It returns plain data; the Go side prints the table.
(() => {
  const now = () => performance.now();

  // A bare native-port client: ids, a pending map and $/chunk reassembly as
  // PROTOCOL.md says, and nothing else, so that it costs the same for every host.
  function nativeClient(name) {
    const t0 = now();
    const port = chrome.runtime.connectNative(name);
    const pending = new Map();
    const chunks = new Map();
    let nextId = 1;
    let closed = null;
    port.onMessage.addListener((m) => {
      if (m.method === '$/chunk') {
        const { id, index, count, data } = m.params;
        let c = chunks.get(id);
        if (!c) chunks.set(id, (c = { parts: new Array(count), got: 0 }));
        c.parts[index] = data;
        if (++c.got < count) return;
        chunks.delete(id);
        m = JSON.parse(c.parts.join(''));
      }
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      if (m.error) p.reject(new Error(`${m.error.code}: ${m.error.message}`));
      else p.resolve(m.result);
    });
    port.onDisconnect.addListener(() => {
      closed = new Error(`${name}: ${chrome.runtime.lastError?.message ?? 'disconnected'}`);
      for (const p of pending.values()) p.reject(closed);
      pending.clear();
    });
    const call = (method, params) => new Promise((resolve, reject) => {
      if (closed) return reject(closed);
      const id = nextId++;
      pending.set(id, { resolve, reject });
      port.postMessage({ jsonrpc: '2.0', id, method, params });
    });
    return { t0, call, close: () => port.disconnect() };
  }

  const hello = { protocol: 1, client: 'ferry-bench', client_version: '0' };

  const quantile = (samples, p) => {
    const s = [...samples].sort((a, b) => a - b);
    return s[Math.min(s.length - 1, Math.floor(p * s.length))];
  };

  // A service worker is not cross-origin isolated, so performance.now() ticks in
  // 0.1 ms steps: a 0.2 ms round trip cannot be told from a 0.25 ms one. The median of
  // the mean of each run of `batch` consecutive calls (p50b) has 10x the resolution
  // and is what the small-message ratio uses.
  function summary(samples, totalMs, batch = 10) {
    const means = [];
    for (let i = 0; i + batch <= samples.length; i += batch) {
      means.push(samples.slice(i, i + batch).reduce((a, b) => a + b, 0) / batch);
    }
    return { n: samples.length, p50: quantile(samples, 0.5), p99: quantile(samples, 0.99),
      p50b: means.length ? quantile(means, 0.5) : quantile(samples, 0.5),
      min: Math.min(...samples), max: Math.max(...samples), perSec: (samples.length * 1000) / totalMs };
  }

  async function roundTrips(call, size, iterations) {
    const payload = 'x'.repeat(size);
    for (let i = 0; i < Math.min(20, iterations); i++) await call('host.ping', { payload });
    const samples = [];
    const start = now();
    for (let i = 0; i < iterations; i++) {
      const t = now();
      const r = await call('host.ping', { payload });
      samples.push(now() - t);
      if (r.payload.length !== size) throw new Error(`echo of ${size} B came back as ${r.payload.length} B`);
    }
    return summary(samples, now() - start);
  }

  // host.ping {size} answers size bytes of UTF-8: a 16-byte unit of 14 characters
  // (one is three bytes long) repeated, then 'x' padding (host.PingPayload).
  const pingChars = (size) => Math.floor(size / 16) * 14 + (size % 16);

  async function chunked(call, size, runs) {
    await call('host.ping', { size });
    const samples = [];
    const start = now();
    for (let i = 0; i < runs; i++) {
      const t = now();
      const r = await call('host.ping', { size });
      samples.push(now() - t);
      if (r.payload.length !== pingChars(size)) {
        throw new Error(`chunked reply of ${size} B came back as ${r.payload.length} characters, want ${pingChars(size)}`);
      }
    }
    const s = summary(samples, now() - start);
    s.mibPerSec = size / 1048576 / (s.p50 / 1000);
    return s;
  }

  async function firstReply(name, runs) {
    const samples = [];
    for (let i = 0; i <= runs; i++) {
      const c = nativeClient(name);
      await c.call('host.hello', hello);
      const ms = now() - c.t0;
      c.close();
      if (i > 0) samples.push(ms); // the first start pays for a cold page cache
      await new Promise((r) => setTimeout(r, 50)); // let the old host exit
    }
    return summary(samples, 1);
  }

  async function suite(call, plan) {
    const out = { sizes: {} };
    for (const [size, iterations] of plan.sizes) out.sizes[size] = await roundTrips(call, size, iterations);
    out.chunked = await chunked(call, plan.chunkSize, plan.chunkRuns);
    return out;
  }

  globalThis.__ferryBench = {
    // Through a port of our own, for any registered host name.
    async native(name, plan) {
      const out = { first: await firstReply(name, plan.firstRuns) };
      const c = nativeClient(name);
      try {
        await c.call('host.hello', hello);
        Object.assign(out, await suite(c.call, plan));
      } finally {
        c.close();
      }
      return out;
    },
    // Through the extension's own host client: what users get.
    async client(plan) {
      return suite((m, p) => globalThis.ferryHost.request(m, p, 120000), plan);
    },
  };
  return true;
})()
