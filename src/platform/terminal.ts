// The user's terminal while the command runs on its own pseudo-terminal inside the sandbox
// (SPEC §4 Terminal). The pty and its relay live in srt-init (init/pty.c); srt owns
// the user's side: output out, window size and job control, and when stdin is the terminal raw
// mode and keystrokes in. Whenever any of srt's stdio is a terminal the command runs on a pty:
// no descriptor of the user's terminal enters the sandbox, since even a write-only one can be
// reopened for reading through /proc/self/fd and takes terminal ioctls (TIOCEXCL, TCSETS, …).
//
// srt is the only process that reads the user's terminal, and it is an ordinary member of the
// shell's job, so the kernel's job control applies to it: it reads only while it is the
// terminal's foreground process group. When the command stops by itself (Ctrl-Z on a
// non-interactive command), srt restores the terminal and stops itself with the same signal (as
// sudo does with use_pty); `fg` continues srt, raw mode and the command. While srt is stopped the
// whole sandbox is frozen: a SIGTSTP it gets from outside freezes it and stops srt; a SIGSTOP,
// which srt cannot catch, the helper notices on its own (it watches srt's /proc/PID/stat). With
// keystrokes to relay srt never runs in the background: a SIGCONT that finds it there (`bg`), or
// a start there (`&`), freezes the sandbox and stops srt again until it is in the foreground.
//
// Output only (stdin is no terminal: `srt -- cmd < /dev/null &`, `echo x | srt -- cmd`): srt
// never reads the terminal nor changes its modes, so it runs in the background like any program
// that only writes, and Ctrl-C/Ctrl-Z on the user's terminal signal srt as before (it forwards
// SIGINT, freezes on SIGTSTP). The pty does no output processing; the user's terminal does it,
// once. The window size follows by SIGWINCH in the foreground and by polling in the background
// (no SIGWINCH reaches a background job).
//
// Frames on the channel (both ways): TYPE (1 byte), LENGTH (4 bytes, little-endian), LENGTH bytes.
//   srt → helper: S setup "ROWS COLS STTY-G" (first), D input, W window size (rows, cols: 2 bytes
//                 each), F freeze, C continue.   helper → srt: D output, T the command stopped (signal).

import { execFileSync } from 'node:child_process';
import type { ChildProcess, StdioOptions } from 'node:child_process';
import { closeSync, constants, existsSync, fstatSync, openSync, readFileSync } from 'node:fs';
import { once } from 'node:events';
import { constants as osConstants } from 'node:os';
import type { Duplex, Readable } from 'node:stream';
import { isatty, WriteStream, type ReadStream } from 'node:tty';

/** The helper's descriptors in bwrap's child (after the JSON status on fd 3). */
export const TERMINAL_CHANNEL_FD = 4;
export const PARENT_STAT_FD = 5;

const FRAME_HEADER = 5;
const FRAME_MAX = 65536;
const STTY = ['/usr/bin/stty', '/bin/stty'];
const STDIN_TERMINAL = '/proc/self/fd/0';
/** Output only, no SIGWINCH reaches srt in the background: how often it looks at the size. */
const SIZE_POLL_MS = 500;
/** How much of the command's last output srt keeps to tell where it left the cursor. */
const TAIL_BYTES = 256;

/** The device of a terminal on `fd`, undefined when it is none. */
function terminalDevice(fd: number): number | undefined {
  try {
    return isatty(fd) ? fstatSync(fd).rdev : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Which of srt's stdio the command gets on its pty, as the helper's `--pty` spelling (`012`, `12`,
 * …), or undefined when none is a terminal: then stdio passes through unchanged. The pty stands
 * for one terminal: stdin's when it is one (keystrokes are relayed), else stdout's or stderr's
 * (output only); the descriptors on that terminal go to the pty. A file or pipe is passed through
 * as is, as sudo does; a second, other terminal is relayed through a pipe (spawnStdio).
 */
export function terminalStdio(): string | undefined {
  const devices = [0, 1, 2].map(terminalDevice);
  const main = devices.findIndex((d) => d !== undefined);
  if (main < 0) return undefined;
  const stdio = [0, 1, 2].filter((fd) => devices[fd] === devices[main]).join('');
  // Only stdin is a terminal: the pty's echo goes to it through a second, write-only descriptor.
  if (stdio === '0') {
    try {
      closeSync(openSync(STDIN_TERMINAL, constants.O_WRONLY | constants.O_NOCTTY));
    } catch {
      return undefined;
    }
  }
  return stdio;
}

/**
 * For srt's last moment: Node, when it exits, puts every terminal on stdio back into the modes
 * it had when Node started — from the background too, where the shell has set its own since (its
 * prompt's), so `srt … &` would leave stale modes behind. srt restores what it changed itself
 * (raw mode: Terminal.close(), in the foreground) and, once it has said everything, moves its
 * stdio off the terminal (/dev/null in its place), which Node then leaves alone.
 */
export function leaveTerminalModes(): void {
  process.on('exit', () => {
    for (const fd of [0, 1, 2]) {
      if (!isatty(fd)) continue;
      try {
        closeSync(fd);
        // The lowest free descriptor is `fd` itself (Node keeps 0-2 open).
        const got = openSync('/dev/null', 'r+');
        if (got !== fd) closeSync(got);
      } catch { /* exiting anyway */ }
    }
  });
}

/**
 * Whether output ending in `tail` left the cursor mid-line, as far as bytes tell: its last
 * character that moves the cursor is not a newline. Escape sequences (CSI, OSC, two-byte ESC x)
 * and bells move nothing here; a carriage return leaves the line's text behind, so it counts as
 * mid-line too. A cursor moved by an escape sequence cannot be followed: not mid-line.
 */
export function endsMidLine(tail: Uint8Array): boolean {
  let last: number | undefined;
  let state: 'text' | 'esc' | 'csi' | 'osc' | 'osc-esc' = 'text';
  for (const b of tail) {
    switch (state) {
      case 'text':
        if (b === 0x1b) state = 'esc';
        else if (b >= 0x20 || b === 0x0a || b === 0x0d || b === 0x08 || b === 0x09) last = b;
        break;
      case 'esc':
        state = b === 0x5b /* [ */ ? 'csi' : b === 0x5d /* ] */ ? 'osc' : 'text';
        break;
      case 'csi':
        if (b >= 0x40 && b <= 0x7e) state = 'text';
        break;
      case 'osc':
        if (b === 0x07) state = 'text';
        else if (b === 0x1b) state = 'osc-esc';
        break;
      case 'osc-esc':
        state = b === 0x5c /* backslash: ST */ ? 'text' : 'osc';
        break;
    }
  }
  return last !== undefined && last !== 0x0a;
}

function frame(type: string, payload: Uint8Array = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(FRAME_HEADER);
  head.write(type, 0, 'latin1');
  head.writeUInt32LE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

const SIGNAL_NAMES = new Map(Object.entries(osConstants.signals).map(([name, n]) => [n, name as NodeJS.Signals]));

/** Run stty on the user's terminal (on descriptor `fd`); undefined when it is missing or fails.
 *  Node has no termios API beyond raw mode on/off. */
function stty(fd: number, ...args: string[]): string | undefined {
  const path = STTY.find((p) => existsSync(p));
  if (!path) return undefined;
  try {
    return execFileSync(path, args, { stdio: [fd, 'pipe', 'ignore'], encoding: 'utf8', timeout: 5000 }).trim();
  } catch {
    return undefined;
  }
}

/** Signals whose listeners srt has (SIGHUP 1, SIGINT 2, SIGQUIT 3, SIGTERM 15): bits of ShdPnd. */
const LISTENED = (1n << 0n) | (1n << 1n) | (1n << 2n) | (1n << 14n);

/**
 * Calls `then` once every signal sent to srt so far has reached its JS listener: while one is still
 * pending in the kernel (no thread took it yet), look again shortly; once none is, a signal taken
 * by Node's handler is a byte in libuv's signal pipe, read in this turn of the event loop or the
 * next — so `then` runs after the next turn's poll phase (two setImmediate).
 */
function afterSignalsArrived(then: () => void): void {
  let pending = 0n;
  try {
    pending = BigInt(`0x${/^ShdPnd:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '0'}`);
  } catch { /* no /proc: as if none */ }
  if ((pending & LISTENED) !== 0n) {
    setTimeout(() => afterSignalsArrived(then), 1);
    return;
  }
  setImmediate(() => setImmediate(then));
}

export class Terminal {
  private readonly input = process.stdin as ReadStream;
  /** Keystrokes are relayed (stdin is the terminal); else output only. */
  private readonly relaysInput: boolean;
  /** A descriptor of srt's on the terminal the pty stands for, and that terminal's device. */
  private readonly fd: number;
  private readonly device: number;
  /** Where the command's terminal output goes: srt's stdout, else its stderr, else stdin's terminal. */
  private readonly output: WriteStream;
  private readonly ownOutputFd: number | undefined;
  private channel: Duplex | undefined;
  private setup = '';
  /** The window size the helper has (cols, rows). */
  private sent: [number, number] = [0, 0];
  private sizePoll: NodeJS.Timeout | undefined;
  private raw = false;
  private reading = false;
  /** Not reading the terminal: srt is stopped or, after a signal that ends it, in the background. */
  private suspended = false;
  /** srt got a signal that ends it: the sandbox runs (to act on it), and is not frozen for `bg`. */
  private ending = false;
  private closed = false;
  /** srt's SIGTSTP/SIGCONT/SIGWINCH listeners are on (from prepare() to close()). */
  private listening = false;
  private statFd: number | undefined;
  // Incoming frame state: a header being collected, then `remaining` payload bytes.
  private readonly header = Buffer.alloc(FRAME_HEADER);
  private headerLen = 0;
  private type = 0;
  private remaining = 0;
  private control: Buffer[] = [];
  /** The last bytes of the command's output on the terminal srt's stderr is on (srt's own lines
   *  after the run follow them), when it is a terminal. */
  private tail: Buffer | undefined;
  private readonly stderrDevice = terminalDevice(2);
  private readonly outputOnStderr: boolean;

  private readonly onInput = (chunk: Buffer) => {
    for (let off = 0; off < chunk.length; off += FRAME_MAX) {
      if (!this.send('D', chunk.subarray(off, off + FRAME_MAX))) this.stopReading();
    }
  };
  /** The terminal hung up (EIO): srt gets SIGHUP too and passes it on; nothing more to read. */
  private readonly onInputError = () => this.stopReading();
  private readonly onTstp = () => { this.send('F'); this.suspend('SIGTSTP'); };
  private readonly onCont = () => this.continued();
  private readonly onWinch = () => this.sendSize();

  constructor(readonly stdio: string) {
    this.fd = Number(stdio[0]);
    this.relaysInput = this.fd === 0;
    this.device = fstatSync(this.fd).rdev;
    let outputFd: number;
    if (stdio.includes('1')) [this.output, outputFd] = [process.stdout as WriteStream, 1];
    else if (stdio.includes('2')) [this.output, outputFd] = [process.stderr as WriteStream, 2];
    else {
      // Only stdin is a terminal: echo and the command's terminal output still belong on it.
      this.ownOutputFd = outputFd = openSync(STDIN_TERMINAL, constants.O_WRONLY | constants.O_NOCTTY);
      this.output = new WriteStream(this.ownOutputFd);
    }
    if (this.stderrDevice !== undefined) this.tail = Buffer.alloc(0);
    this.outputOnStderr = this.onStderr(outputFd);
  }

  private onStderr(fd: number): boolean {
    return this.stderrDevice !== undefined && terminalDevice(fd) === this.stderrDevice;
  }

  /** Did the command's output leave srt's stderr terminal mid-line (srt's own lines then need
   *  a newline first)? False when stderr is no terminal or nothing went to it. */
  leftMidLine(): boolean {
    return this.tail !== undefined && endsMidLine(this.tail);
  }

  private keep(chunk: Buffer): void {
    if (this.tail === undefined) return;
    this.tail = chunk.length >= TAIL_BYTES
      ? Buffer.from(chunk.subarray(chunk.length - TAIL_BYTES))
      : Buffer.concat([this.tail, chunk]).subarray(-TAIL_BYTES);
  }

  /** Is srt the foreground process group of its terminal? (A terminal on stdin that is not srt's
   *  controlling terminal gives no job control: always yes.) */
  private foreground(): boolean {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const [pgrp, ttyNr, tpgid] = [Number(fields[2]), Number(fields[4]), Number(fields[5])];
    return ttyNr !== this.device || tpgid === pgrp;
  }

  /**
   * Before the sandbox starts: with keystrokes to relay, wait until srt is in the foreground
   * (started with `&`, it stops itself like any program that reads the terminal, until `fg`);
   * copy the terminal's modes and size for the pty, and with keystrokes switch the terminal to raw
   * mode. Resolves false when `abort` fires first.
   */
  async prepare(abort: AbortSignal): Promise<boolean> {
    while (this.relaysInput && !this.foreground()) {
      const continued = once(process, 'SIGCONT', { signal: abort }).catch(() => undefined);
      // A signal listener does not keep node running, and nothing else may yet (the proxy starts
      // once bwrap runs): without this node would end here, the command never run.
      const alive = setInterval(() => {}, 1 << 30);
      this.stopSelf('SIGTTIN');
      await continued;
      clearInterval(alive);
      if (abort.aborted) return false;
    }
    if (abort.aborted) return false;
    this.sent = this.size();
    // The user's modes (erase character, IUTF8, …) for the command's pty (tcgetattr only: a
    // background process may).
    this.setup = `${this.sent[1]} ${this.sent[0]} ${stty(this.fd, '-g') ?? ''}`;
    if (this.relaysInput) this.enterRaw();
    else this.sizePoll = setInterval(this.onWinch, SIZE_POLL_MS).unref();
    this.listening = true;
    process.on('SIGTSTP', this.onTstp);
    process.on('SIGCONT', this.onCont);
    process.on('SIGWINCH', this.onWinch);
    return true;
  }

  /** bwrap's stdio: no terminal goes in. The command gets the pty instead, where fd 2 becomes a
   *  pipe srt copies to the terminal, so bwrap's and the helper's own errors still show; a terminal
   *  that is not the pty's (`2>/dev/pts/7`) becomes a pipe srt copies to it. */
  spawnStdio(): StdioOptions {
    this.statFd = openSync('/proc/self/stat', 'r');
    const std = [0, 1, 2].map((fd) => {
      if (this.stdio.includes(String(fd))) return fd === 2 ? 'pipe' : 'ignore';
      if (terminalDevice(fd) !== undefined) return fd === 0 ? 'ignore' : 'pipe';
      return 'inherit';
    });
    return [...std, 'pipe', 'pipe', this.statFd] as StdioOptions;
  }

  /** srt got a signal that ends it, now forwarded to the command: continue the sandbox so the
   *  command can act on it (as a shell's `kill %1` continues a stopped job), and freeze it no more
   *  for being in the background. */
  end(): void {
    if (this.ending || this.closed) return;
    this.ending = true;
    this.send('C');
  }

  attach(child: ChildProcess): void {
    if (this.statFd !== undefined) closeSync(this.statFd);
    this.statFd = undefined;
    const channel = child.stdio[TERMINAL_CHANNEL_FD] as Duplex;
    this.channel = channel;
    channel.write(frame('S', Buffer.from(this.setup)));
    channel.on('data', (chunk: Buffer) => this.receive(chunk));
    channel.on('drain', () => { if (!this.suspended) this.startReading(); });
    channel.on('error', () => {});
    channel.on('close', () => { this.channel = undefined; });
    for (const fd of [1, 2] as const) {
      const target = fd === 1 ? process.stdout : process.stderr;
      // On the pty's terminal in raw mode, a newline needs its carriage return.
      const crlf = this.stdio.includes(String(fd));
      const onStderr = this.onStderr(fd);
      (child.stdio[fd] as Readable | null)?.on('data', (chunk: Buffer) => {
        target.write(crlf && this.raw ? chunk.toString('latin1').replace(/\r?\n/g, '\r\n') : chunk);
        if (onStderr) this.keep(chunk);
      });
    }
    this.startReading();
  }

  /** After the run, and on every error path: the terminal as it was, srt's listeners gone. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.listening = false;
    clearInterval(this.sizePoll);
    this.stopReading();
    process.off('SIGTSTP', this.onTstp);
    process.off('SIGCONT', this.onCont);
    process.off('SIGWINCH', this.onWinch);
    if (this.statFd !== undefined) closeSync(this.statFd);
    this.statFd = undefined;
    // From the background tcsetattr would stop srt (SIGTTOU); Node itself restores the modes it
    // started with on exit, with SIGTTOU blocked.
    if (this.foreground()) this.leaveRaw();
    if (this.ownOutputFd !== undefined) this.output.destroy();
  }

  private send(type: string, payload?: Uint8Array): boolean {
    if (!this.channel || this.channel.destroyed) return true;
    return this.channel.write(frame(type, payload));
  }

  private size(): [number, number] {
    // A WriteStream caches the size and refreshes it on SIGWINCH, which a background srt never
    // gets: ask the terminal itself (the stream's own refresh).
    (this.output as { _refreshSize?: () => void })._refreshSize?.();
    const [cols, rows] = this.output.getWindowSize();
    return [Math.min(cols, 0xffff), Math.min(rows, 0xffff)];
  }

  /** Tell the helper a new window size (the pty's foreground job gets SIGWINCH). */
  private sendSize(): void {
    const [cols, rows] = this.size();
    if (cols === this.sent[0] && rows === this.sent[1]) return;
    this.sent = [cols, rows];
    const payload = Buffer.alloc(4);
    payload.writeUInt16LE(rows, 0);
    payload.writeUInt16LE(cols, 2);
    this.send('W', payload);
  }

  private enterRaw(): void {
    // Re-applied even when srt thinks it is raw: after a SIGSTOP the shell may have reset it.
    if (this.raw) this.input.setRawMode(false);
    this.input.setRawMode(true);
    // Node's raw mode keeps output processing; the command's pty already did it (\n → \r\n), and
    // doing it twice costs throughput and adds a \r. setRawMode(false) restores it.
    stty(0, '-opost');
    this.raw = true;
  }

  private leaveRaw(): void {
    if (!this.raw) return;
    this.input.setRawMode(false);
    this.raw = false;
  }

  private startReading(): void {
    if (!this.relaysInput || this.reading || this.closed) return;
    this.reading = true;
    this.input.on('data', this.onInput);
    this.input.on('error', this.onInputError);
    this.input.resume();
  }

  private stopReading(): void {
    if (!this.reading) return;
    this.reading = false;
    this.input.off('data', this.onInput);
    this.input.off('error', this.onInputError);
    this.input.pause();
  }

  /** Stop srt itself with `sig`; returns once srt is continued. */
  private stopSelf(sig: NodeJS.Signals): void {
    // With srt's own SIGTSTP listener the signal would only call it: off for the moment.
    process.off('SIGTSTP', this.onTstp);
    try {
      process.kill(process.pid, sig);
    } finally {
      if (this.listening) process.on('SIGTSTP', this.onTstp);
    }
  }

  /** Give the terminal back to the user's shell and stop srt (the sandbox is already stopped). */
  private suspend(sig: NodeJS.Signals): void {
    if (this.closed) return;
    this.suspended = true;
    this.stopReading();
    if (this.foreground()) this.leaveRaw();
    this.stopSelf(sig);
  }

  private continued(): void {
    if (this.closed) return;
    // Output only, srt runs in the background as well; so it does once it is ending.
    const foreground = !this.relaysInput || this.foreground();
    if (!foreground && !this.ending) {
      // `bg`, or a SIGSTOP followed by a SIGCONT in the background: frozen until `fg`. But a
      // shell's `kill %1` of a stopped job sends SIGTERM and SIGCONT together, and Node may run
      // the SIGCONT listener first: decide once every signal already sent has reached its listener.
      afterSignalsArrived(() => {
        if (this.closed) return;
        if (this.ending || this.foreground()) return this.continued();
        this.send('F');
        this.suspend('SIGTTIN');
      });
      return;
    }
    this.suspended = !foreground;
    if (this.relaysInput && foreground) this.enterRaw();
    this.sendSize();
    this.send('C');
    if (foreground) this.startReading();
  }

  private receive(chunk: Buffer): void {
    let off = 0;
    while (off < chunk.length) {
      if (this.headerLen < FRAME_HEADER) {
        const take = Math.min(FRAME_HEADER - this.headerLen, chunk.length - off);
        chunk.copy(this.header, this.headerLen, off, off + take);
        this.headerLen += take;
        off += take;
        if (this.headerLen < FRAME_HEADER) break;
        this.type = this.header[0]!;
        this.remaining = this.header.readUInt32LE(1);
        this.control = [];
      }
      const take = Math.min(this.remaining, chunk.length - off);
      const part = chunk.subarray(off, off + take);
      off += take;
      this.remaining -= take;
      if (this.type === 0x44 /* D */) {
        if (this.outputOnStderr) this.keep(part);
        if (!this.output.write(part)) {
          this.channel?.pause();
          this.output.once('drain', () => this.channel?.resume());
        }
      } else {
        this.control.push(part);
      }
      if (this.remaining > 0) continue;
      this.headerLen = 0;
      if (this.type === 0x54 /* T */) {
        const sig = SIGNAL_NAMES.get(Buffer.concat(this.control)[0] ?? 0);
        // The command stopped by itself: hand the terminal back, stop with the same signal.
        this.suspend(sig === undefined || sig === 'SIGSTOP' ? 'SIGTSTP' : sig);
      }
    }
  }
}
