// Response bodies streaming through the proxy in bulk, announced on a diagnostics channel for
// whoever tunes this process's heap (the CLI: cli-run.ts). Every chunk node reads for such a body
// is a buffer outside the V8 heap, and V8 counts those against the old generation's limit until a
// scavenge frees them; a process nobody subscribes in (an embedder's) is not affected.

import { channel, subscribe, unsubscribe } from 'node:diagnostics_channel';
import { finished, type Readable } from 'node:stream';

const BULK_BODIES = 'srt:proxy-bulk-bodies';
const bulkBodies = channel(BULK_BODIES);

/** A body that has streamed this many bytes is bulk. */
const BULK_BYTES = 1 << 20;

let streaming = 0;

/** A counter of `body`'s bytes (call it with each chunk's length): past BULK_BYTES the body is
 *  bulk until it ends, fails or is destroyed. */
export function bulkCounter(body: Readable): (bytes: number) => void {
  let seen = 0;
  return (bytes) => {
    if (seen >= BULK_BYTES) return;
    seen += bytes;
    if (seen < BULK_BYTES) return;
    if (streaming++ === 0) bulkBodies.publish(true);
    finished(body, () => {
      if (--streaming === 0) bulkBodies.publish(false);
    });
  };
}

/** `listener(true)` when a first body turns bulk, `listener(false)` when the last one has ended or
 *  failed; returns the unsubscription. */
export function onBulkBodies(listener: (streaming: boolean) => void): () => void {
  const heard = (streaming: unknown) => listener(streaming === true);
  subscribe(BULK_BODIES, heard);
  return () => unsubscribe(BULK_BODIES, heard);
}
