// The sandbox page (manifest "sandbox"): an opaque origin without chrome.*.
// Each run gets a fresh dedicated worker built from the runner's source: no
// DOM, no page, nothing left over from earlier runs, and a runaway loop is
// ended by terminating the worker at the timeout. Messages come only from
// the offscreen document that hosts this frame.
'use strict';

addEventListener('message', (event) => {
  if (event.source !== parent) return;
  const { id, runner, code, limits, timeoutMs } = event.data || {};
  if (typeof id !== 'string' || typeof runner !== 'string' || typeof code !== 'string') return;
  const reply = (outcome) => parent.postMessage({ id, outcome }, '*');
  let worker;
  try {
    const source = `'use strict';
const run = ${runner};
self.onmessage = async (e) => { self.postMessage(await run(e.data.code, e.data.limits)); };`;
    worker = new Worker(URL.createObjectURL(new Blob([source], { type: 'text/javascript' })));
  } catch (err) {
    reply({ ok: false, name: 'Error', message: `the sandbox could not start a worker: ${err && err.message}`, stack: '' });
    return;
  }
  let done = false;
  const finish = (outcome) => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    worker.terminate();
    reply(outcome);
  };
  const timer = setTimeout(() => finish({ ok: false, timeout: true }), timeoutMs);
  worker.onmessage = (e) => finish(e.data);
  worker.onerror = (e) => {
    e.preventDefault();
    finish({ ok: false, name: 'Error', message: String(e.message || 'the sandbox worker failed'), stack: '' });
  };
  worker.postMessage({ code, limits });
});
