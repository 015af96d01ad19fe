import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PINNED_EXTENSION_ID, displayState, formatBytes, helpSteps, installCommand } from '../options/status-view.js';

const t = (key) => `<${key}>`;
const down = (reason, message = `m:${reason}`) => ({ state: 'disconnected', lastError: { reason, message }, hostInfo: null });
const commands = (steps) => steps.filter((s) => s.command).map((s) => s.command);

describe('options status view', () => {
  it('maps client snapshots to data-state values', () => {
    const cases = [
      [{ state: 'connected' }, 'connected'],
      [{ state: 'connecting', lastError: { reason: 'exited' } }, 'connecting'],
      [{ state: 'incompatible' }, 'incompatible'],
      [{ state: 'disconnected', lastError: null }, 'disconnected'],
      [down('disconnected'), 'disconnected'],
      [down('not_installed'), 'not_installed'],
      [down('forbidden'), 'forbidden'],
      [down('exited'), 'error'],
      [down('protocol_error'), 'error'],
      [down('hello_timeout'), 'error'],
      [undefined, 'disconnected'],
    ];
    for (const [snap, shown] of cases) assert.equal(displayState(snap), shown, JSON.stringify(snap));
  });

  it('tells a missing host to run ferry install, naming a non-pinned ID', () => {
    assert.deepEqual(commands(helpSteps(down('not_installed'), PINNED_EXTENSION_ID, t)), ['ferry install', 'ferry doctor']);
    const other = 'abcdefghijklmnopabcdefghijklmnop';
    const steps = helpSteps(down('not_installed'), other, t);
    assert.deepEqual(commands(steps), [`ferry install --extension-id ${other}`, 'ferry doctor']);
    assert.equal(steps[0].text, '<helpNotInstalledCustomId>');
    assert.equal(installCommand(PINNED_EXTENSION_ID), 'ferry install');
  });

  it('tells a forbidden host to run ferry doctor first', () => {
    assert.deepEqual(commands(helpSteps(down('forbidden'), PINNED_EXTENSION_ID, t)), ['ferry doctor', 'ferry install']);
  });

  it('shows the host\'s own words when incompatible', () => {
    const steps = helpSteps({ state: 'incompatible', lastError: { reason: 'incompatible', message: 'update the extension' } }, PINNED_EXTENSION_ID, t);
    assert.deepEqual(steps, [{ text: '<helpIncompatible>', detail: 'update the extension' }]);
  });

  it('shows nothing to do while connected or connecting', () => {
    assert.deepEqual(helpSteps({ state: 'connected' }, PINNED_EXTENSION_ID, t), []);
    assert.deepEqual(helpSteps({ state: 'connecting' }, PINNED_EXTENSION_ID, t), []);
  });

  it('formats sizes with binary units', () => {
    assert.equal(formatBytes(512, 'en'), '512 bytes');
    assert.equal(formatBytes(1536, 'en'), '1.5 kB');
    assert.equal(formatBytes(5 * 1024 * 1024, 'en'), '5 MB');
    assert.equal(formatBytes(undefined, 'en'), '');
  });
});
