import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  addUserMessage, applyEvent, catchUp, emptyConversation, flush, fromHistory, resultLabel, runStarted, usageTotals,
} from '../sidepanel/state.js';
import {
  askAnswer, diagnosticsRun, formatCountdown, remainingFraction, remainingMs, sortConversations, tabOrigin, upsertConversation,
} from '../sidepanel/view-model.js';

const C = 'conv1';
const R = 'run1';
let seq = 0;
const ev = (type, fields = {}) => ({ type, run_id: R, conversation_id: C, seq: ++seq, ...fields });

function script() {
  seq = 0;
  return [
    ev('run_started'),
    ev('text_delta', { text: 'Let me ' }),
    ev('text_delta', { text: 'check.' }),
    ev('tool_call_started', { id: 'c1', name: 'web_fetch', arguments: { url: 'https://a.example' } }),
    ev('tool_call_finished', { id: 'c1', name: 'web_fetch', result: { success: true, result: { status: 200 } }, duration_ms: 12 }),
    ev('tool_call_started', { id: 'c2', name: 'click', arguments: { ref: 'e1' } }),
    ev('confirm', { id: 'c2', name: 'click' }),
    ev('tool_call_finished', { id: 'c2', name: 'click', result: { success: false, code: 'USER_REJECTED', reason: 'the person declined' }, code: 'USER_REJECTED', duration_ms: 3 }),
    ev('tasks_changed', { tasks: [{ id: 't1', subject: 'Look', status: 'completed' }] }),
    ev('text_delta', { text: 'Done: **ok**' }),
    ev('run_finished', { text: 'Done: **ok**', status: 'finished', usage: { input_tokens: 10, output_tokens: 5 } }),
  ];
}

const start = () => runStarted(emptyConversation({ id: C }), { conversation_id: C, run_id: R });
const fold = (state, events) => events.reduce(applyEvent, state);
const kinds = (s) => s.items.map((i) => (i.kind === 'tool' ? `tool:${i.id}:${i.status}` : i.kind));

describe('side panel reducer', () => {
  it('folds a run in order: streamed text, tool cards, a rejection, tasks, the end', () => {
    const s = fold(start(), script());
    assert.deepEqual(kinds(s), ['assistant', 'tool:c1:ok', 'tool:c2:failed', 'assistant']);
    assert.equal(s.items[0].text, 'Let me check.');
    assert.equal(s.items[0].streaming, false);
    assert.equal(s.items[1].durationMs, 12);
    assert.equal(resultLabel(s.items[2]), 'USER_REJECTED');
    assert.equal(s.items[2].result.reason, 'the person declined');
    assert.equal(s.items[2].waiting, null);
    assert.equal(s.items[3].text, 'Done: **ok**');
    assert.equal(s.tasks.length, 1);
    assert.equal(s.activeRunId, null);
    assert.equal(s.runs[R].status, 'finished');
    assert.deepEqual(s.runs[R].usage, { input_tokens: 10, output_tokens: 5 });
  });

  it('marks a tool waiting for a confirmation', () => {
    const events = script().slice(0, 7);
    const s = fold(start(), events);
    assert.equal(s.items.at(-1).waiting, 'confirm');
  });

  it('keeps unchanged items as the same objects (the DOM redraws only what changed)', () => {
    const events = script();
    const before = fold(start(), events.slice(0, 5));
    const after = applyEvent(before, events[5]);
    assert.equal(after.items[0], before.items[0]);
    assert.equal(after.items[1], before.items[1]);
  });

  it('drops duplicates', () => {
    const events = script();
    const once = fold(start(), events);
    const twice = fold(start(), [...events, ...events]);
    assert.deepEqual(twice.items, once.items);
  });

  it('holds early events until the missing ones arrive, whatever the order', () => {
    const events = script();
    const shuffled = [events[0], events[3], events[2], events[5], events[4], events[1], ...events.slice(6)];
    assert.deepEqual(fold(start(), shuffled).items, fold(start(), events).items);
  });

  it('applies what is left at flush and notes the gap', () => {
    const events = script();
    let s = fold(start(), [events[0], ...events.slice(2)]); // the second never comes
    assert.equal(s.items.length, 0, 'everything after the hole waits');
    s = flush(s);
    assert.equal(s.runs[R].gap, true);
    assert.deepEqual(kinds(s), ['assistant', 'tool:c1:ok', 'tool:c2:failed', 'assistant']);
    assert.equal(s.items[0].text, 'check.');
  });

  it('creates a tool card when only its end is seen', () => {
    seq = 0;
    const s = applyEvent(start(), { ...ev('tool_call_finished', { id: 'x', name: 'list_tabs', result: { success: true, result: [] } }), seq: undefined });
    assert.deepEqual(kinds(s), ['tool:x:ok']);
  });

  it('ignores events of other conversations', () => {
    seq = 0;
    const s = applyEvent(start(), { ...ev('text_delta', { text: 'no' }), conversation_id: 'other' });
    assert.equal(s.items.length, 0);
  });

  it('nests sub-agent events under their call', () => {
    seq = 0;
    const events = [
      ev('tool_call_started', { id: 'a1', name: 'agent', arguments: { prompt: 'research' } }),
      ev('sub_agent_event', { parent_call_id: 'a1', description: 'find prices', agent_type: 'researcher', event: { type: 'tool_call_started', run_id: 'sub', conversation_id: C, seq: 1, id: 's1', name: 'web_search' } }),
      ev('sub_agent_event', { parent_call_id: 'a1', event: { type: 'text_delta', run_id: 'sub', conversation_id: C, seq: 2, text: 'found' } }),
      ev('tool_call_finished', { id: 'a1', name: 'agent', result: { success: true, result: 'found' } }),
    ];
    const s = fold(start(), events);
    assert.deepEqual(kinds(s), ['tool:a1:ok']);
    assert.equal(s.items[0].sub.agentType, 'researcher');
    assert.equal(s.items[0].sub.description, 'find prices');
    assert.deepEqual(s.items[0].sub.items.map((i) => i.kind), ['tool', 'assistant']);
  });

  it('ends a failed run with a notice and interrupts its unfinished tools', () => {
    seq = 0;
    const s = fold(start(), [ev('tool_call_started', { id: 't', name: 'x' }), ev('run_failed', { status: 'cancelled', error: 'cancelled' })]);
    assert.deepEqual(kinds(s), ['tool:t:interrupted', 'notice']);
    assert.equal(s.items[1].key, 'noticeRunCancelled');
    assert.equal(s.activeRunId, null);
  });

  it('shows a final answer that was never streamed', () => {
    seq = 0;
    const s = fold(start(), [ev('run_finished', { text: 'resumed answer', status: 'finished' })]);
    assert.equal(s.items[0].text, 'resumed answer');
  });

  it('shows the user message at once', () => {
    const s = addUserMessage(emptyConversation(), 'hi', 'local:1');
    assert.deepEqual(s.items, [{ kind: 'user', id: 'local:1', runId: null, text: 'hi' }]);
  });
});

const stored = {
  conversation: { id: C, title: 'T', tab_id: 4, origin: 'https://shop.example' },
  messages: [
    { ordinal: 1, role: 'user', content: 'earlier', run_id: 'r0' },
    { ordinal: 2, role: 'assistant', content: 'earlier answer', run_id: 'r0' },
    { ordinal: 3, role: 'user', content: 'now', run_id: R },
    { ordinal: 4, role: 'assistant', content: 'Let me check.', run_id: R, tool_calls: [{ id: 'c1', name: 'web_fetch', arguments: { url: 'https://a.example' } }] },
    { ordinal: 5, role: 'tool', tool_call_id: 'c1', content: '{"success":true,"result":{"status":200}}', run_id: R },
  ],
  runs: [{ id: 'r0', status: 'finished' }, { id: R, status: 'running' }],
  tasks: [{ id: 't1', subject: 'Look', status: 'in_progress' }],
  active_run_id: R,
};

describe('catching up', () => {
  it('draws stored history: messages, tool calls with their results, tasks', () => {
    const s = fromHistory({ ...stored, active_run_id: undefined });
    assert.deepEqual(kinds(s), ['user', 'assistant', 'user', 'assistant', 'tool:c1:ok']);
    assert.deepEqual(s.items[4].result, { success: true, result: { status: 200 } });
    assert.equal(s.tasks[0].status, 'in_progress');
    assert.equal(s.activeRunId, null);
  });

  it('replays the whole active run from the service worker without drawing it twice', () => {
    const events = script();
    const live = events.slice(0, 6); // the panel reopened after the 6th event
    const s = catchUp(stored, live);
    assert.deepEqual(kinds(s), ['user', 'assistant', 'user', 'assistant', 'tool:c1:ok', 'tool:c2:running']);
    assert.equal(s.activeRunId, R);
    // then the live events go on, duplicates of the replay included
    const after = fold(s, events.slice(4));
    assert.deepEqual(kinds(after), ['user', 'assistant', 'user', 'assistant', 'tool:c1:ok', 'tool:c2:failed', 'assistant']);
    assert.equal(after.activeRunId, null);
  });

  it('keeps stored history when the kept events start late (the worker restarted)', () => {
    const events = script();
    const s = catchUp(stored, events.slice(5, 7));
    assert.deepEqual(kinds(s), ['user', 'assistant', 'user', 'assistant', 'tool:c1:ok', 'tool:c2:running']);
    assert.equal(s.items.at(-1).waiting, 'confirm');
    assert.equal(s.runs[R].gap, true);
  });

  it('without any kept events, waits for live ones after the stored state', () => {
    const s = catchUp(stored, []);
    assert.equal(s.activeRunId, R);
    assert.equal(s.runs[R].gap, true);
    seq = 20;
    // seq 21 with nothing known before it: applied at once, the baseline from then on
    let next = applyEvent(s, ev('text_delta', { text: 'more' }));
    assert.equal(next.items.at(-1).text, 'more');
    next = applyEvent(next, { type: 'text_delta', run_id: R, conversation_id: C, seq: 21, text: 'dup' });
    assert.equal(next.items.at(-1).text, 'more');
    next = applyEvent(next, ev('run_finished', { status: 'finished' }));
    assert.equal(next.activeRunId, null);
  });
});

describe('side panel view helpers', () => {
  it('counts down from when the host asked', () => {
    assert.equal(remainingMs(1000, 60_000, 31_000), 30_000);
    assert.equal(remainingMs(1000, 60_000, 99_000), 0);
    assert.equal(remainingMs(1000, 0, 5), null);
    assert.equal(formatCountdown(30_000), '0:30');
    assert.equal(formatCountdown(89_001), '1:30');
    assert.equal(formatCountdown(3_600_000), '1:00:00');
    assert.equal(formatCountdown(0), '0:00');
    assert.equal(remainingFraction(0, 1000, 250), 0.75);
  });

  it('orders conversations newest first, stably', () => {
    const list = [
      { id: 'b', updated_at: '2026-01-01T00:00:00Z' },
      { id: 'a', updated_at: '2026-01-01T00:00:00Z' },
      { id: 'c', updated_at: '2026-02-01T00:00:00Z' },
      { id: 'd' },
    ];
    assert.deepEqual(sortConversations(list).map((c) => c.id), ['c', 'a', 'b', 'd']);
    assert.deepEqual(upsertConversation(list, { id: 'd', updated_at: '2026-03-01T00:00:00Z' }).map((c) => c.id), ['d', 'c', 'a', 'b']);
  });

  it('shows web origins only', () => {
    assert.equal(tabOrigin('https://shop.example/cart?x=1'), 'https://shop.example');
    assert.equal(tabOrigin('chrome://extensions'), '');
    assert.equal(tabOrigin('not a url'), '');
  });

  it('builds ask_user answers for free text, one choice, several', () => {
    assert.deepEqual(askAnswer({ question: 'q' }, { text: 'hello' }), { answer: 'hello' });
    assert.deepEqual(askAnswer({ options: ['a', 'b'] }, { selected: ['b'] }), { answer: 'b' });
    assert.deepEqual(askAnswer({ options: ['a', 'b'] }, { selected: [] }), { answer: null, reason: 'no_choice' });
    assert.deepEqual(askAnswer({ options: ['a', 'b', 'c'], multiple: true }, { selected: ['c', 'a', 'zzz'] }), { answer: ['a', 'c'] });
  });

  it('reads diagnostics records: tools sent, held back, usage, latency', () => {
    const d = diagnosticsRun({
      run: { id: R },
      model_calls: [
        { id: 2, ordinal: 1, purpose: 'turn', model: 'm', latency_ms: 30, input_tokens: 5, output_tokens: 1, request: { messages: [{ role: 'user' }], tools: [], unavailable: [] }, response: { text: 'b' }, attempts: [] },
        {
          id: 1, ordinal: 0, purpose: 'turn', model: 'm', latency_ms: 20, input_tokens: 10, output_tokens: 2,
          request: JSON.stringify({ system: 'sys', messages: [], tools: [{ name: 'web_fetch', description: 'd', parameters: { type: 'object' } }], unavailable: [{ name: 'click', reason: 'no browser' }] }),
          response: JSON.stringify({ text: 'a' }), attempts: JSON.stringify([{ status: 429 }, { status: 200 }]),
        },
      ],
    });
    assert.deepEqual(d.calls.map((c) => c.id), [1, 2]);
    assert.equal(d.calls[0].tools[0].name, 'web_fetch');
    assert.deepEqual(d.calls[0].unavailable, [{ name: 'click', reason: 'no browser' }]);
    assert.equal(d.calls[0].system, 'sys');
    assert.equal(d.calls[0].attempts.length, 2);
    assert.deepEqual(d.totals, { inputTokens: 15, outputTokens: 3, latencyMs: 50 });
  });
});

describe('tokens shown in the panel', () => {
  it('counts the last run and the whole conversation, sub-agents and failed runs included', () => {
    const stored = {
      conversation: { id: C },
      messages: [],
      runs: [
        { id: 'old', status: 'completed', input_tokens: 100, output_tokens: 20 },
        { id: 'sub', parent_run_id: 'old', status: 'completed', input_tokens: 7, output_tokens: 3 },
        { id: 'failed', status: 'failed', input_tokens: 30, output_tokens: 0 },
      ],
    };
    let s = fromHistory(stored);
    assert.deepEqual(usageTotals(s), { run: { tokens: 30, input: 30, output: 0 }, conversation: 160 });
    // A new run: unknown until it ends, then it is the last run.
    s = runStarted(s, { conversation_id: C, run_id: R });
    assert.equal(usageTotals(s).run.tokens, 30);
    seq = 0;
    s = applyEvent(s, ev('run_started'));
    s = applyEvent(s, ev('sub_agent_event', { parent_call_id: 'c9', event: { type: 'run_finished', run_id: 'sub2', status: 'completed', usage: { input_tokens: 4, output_tokens: 1 } } }));
    s = applyEvent(s, ev('run_failed', { status: 'failed', error: 'the run used 45 tokens', usage: { input_tokens: 40, output_tokens: 5 } }));
    assert.deepEqual(usageTotals(s), { run: { tokens: 45, input: 40, output: 5 }, conversation: 210 });
  });

  it('shows nothing before any run reported', () => {
    assert.deepEqual(usageTotals(emptyConversation({ id: C })), { run: null, conversation: 0 });
  });
});

describe('confirmation records', () => {
  it('keep what was asked and the answer, live and from history', () => {
    const confirmation = { message: 'Add a todo?', origin: 'http://127.0.0.1:1', answer: 'timeout', timeout_ms: 300000, waited_ms: 300000 };
    seq = 0;
    let live = applyEvent(emptyConversation({ id: C }), ev('tool_call_started', { id: 'c1', name: 'add_task', arguments: { text: 'x' } }));
    live = applyEvent(live, ev('tool_call_finished', { id: 'c1', name: 'add_task', result: { success: false, code: 'CONFIRM_TIMEOUT', reason: 'no answer', confirmation }, code: 'CONFIRM_TIMEOUT' }));
    assert.deepEqual(live.items[0].result.confirmation, confirmation);
    const stored = fromHistory({
      conversation: { id: C },
      messages: [
        { ordinal: 1, role: 'assistant', run_id: R, tool_calls: [{ id: 'c1', name: 'add_task', arguments: { text: 'x' } }] },
        { ordinal: 2, role: 'tool', run_id: R, tool_call_id: 'c1', content: JSON.stringify({ success: false, code: 'CONFIRM_TIMEOUT', reason: 'no answer', confirmation }) },
      ],
      runs: [{ id: R, status: 'completed' }],
    });
    assert.deepEqual(stored.items[0].result.confirmation, confirmation);
    assert.equal(stored.items[0].status, 'failed');
  });
});

describe('a budget that ended a run', () => {
  it('becomes a notice of its own, with the numbers, not the host English', () => {
    seq = 0;
    let s = applyEvent(emptyConversation({ id: C }), ev('run_started'));
    s = applyEvent(s, ev('run_failed', {
      status: 'failed', error: 'the run used 45 tokens, its budget of 40', usage: { input_tokens: 40, output_tokens: 5 },
      budget: { kind: 'tokens', setting: 'agent.max_tokens_per_run', used: 45, limit: 40 },
    }));
    const notice = s.items.find((it) => it.kind === 'notice');
    assert.equal(notice.key, 'noticeBudgetTokens');
    assert.deepEqual(notice.args, ['45', '40', 'agent.max_tokens_per_run']);
    assert.equal(s.activeRunId, null);
    seq = 0;
    let c = applyEvent(emptyConversation({ id: C }), ev('run_started'));
    c = applyEvent(c, ev('run_failed', { status: 'failed', error: 'cap', budget: { kind: 'tool_calls', setting: 'agent.max_tool_calls', used: 200, limit: 200 } }));
    assert.deepEqual(c.items.find((it) => it.kind === 'notice').args, ['200', 'agent.max_tool_calls']);
  });
});
