// The offscreen document: relays sandbox runs from the service worker to the
// sandbox frame and back. The runner's source travels with each run so that
// the sandbox page itself holds no logic worth attacking.

import { onRuntimeMessageFor } from '../lib/chrome-api.js';
import { runUserCode } from '../background/browser/user-code.js';
import { OFFSCREEN_TARGET } from '../background/browser/page.js';

// Created here rather than in the HTML so that its load event cannot fire
// before this module listens for it.
const frame = document.createElement('iframe');
frame.src = '../sandbox/sandbox.html';
const loaded = new Promise((resolve) => {
  frame.addEventListener('load', resolve, { once: true });
});
document.body.append(frame);
const pending = new Map();
let nextId = 1;

addEventListener('message', (event) => {
  if (event.source !== frame.contentWindow) return;
  const { id, outcome } = event.data || {};
  const resolve = pending.get(id);
  if (!resolve) return;
  pending.delete(id);
  resolve(outcome);
});

onRuntimeMessageFor(OFFSCREEN_TARGET, async (message) => {
  if (message.type !== 'sandbox.run') return { ok: false, error: { message: `unknown offscreen message ${message.type}` } };
  await loaded;
  const id = `r${nextId++}`;
  const outcome = new Promise((resolve) => pending.set(id, resolve));
  frame.contentWindow.postMessage({
    id,
    runner: runUserCode.toString(),
    code: message.code,
    limits: message.limits,
    timeoutMs: message.timeoutMs,
  }, '*');
  return { ok: true, outcome: await outcome };
});
