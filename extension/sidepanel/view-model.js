// Small pure helpers of the side panel: countdowns, conversation ordering,
// the bound tab, diagnostics records. No DOM; tested with node --test.

/** Milliseconds left of a prompt received at `receivedAt` with `timeoutMs`. */
export function remainingMs(receivedAt, timeoutMs, now) {
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) return null;
  return Math.max(0, receivedAt + timeoutMs - now);
}

/** "m:ss" (or "h:mm:ss"), rounding up so 0:00 shows only when time is up. */
export function formatCountdown(ms) {
  if (ms === null || ms === undefined) return '';
  const total = Math.ceil(Math.max(0, ms) / 1000);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = String(total % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${s}` : `${m}:${s}`;
}

/** Share of the time left, 0..1, for the countdown bar. */
export function remainingFraction(receivedAt, timeoutMs, now) {
  const left = remainingMs(receivedAt, timeoutMs, now);
  return left === null ? 1 : left / timeoutMs;
}

/** Newest first by updated_at, then created_at, then id, so the order is stable. */
export function sortConversations(list) {
  const time = (v) => {
    const t = Date.parse(v ?? '');
    return Number.isNaN(t) ? 0 : t;
  };
  return [...(list ?? [])].sort((a, b) =>
    time(b.updated_at) - time(a.updated_at) || time(b.created_at) - time(a.created_at) || String(a.id).localeCompare(String(b.id)));
}

/** Merges a renamed or new conversation into the list. */
export function upsertConversation(list, conversation) {
  const rest = (list ?? []).filter((c) => c.id !== conversation.id);
  return sortConversations([conversation, ...rest]);
}

/** The origin of a tab URL for display, or '' for pages without one (chrome://, about:blank). */
export function tabOrigin(url) {
  try {
    const u = new URL(url);
    return u.protocol === 'http:' || u.protocol === 'https:' || u.protocol === 'file:' ? (u.origin === 'null' ? 'file://' : u.origin) : '';
  } catch {
    return '';
  }
}

function parse(raw) {
  if (raw === null || raw === undefined) return null;
  if (typeof raw !== 'string') return raw;
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

/**
 * One model call of runs.get as the diagnostics view shows it: request parts,
 * tools offered, tools held back with reasons, the response, usage, latency.
 */
export function diagnosticsCall(call) {
  const request = parse(call?.request) ?? {};
  const response = parse(call?.response);
  const attempts = parse(call?.attempts);
  return {
    id: call?.id,
    ordinal: call?.ordinal ?? 0,
    purpose: call?.purpose ?? 'turn',
    provider: call?.provider_id ?? '',
    model: call?.model ?? '',
    latencyMs: call?.latency_ms ?? 0,
    inputTokens: call?.input_tokens ?? 0,
    outputTokens: call?.output_tokens ?? 0,
    error: call?.error ?? '',
    system: typeof request.system === 'string' ? request.system : '',
    messages: Array.isArray(request.messages) ? request.messages : [],
    tools: Array.isArray(request.tools) ? request.tools : [],
    unavailable: Array.isArray(request.unavailable) ? request.unavailable : [],
    response,
    attempts: Array.isArray(attempts) ? attempts : [],
    raw: { ...call, request, response, attempts },
  };
}

/** runs.get → {run, calls, totals}. */
export function diagnosticsRun(got) {
  const calls = (got?.model_calls ?? []).map(diagnosticsCall).sort((a, b) => a.ordinal - b.ordinal);
  const totals = calls.reduce(
    (t, c) => ({ inputTokens: t.inputTokens + c.inputTokens, outputTokens: t.outputTokens + c.outputTokens, latencyMs: t.latencyMs + c.latencyMs }),
    { inputTokens: 0, outputTokens: 0, latencyMs: 0 },
  );
  return { run: got?.run ?? null, calls, totals };
}

/** JSON for the clipboard, indented. */
export function toJSON(value) {
  return JSON.stringify(value, null, 2);
}

/** The steps of a prompt's answer for ui.ask: free text, one option, several. */
export function askAnswer(params, { text, selected }) {
  const options = Array.isArray(params?.options) ? params.options : [];
  if (options.length === 0) return { answer: String(text ?? '') };
  const chosen = options.filter((o) => (selected ?? []).includes(o));
  if (params.multiple) return { answer: chosen };
  return { answer: chosen[0] ?? null, ...(chosen.length === 0 ? { reason: 'no_choice' } : {}) };
}
