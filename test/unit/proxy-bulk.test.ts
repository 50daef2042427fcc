// Bodies that stream through the proxy in bulk: announced once the first crosses 1 MiB, and
// again when the last has ended, failed or been destroyed.
import { describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import { setImmediate as tick } from 'node:timers/promises';
import { bulkCounter, onBulkBodies } from '../../src/proxy/bulk.js';

const MiB = 1 << 20;

function heard(): { events: boolean[]; stop: () => void } {
  const events: boolean[] = [];
  return { events, stop: onBulkBodies((s) => events.push(s)) };
}

describe('bulk bodies', () => {
  it('says nothing for bodies under 1 MiB', async () => {
    const h = heard();
    const body = new PassThrough();
    const count = bulkCounter(body);
    count(MiB - 1);
    body.resume();
    body.end();
    await tick();
    h.stop();
    expect(h.events).toEqual([]);
  });

  it('is bulk from the first body past 1 MiB until the last one is done, however it ends', async () => {
    const h = heard();
    const a = new PassThrough();
    const b = new PassThrough();
    const countA = bulkCounter(a);
    const countB = bulkCounter(b);
    countA(MiB / 2);
    countA(MiB / 2);
    countA(MiB); // counted once
    countB(2 * MiB);
    expect(h.events).toEqual([true]);
    a.resume();
    a.end();
    await tick();
    expect(h.events).toEqual([true]);
    b.destroy(new Error('client went away'));
    await tick();
    h.stop();
    expect(h.events).toEqual([true, false]);
  });

  it('stops telling a listener once it unsubscribed', async () => {
    const h = heard();
    h.stop();
    const body = new PassThrough();
    bulkCounter(body)(MiB);
    body.destroy();
    await tick();
    expect(h.events).toEqual([]);
  });
});
