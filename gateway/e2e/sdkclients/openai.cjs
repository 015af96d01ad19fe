'use strict';
// The OpenAI SDK as a client of the gateway: each case does what an application
// does with the SDK and reports what the SDK gave back, as the SDK gave it.
const { OpenAI, APIError } = require('openai');
const { VERSION } = require('openai/version');

function client(a, ctx) {
  return new OpenAI({
    apiKey: a.token,
    baseURL: a.base_url + '/v1',
    maxRetries: a.max_retries ?? 2,
    timeout: 60_000,
    fetch: ctx.fetch,
    // An application's own organization and project: the gateway's key belongs to
    // the gateway's, so these must not reach the vendor.
    organization: a.organization ?? null,
    project: a.project ?? null,
    defaultHeaders: a.trace ? { 'X-Ferry-Trace-Id': a.trace } : {},
  });
}

// chat runs one chat completion, whole or streamed, and gathers the answer the
// way an application reads it: text, tool calls, finish reason, usage.
async function chat(c, params, ctx) {
  if (!params.stream) {
    const { data, request_id } = await c.chat.completions.create(params).withResponse();
    const m = data.choices[0].message;
    return {
      text: m.content ?? '',
      tool_calls: (m.tool_calls || []).map((t) => ({ id: t.id, name: t.function.name, arguments: t.function.arguments })),
      stop: data.choices[0].finish_reason,
      usage: data.usage ?? null,
      request_id,
      message: m,
    };
  }
  const { data: stream, request_id } = await c.chat.completions.create(params).withResponse();
  const out = ctx.partial;
  Object.assign(out, { text: '', tool_calls: [], stop: null, usage: null, request_id, chunks: 0 });
  for await (const chunk of stream) {
    out.chunks++;
    if (chunk.usage) out.usage = chunk.usage;
    for (const ch of chunk.choices) {
      if (ch.delta.content) out.text += ch.delta.content;
      for (const t of ch.delta.tool_calls || []) {
        const call = (out.tool_calls[t.index] ??= { id: '', name: '', arguments: '' });
        if (t.id) call.id = t.id;
        if (t.function?.name) call.name += t.function.name;
        if (t.function?.arguments) call.arguments += t.function.arguments;
      }
      if (ch.finish_reason) out.stop = ch.finish_reason;
    }
  }
  const message = { role: 'assistant', content: out.text || null };
  if (out.tool_calls.length) {
    message.tool_calls = out.tool_calls.map((t) => ({ id: t.id, type: 'function', function: { name: t.name, arguments: t.arguments } }));
  }
  return { ...out, message };
}

const cases = {
  async chat(a, ctx) {
    const { message, ...out } = await chat(client(a, ctx), a.params, ctx);
    return out;
  },

  // tools: the model calls tools; the application runs them and sends the
  // results back in a second turn, built from the message the SDK returned.
  async tools(a, ctx) {
    const c = client(a, ctx);
    const messages = [...a.params.messages];
    const first = await chat(c, { ...a.params, messages }, ctx);
    messages.push(first.message);
    for (const t of first.tool_calls) {
      messages.push({ role: 'tool', tool_call_id: t.id, content: a.results[t.name] ?? 'no such tool' });
    }
    const second = await chat(c, { ...a.params, stream: false, messages }, ctx);
    delete first.message;
    delete second.message;
    return { turns: [first, second] };
  },
};

module.exports = { version: VERSION, APIError, client, cases };
