'use strict';
// The Anthropic SDK as a client of the gateway: each case does what an
// application does with the SDK and reports what the SDK gave back.
const { Anthropic, APIError } = require('@anthropic-ai/sdk');
const { VERSION } = require('@anthropic-ai/sdk/version');

function client(a, ctx) {
  return new Anthropic({
    apiKey: a.token,
    authToken: null,
    baseURL: a.base_url,
    maxRetries: a.max_retries ?? 2,
    timeout: 60_000,
    fetch: ctx.fetch,
    defaultHeaders: a.trace ? { 'X-Ferry-Trace-Id': a.trace } : {},
  });
}

function summary(msg, request_id) {
  return {
    text: msg.content.filter((b) => b.type === 'text').map((b) => b.text).join(''),
    tool_calls: msg.content.filter((b) => b.type === 'tool_use').map((b) => ({ id: b.id, name: b.name, arguments: JSON.stringify(b.input) })),
    stop: msg.stop_reason,
    usage: msg.usage,
    request_id,
  };
}

// message runs one request: whole (create), streamed with the SDK's helper
// (stream: its events and final message), or streamed raw (create with stream:
// true, the events as the SDK yields them).
async function message(c, allParams, mode, ctx) {
  const { stream: _, ...params } = allParams;
  if (mode === 'raw') {
    const { data: stream, request_id } = await c.messages.create({ ...params, stream: true }).withResponse();
    const out = ctx.partial;
    Object.assign(out, { text: '', tool_calls: [], stop: null, usage: {}, request_id, events: [] });
    for await (const ev of stream) {
      out.events.push(ev.type);
      if (ev.type === 'message_start') Object.assign(out.usage, ev.message.usage);
      if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') out.text += ev.delta.text;
      if (ev.type === 'message_delta') {
        Object.assign(out.usage, ev.usage);
        out.stop = ev.delta.stop_reason;
      }
    }
    return { ...out };
  }
  if (mode === 'stream') {
    const stream = c.messages.stream(params);
    const events = [];
    stream.on('streamEvent', (ev) => events.push(ev.type));
    stream.on('text', (t) => {
      ctx.partial.text = (ctx.partial.text ?? '') + t;
    });
    const msg = await stream.finalMessage();
    return { ...summary(msg, stream.request_id), events, content: msg.content };
  }
  const { data, request_id } = await c.messages.create(params).withResponse();
  return { ...summary(data, request_id), content: data.content };
}

const cases = {
  async messages(a, ctx) {
    const { content, ...out } = await message(client(a, ctx), a.params, a.mode, ctx);
    return out;
  },

  // tools: the model asks for tools; the application answers every tool_use with
  // a tool_result in the next user turn, after the assistant turn as the SDK
  // returned it.
  async tools(a, ctx) {
    const c = client(a, ctx);
    const messages = [...a.params.messages];
    const first = await message(c, { ...a.params, messages }, a.mode, ctx);
    messages.push({ role: 'assistant', content: first.content });
    messages.push({
      role: 'user',
      content: first.tool_calls.map((t) => ({ type: 'tool_result', tool_use_id: t.id, content: a.results[t.name] ?? 'no such tool' })),
    });
    const second = await message(c, { ...a.params, messages }, 'whole', ctx);
    delete first.content;
    delete second.content;
    return { turns: [first, second] };
  },
};

module.exports = { version: VERSION, APIError, client, cases };
