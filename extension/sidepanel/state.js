// The side panel's view state and the reducer that folds run events into it.
// Pure: no DOM, no chrome.*, so node --test covers it. Every change returns a
// new state whose changed items are new objects and whose unchanged items are
// the same objects, so the DOM layer re-renders only what changed.
//
// Events carry a per-run `seq` from 1. Events arrive in order on the native
// port, but a panel that opens mid-run merges a replay from the service worker
// with live events: duplicates are dropped, early arrivals wait for the
// missing ones, and `flush` applies what is left (marking the gap).

/** @returns a conversation view: items in display order, tasks, runs. */
export function emptyConversation(conversation = null) {
  return { conversation, items: [], tasks: [], runs: {}, activeRunId: null };
}

const TERMINAL = new Set(['run_finished', 'run_failed']);

function runOf(state, runId) {
  return state.runs[runId] ?? { status: 'running', lastSeq: 0, pending: [], gap: false };
}

function withRun(state, runId, run) {
  return { ...state, runs: { ...state.runs, [runId]: run } };
}

function replaceItem(state, index, item) {
  const items = state.items.slice();
  items[index] = item;
  return { ...state, items };
}

function findIndex(state, pred) {
  for (let i = state.items.length - 1; i >= 0; i--) if (pred(state.items[i])) return i;
  return -1;
}

function endStreaming(state, runId) {
  const i = findIndex(state, (it) => it.kind === 'assistant' && it.runId === runId && it.streaming);
  return i < 0 ? state : replaceItem(state, i, { ...state.items[i], streaming: false });
}

/**
 * Folds one chat.event into a conversation view. Events of another
 * conversation are ignored.
 */
export function applyEvent(state, event) {
  if (!event || typeof event.type !== 'string') return state;
  const runId = event.run_id;
  if (state.conversation?.id && event.conversation_id && event.conversation_id !== state.conversation.id) return state;
  if (typeof runId !== 'string' || runId === '') return state;
  let run = runOf(state, runId);
  const seq = Number.isInteger(event.seq) ? event.seq : null;
  // lastSeq null: nothing is known of where the run stands (a panel reopened
  // without a replay); the first event seen becomes the baseline.
  if (seq !== null && run.lastSeq !== null) {
    if (seq <= run.lastSeq || run.pending.some((e) => e.seq === seq)) return state; // seen
    if (seq > run.lastSeq + 1) {
      const pending = [...run.pending, event].sort((a, b) => a.seq - b.seq);
      return withRun(state, runId, { ...run, pending });
    }
  }
  let next = withRun(state, runId, { ...run, lastSeq: seq ?? run.lastSeq });
  next = reduce(next, event);
  // Waiting events that are now next in line.
  run = next.runs[runId];
  while (run.pending.length > 0 && run.pending[0].seq === run.lastSeq + 1) {
    const [head, ...rest] = run.pending;
    next = withRun(next, runId, { ...run, pending: rest, lastSeq: head.seq });
    next = reduce(next, head);
    run = next.runs[runId];
  }
  return next;
}

/** Applies events still waiting for missing ones, noting that some never came. */
export function flush(state) {
  let next = state;
  for (const [runId, run] of Object.entries(state.runs)) {
    if (run.pending.length === 0) continue;
    let cur = withRun(next, runId, { ...run, pending: [], gap: true });
    for (const ev of run.pending) {
      cur = withRun(cur, runId, { ...cur.runs[runId], lastSeq: ev.seq });
      cur = reduce(cur, ev);
    }
    next = cur;
  }
  return next;
}

function setRunStatus(state, runId, patch) {
  return withRun(state, runId, { ...runOf(state, runId), ...patch });
}

function upsertTool(state, event, patch) {
  const id = event.id;
  const i = findIndex(state, (it) => it.kind === 'tool' && it.id === id);
  if (i < 0) {
    const base = {
      kind: 'tool', id, runId: event.run_id, name: event.name ?? '', arguments: event.arguments,
      status: 'running', result: null, durationMs: null, waiting: null, sub: null,
    };
    const ended = endStreaming(state, event.run_id);
    return { ...ended, items: [...ended.items, { ...base, ...patch }] };
  }
  return replaceItem(state, i, { ...state.items[i], ...patch });
}

function reduce(state, event) {
  const runId = event.run_id;
  switch (event.type) {
    case 'run_started':
      return { ...setRunStatus(state, runId, { status: 'running' }), activeRunId: runId };

    case 'text_delta': {
      if (!event.text) return state;
      const last = state.items.at(-1);
      if (last?.kind === 'assistant' && last.runId === runId && last.streaming) {
        return replaceItem(state, state.items.length - 1, { ...last, text: last.text + event.text });
      }
      const item = { kind: 'assistant', id: `a:${runId}:${event.seq ?? state.items.length}`, runId, text: event.text, streaming: true };
      return { ...state, items: [...state.items, item], activeRunId: state.activeRunId ?? runId };
    }

    case 'tool_call_started':
      return upsertTool(state, event, { name: event.name ?? '', arguments: event.arguments, status: 'running' });

    case 'tool_call_finished': {
      const result = event.result ?? { success: !event.code, code: event.code };
      const patch = {
        status: result.success ? 'ok' : 'failed', result, durationMs: event.duration_ms ?? null, waiting: null,
      };
      if (event.name) patch.name = event.name;
      if (event.arguments !== undefined) patch.arguments = event.arguments;
      return upsertTool(state, event, patch);
    }

    case 'confirm':
    case 'ask': {
      if (!event.id) return state;
      const i = findIndex(state, (it) => it.kind === 'tool' && it.id === event.id);
      // A confirmation can come before its card exists; the prompt card carries it anyway.
      if (i < 0) return state;
      return replaceItem(state, i, { ...state.items[i], waiting: event.type });
    }

    case 'sub_agent_event': {
      const parent = event.parent_call_id;
      const inner = event.event;
      if (!parent || !inner) return state;
      let i = findIndex(state, (it) => it.kind === 'tool' && it.id === parent);
      let next = state;
      // A sub-agent's tokens are billed to the conversation like its parent's.
      if (TERMINAL.has(inner.type) && inner.usage && inner.run_id) {
        next = withRun(next, inner.run_id, { ...runOf(next, inner.run_id), status: inner.status || 'finished', parent: runId, usage: inner.usage });
      }
      if (i < 0) {
        next = upsertTool(next, { id: parent, run_id: runId, name: 'agent' }, {});
        i = next.items.length - 1;
      }
      const tool = next.items[i];
      const sub = tool.sub ?? { ...emptyConversation(), description: '', agentType: '' };
      // Sub-agent events are ordered by the parent's seq; their own seq is their run's.
      const subState = applyEvent(sub, inner);
      return replaceItem(next, i, {
        ...tool,
        sub: { ...subState, description: event.description || sub.description, agentType: event.agent_type || sub.agentType },
      });
    }

    case 'tasks_changed':
      return { ...state, tasks: Array.isArray(event.tasks) ? event.tasks : [] };

    case 'compacted':
      return addNotice(state, runId, event, 'info', 'noticeCompacted', []);

    case 'loop_paused':
      return addNotice(state, runId, event, 'warn', 'noticeLoopPaused', [event.error ?? '']);

    case 'run_finished': {
      let next = endStreaming(state, runId);
      next = setRunStatus(next, runId, { status: event.status || 'finished', usage: event.usage ?? null });
      // A final answer that was not streamed (a resumed run, a missed delta) still shows.
      if (event.text && !next.items.some((it) => it.kind === 'assistant' && it.runId === runId)) {
        next = { ...next, items: [...next.items, { kind: 'assistant', id: `a:${runId}:final`, runId, text: event.text, streaming: false }] };
      }
      return finishRun(next, runId);
    }

    case 'run_failed': {
      let next = endStreaming(state, runId);
      next = setRunStatus(next, runId, { status: event.status || 'failed', error: event.error ?? '', usage: event.usage ?? null });
      const b = event.budget;
      if (b && (b.kind === 'tokens' || b.kind === 'tool_calls')) {
        // A budget the person set: said in their language, with the numbers.
        const key = b.kind === 'tokens' ? 'noticeBudgetTokens' : 'noticeBudgetToolCalls';
        const args = b.kind === 'tokens' ? [b.used, b.limit, b.setting] : [b.limit, b.setting];
        next = addNotice(next, runId, event, 'warn', key, args.map((a) => String(a ?? '')));
        return finishRun(next, runId);
      }
      const key = event.status === 'cancelled' ? 'noticeRunCancelled' : 'noticeRunFailed';
      next = addNotice(next, runId, event, event.status === 'cancelled' ? 'info' : 'error', key, [event.error ?? '']);
      return finishRun(next, runId);
    }

    default:
      return state;
  }
}

function finishRun(state, runId) {
  // Tools still "running" when their run ended will never finish.
  const items = state.items.map((it) =>
    it.kind === 'tool' && it.runId === runId && it.status === 'running' ? { ...it, status: 'interrupted', waiting: null } : it);
  return { ...state, items, activeRunId: state.activeRunId === runId ? null : state.activeRunId };
}

function addNotice(state, runId, event, level, key, args) {
  const item = { kind: 'notice', id: `n:${runId}:${event.seq ?? state.items.length}:${event.type}`, runId, level, key, args };
  return { ...state, items: [...state.items, item] };
}

export function isTerminal(event) {
  return TERMINAL.has(event?.type);
}

function parseJSON(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * A conversation view from conversations.get ({conversation, messages, runs,
 * tasks, active_run_id}). Messages of `skipRunId` other than the user's are
 * left out: that run's events (replayed from the service worker) draw them.
 */
export function fromHistory(got, { skipRunId = null } = {}) {
  let state = emptyConversation(got?.conversation ?? null);
  const items = [];
  const tools = new Map();
  for (const m of got?.messages ?? []) {
    if (skipRunId && m.run_id === skipRunId && m.role !== 'user') continue;
    const id = `m:${m.ordinal}`;
    if (m.summary_of) {
      items.push({ kind: 'notice', id, runId: m.run_id ?? null, level: 'info', key: 'noticeCompacted', args: [] });
      continue;
    }
    switch (m.role) {
      case 'user':
        items.push({ kind: 'user', id, runId: m.run_id ?? null, text: m.content ?? '' });
        break;
      case 'assistant': {
        if (m.content) items.push({ kind: 'assistant', id, runId: m.run_id ?? null, text: m.content, streaming: false });
        const calls = Array.isArray(m.tool_calls) ? m.tool_calls : [];
        for (const c of calls) {
          const tool = {
            kind: 'tool', id: c.id, runId: m.run_id ?? null, name: c.name ?? '', arguments: c.arguments,
            status: 'interrupted', result: null, durationMs: null, waiting: null, sub: null,
          };
          tools.set(c.id, items.length);
          items.push(tool);
        }
        break;
      }
      case 'tool': {
        const at = tools.get(m.tool_call_id);
        if (at === undefined) break;
        const result = parseJSON(m.content) ?? { success: true, result: m.content };
        items[at] = { ...items[at], result, status: result?.success === false ? 'failed' : 'ok' };
        break;
      }
      default:
        break;
    }
  }
  const runs = {};
  for (const r of got?.runs ?? []) {
    runs[r.id] = {
      status: r.status, lastSeq: 0, pending: [], gap: false, error: r.error ?? '',
      parent: r.parent_run_id || null,
      usage: { input_tokens: r.input_tokens ?? 0, output_tokens: r.output_tokens ?? 0 },
    };
  }
  const active = got?.active_run_id ?? null;
  // A run still going keeps its tools "running" until its events say otherwise.
  const shown = items.map((it) => (it.kind === 'tool' && it.runId === active && it.status === 'interrupted' ? { ...it, status: 'running' } : it));
  state = { ...state, items: shown, tasks: got?.tasks ?? [], runs, activeRunId: active };
  if (active) state.runs[active] = { status: 'running', lastSeq: 0, pending: [], gap: false, usage: runs[active]?.usage ?? null };
  return state;
}

/**
 * Catching up when the panel reopens during a run: history without the active
 * run's own output, then the run's events as the service worker kept them. If
 * the kept events do not start at seq 1 (the worker restarted), the history
 * is kept whole and only newer events are applied.
 */
export function catchUp(got, replayed = []) {
  const active = got?.active_run_id ?? null;
  const events = (replayed ?? []).filter((e) => e?.run_id === active).sort((a, b) => a.seq - b.seq);
  const complete = active && events.length > 0 && events[0].seq === 1;
  let state = fromHistory(got, { skipRunId: complete ? active : null });
  if (!active) return state;
  if (!complete) {
    // Start at the first kept (or live) event; stored output is not drawn twice
    // because only events newer than the worker's restart exist.
    state.runs[active] = { ...state.runs[active], lastSeq: events.length > 0 ? events[0].seq - 1 : null, gap: true };
  }
  for (const ev of events) state = applyEvent(state, ev);
  return state;
}

/** The user's own message, shown at once before the host confirms it. */
export function addUserMessage(state, text, localId) {
  return { ...state, items: [...state.items, { kind: 'user', id: localId, runId: null, text }] };
}

/** chat.send answered: the run the message started. */
export function runStarted(state, { conversation_id: conversationId, run_id: runId }) {
  const conversation = state.conversation ?? { id: conversationId };
  const runs = state.runs[runId] ? state.runs : { ...state.runs, [runId]: { status: 'running', lastSeq: 0, pending: [], gap: false } };
  return { ...state, conversation: { ...conversation, id: conversationId }, runs, activeRunId: runId };
}

function tokensOf(usage) {
  if (!usage) return 0;
  return (Number(usage.input_tokens) || 0) + (Number(usage.output_tokens) || 0);
}

/**
 * The tokens the person has spent: `run`, the latest top-level run that reported
 * its usage (null before any did), and `conversation`, every run's, sub-agents'
 * included. A run reports its usage when it ends.
 */
export function usageTotals(state) {
  let run = null;
  let conversation = 0;
  for (const r of Object.values(state.runs ?? {})) {
    if (!r.usage) continue;
    conversation += tokensOf(r.usage);
    if (!r.parent) run = { tokens: tokensOf(r.usage), input: Number(r.usage.input_tokens) || 0, output: Number(r.usage.output_tokens) || 0 };
  }
  return { run, conversation };
}

/** A short, stable label for a tool result: the code, or ok. */
export function resultLabel(item) {
  if (item.status === 'running') return 'running';
  if (item.status === 'interrupted') return 'interrupted';
  if (item.result?.success) return 'ok';
  return item.result?.code || 'failed';
}

/** Pretty JSON of arguments that may arrive as an object or as a JSON string. */
export function prettyJSON(value) {
  if (value === undefined) return '';
  if (typeof value === 'string') {
    const parsed = parseJSON(value);
    if (parsed === undefined) return value;
    return JSON.stringify(parsed, null, 2);
  }
  return JSON.stringify(value, null, 2);
}
