// Reassembly of "$/chunk" frames (protocol/PROTOCOL.md, "Chunk frames"). The
// host splits any message over Chrome's 1 MiB frame limit; this puts it back
// together or drops it whole. Half a message is never delivered.

export const CHUNK_METHOD = '$/chunk';
export const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
export const CHUNK_TIMEOUT_MS = 30_000;

/**
 * @param {object} opts
 * @param {(message: any) => void} opts.onMessage  receives each reassembled, parsed message
 */
export function createChunkAssembler({
  onMessage,
  timers = globalThis,
  logger = console,
  maxBytes = MAX_MESSAGE_BYTES,
  timeoutMs = CHUNK_TIMEOUT_MS,
}) {
  // id → { count, parts: Map<index, data>, bytes, timer } while receiving,
  // or { dropped: true, timer } after a drop: the tombstone swallows the rest
  // of a broken sequence instead of starting a buffer that could only time out.
  const sequences = new Map();

  function drop(id, why) {
    const seq = sequences.get(id);
    if (seq) timers.clearTimeout(seq.timer);
    logger.error(`ferry: dropped chunked message ${JSON.stringify(id)}: ${why}`);
    const timer = timers.setTimeout(() => sequences.delete(id), timeoutMs);
    sequences.set(id, { dropped: true, timer });
  }

  function accept(params) {
    const id = params?.id;
    if (typeof id !== 'string' || id === '') {
      logger.error('ferry: chunk frame without a string id; ignored');
      return;
    }
    let seq = sequences.get(id);
    if (seq?.dropped) return;
    const { index, count, data } = params;
    if (!Number.isInteger(count) || count < 2) return drop(id, `invalid count ${JSON.stringify(count)}`);
    if (typeof data !== 'string') return drop(id, 'data is not a string');
    if (!seq) {
      seq = { count, parts: new Map(), bytes: 0, timer: null };
      seq.timer = timers.setTimeout(() => drop(id, `incomplete after ${timeoutMs} ms`), timeoutMs);
      sequences.set(id, seq);
    } else if (seq.count !== count) {
      return drop(id, `count changed from ${seq.count} to ${count}`);
    }
    if (!Number.isInteger(index) || index < 0 || index >= count) {
      return drop(id, `index ${JSON.stringify(index)} out of range 0..${count - 1}`);
    }
    if (seq.parts.has(index)) return drop(id, `index ${index} repeated`);
    seq.parts.set(index, data);
    seq.bytes += utf8Length(data);
    if (seq.bytes > maxBytes) return drop(id, `larger than ${maxBytes} bytes`);
    if (seq.parts.size < count) return;

    timers.clearTimeout(seq.timer);
    sequences.delete(id);
    let text = '';
    for (let i = 0; i < count; i++) text += seq.parts.get(i);
    let message;
    try {
      message = JSON.parse(text);
    } catch (err) {
      logger.error(`ferry: dropped chunked message ${JSON.stringify(id)}: reassembled text is not JSON (${err.message})`);
      return;
    }
    onMessage(message);
  }

  /** Forgets every sequence: ids are only unique within one connection. */
  function reset() {
    for (const seq of sequences.values()) timers.clearTimeout(seq.timer);
    sequences.clear();
  }

  return {
    accept,
    reset,
    /** Sequences being received or tombstoned; for tests and diagnostics. */
    get size() {
      return sequences.size;
    },
  };
}

/** UTF-8 byte length of a JS string without allocating an encoded copy. */
export function utf8Length(s) {
  let bytes = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}
