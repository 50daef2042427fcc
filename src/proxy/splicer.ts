// Long opaque tunnels leave node: once a tunnel with nothing left to inspect (its host allowed,
// its ClientHello checked, not terminated, no stage guarding its bytes) has carried `afterBytes`,
// its two sockets go to `srt-init --splice` (init/splice.c), a splice(2) loop outside the
// sandbox, so bulk bytes stop being copied through node's one thread. Node can give a child
// sockets only when it spawns it, so each such tunnel costs a spawn: short ones stay in node,
// and at most `max` are handed over at once (the rest stay in node too).
// The hand-over keeps the byte order: both directions stop (paused, unpiped), what node still has
// to write is flushed, and in one synchronous step the child is spawned with the sockets, what
// node had read but not passed on is taken out for the child to send first, and node closes its
// copies (a close, not a shutdown: the child holds them). If the spawn fails, node carries on.
// The child dies with srt (PR_SET_PDEATHSIG) and is killed when the proxy closes (the run's end).

import { spawn, type ChildProcess } from 'node:child_process';
import { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

export interface SplicerOptions {
  /** srt-init. */
  helperPath: string;
  /** Tunnels handed over at once (default 16). */
  max?: number;
  /** Bytes, both directions together, a tunnel carries in node first (default 4 MiB). */
  afterBytes?: number;
}

export class Splicers {
  private readonly live = new Set<ChildProcess>();
  private closed = false;
  private readonly max: number;
  private readonly afterBytes: number;

  constructor(
    private readonly opts: SplicerOptions,
    private readonly log: (line: string) => void,
  ) {
    this.max = opts.max ?? 16;
    this.afterBytes = opts.afterBytes ?? 4 * 1024 * 1024;
  }

  /**
   * Count what the relayed tunnel a⇄b moves; past `afterBytes`, `detach` (unpipe both ways and
   * drop the relay's listeners) and hand the sockets over if a slot is free. `relay` starts
   * node's relaying again when the hand-over cannot go on.
   */
  watch(a: Duplex, b: Duplex, label: string, detach: () => void, relay: () => void): void {
    if (!handOverable(a) || !handOverable(b)) return;
    let moved = 0;
    const count = (chunk: Buffer) => {
      moved += chunk.length;
      if (moved < this.afterBytes || this.closed || this.live.size >= this.max) return;
      a.off('data', count);
      b.off('data', count);
      if (a.readableEnded || b.readableEnded || a.writableEnded || b.writableEnded) return; // half-closed: stays
      detach();
      this.handOver(a, b, label, relay);
    };
    a.on('data', count);
    b.on('data', count);
  }

  private handOver(a: Socket, b: Socket, label: string, relay: () => void): void {
    a.pause();
    b.pause();
    const sides = [a, b];
    let failed = false;
    const fail = () => {
      failed = true;
      unlisten();
      a.destroy();
      b.destroy();
    };
    const unlisten = () => {
      for (const s of sides) s.off('error', fail).off('close', fail);
    };
    for (const s of sides) s.on('error', fail).on('close', fail);
    // An empty write's callback runs once everything written before it has reached the kernel
    // ('drain' comes only after a write that filled the buffer).
    const flushed = (s: Socket) => new Promise<void>((resolve) => (s.writableLength === 0 ? resolve() : s.write(EMPTY, () => resolve())));
    const ready = () => {
      if (failed) return;
      if (sides.some((s) => s.writableLength > 0)) return void Promise.all(sides.map(flushed)).then(ready);
      unlisten();
      if (this.closed || sides.some((s) => s.destroyed || s.readableEnded || s.writableEnded)) return fail();
      // From here to the end of this function nothing can read or write the sockets in node.
      const early = sides.map(takeBuffered);
      let child: ChildProcess | undefined;
      try {
        child = spawn(this.opts.helperPath, ['--splice', String(process.pid)], { stdio: ['pipe', 'ignore', 'ignore', a, b] });
      } catch {
        child = undefined;
      }
      if (child?.pid === undefined) {
        child?.on('error', () => undefined);
        this.log(`proxy: ${label}: cannot start srt-init --splice; the tunnel stays in srt`);
        // Node carries the tunnel on; what it had read goes out first, as it would have.
        if (early[0]!.length) b.write(early[0]);
        if (early[1]!.length) a.write(early[1]);
        relay();
        a.resume();
        b.resume();
        return;
      }
      this.log(`proxy: ${label}: handed to srt-init --splice (pid ${child.pid})`);
      this.live.add(child);
      child.once('exit', () => this.live.delete(child));
      child.on('error', () => undefined);
      const head = Buffer.alloc(8);
      head.writeUInt32LE(early[0]!.length, 0);
      head.writeUInt32LE(early[1]!.length, 4);
      child.stdin!.on('error', () => undefined); // the child gone: so is the tunnel
      child.stdin!.end(Buffer.concat([head, early[0]!, early[1]!]));
      a.destroy();
      b.destroy();
    };
    ready();
  }

  /** Kill every handed-over tunnel (a command's end) and wait until each child has exited. */
  async killAll(): Promise<void> {
    await Promise.all(
      [...this.live].map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null || c.signalCode !== null) return resolve();
            c.once('exit', () => resolve());
            c.kill('SIGKILL');
          }),
      ),
    );
  }

  /** No more hand-overs; kill every handed-over tunnel and wait for it (the proxy closes). */
  async close(): Promise<void> {
    this.closed = true;
    await this.killAll();
  }
}

const EMPTY = Buffer.alloc(0);

/** A plain socket (not TLS: its bytes would be the wrong layer's) that node can pass on. */
function handOverable(s: Duplex): s is Socket {
  return s instanceof Socket && (s as Socket & { encrypted?: boolean }).encrypted !== true;
}

/** What a paused socket holds read but not yet consumed. */
function takeBuffered(s: Socket): Buffer {
  const chunks: Buffer[] = [];
  for (let c: Buffer | null; (c = s.read() as Buffer | null) !== null; ) chunks.push(c);
  return Buffer.concat(chunks);
}
