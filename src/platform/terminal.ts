// The user's terminal while the command runs on its own pseudo-terminal inside the sandbox
// (SPEC §4 Terminal). The pty and its relay live in the seccomp helper (seccomp/pty.c); srt owns
// the user's side: raw mode, keystrokes in, output out, window size, and job control.
//
// srt is the only process that reads the user's terminal, and it is an ordinary member of the
// shell's job, so the kernel's job control applies to it: it reads only while it is the
// terminal's foreground process group. When the command stops by itself (Ctrl-Z on a
// non-interactive command), srt restores the terminal and stops itself with the same signal (as
// sudo does with use_pty); `fg` continues srt, raw mode and the command. While srt is stopped or
// in the background the sandbox is frozen and srt reads nothing: a SIGTSTP it gets from outside,
// a SIGCONT that finds it in the background (`bg`), or a start in the background (`&`) freeze
// the command and stop srt again until it is in the foreground; a SIGSTOP, which srt cannot
// catch, the helper notices on its own (it watches srt's /proc/PID/stat).
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

/**
 * Which of srt's stdio the command gets on its pty, as the helper's `--pty` spelling (`012`, `02`,
 * …), or undefined when stdin is no terminal: then stdio passes through unchanged. stdout or
 * stderr that is not a terminal (a file, a pipe) is passed through as is, as sudo does.
 */
export function terminalStdio(): string | undefined {
  if (!isatty(0)) return undefined;
  const stdio = [0, 1, 2].filter((fd) => fd === 0 || isatty(fd)).join('');
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

function frame(type: string, payload: Uint8Array = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(FRAME_HEADER);
  head.write(type, 0, 'latin1');
  head.writeUInt32LE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

const SIGNAL_NAMES = new Map(Object.entries(osConstants.signals).map(([name, n]) => [n, name as NodeJS.Signals]));

/** Run stty on the user's terminal (srt's stdin); undefined when it is missing or fails. Node
 *  has no termios API beyond raw mode on/off. */
function stty(...args: string[]): string | undefined {
  const path = STTY.find((p) => existsSync(p));
  if (!path) return undefined;
  try {
    return execFileSync(path, args, { stdio: [0, 'pipe', 'ignore'], encoding: 'utf8', timeout: 5000 }).trim();
  } catch {
    return undefined;
  }
}

export class Terminal {
  private readonly input = process.stdin as ReadStream;
  /** Where the command's terminal output goes: srt's stdout, else its stderr, else stdin's terminal. */
  private readonly output: WriteStream;
  private readonly ownOutputFd: number | undefined;
  private readonly stdinDevice: number;
  private channel: Duplex | undefined;
  private setup = '';
  private raw = false;
  private reading = false;
  private suspended = false;
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
    this.stdinDevice = fstatSync(0).rdev;
    if (stdio.includes('1')) this.output = process.stdout as WriteStream;
    else if (stdio.includes('2')) this.output = process.stderr as WriteStream;
    else {
      // Only stdin is a terminal: echo and the command's terminal output still belong on it.
      this.ownOutputFd = openSync(STDIN_TERMINAL, constants.O_WRONLY | constants.O_NOCTTY);
      this.output = new WriteStream(this.ownOutputFd);
    }
  }

  /** Is srt the foreground process group of its terminal? (A terminal on stdin that is not srt's
   *  controlling terminal gives no job control: always yes.) */
  private foreground(): boolean {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const [pgrp, ttyNr, tpgid] = [Number(fields[2]), Number(fields[4]), Number(fields[5])];
    return ttyNr !== this.stdinDevice || tpgid === pgrp;
  }

  /**
   * Before the sandbox starts: wait until srt is in the foreground (started with `&`, it stops
   * itself like any program that needs the terminal, until `fg`), copy the terminal's modes and
   * size for the pty, and switch the terminal to raw mode. Resolves false when `abort` fires first.
   */
  async prepare(abort: AbortSignal): Promise<boolean> {
    while (!this.foreground()) {
      const continued = once(process, 'SIGCONT', { signal: abort }).catch(() => undefined);
      this.stopSelf('SIGTTIN');
      await continued;
      if (abort.aborted) return false;
    }
    if (abort.aborted) return false;
    const [cols, rows] = this.size();
    // The user's modes (erase character, IUTF8, …) for the command's pty.
    this.setup = `${rows} ${cols} ${stty('-g') ?? ''}`;
    this.enterRaw();
    this.listening = true;
    process.on('SIGTSTP', this.onTstp);
    process.on('SIGCONT', this.onCont);
    process.on('SIGWINCH', this.onWinch);
    return true;
  }

  /** bwrap's stdio: no terminal goes in (the command gets the pty instead); fd 2 becomes a pipe
   *  srt copies to the terminal, so bwrap's and the helper's own errors still show. */
  spawnStdio(): StdioOptions {
    this.statFd = openSync('/proc/self/stat', 'r');
    return [
      'ignore',
      this.stdio.includes('1') ? 'ignore' : 'inherit',
      this.stdio.includes('2') ? 'pipe' : 'inherit',
      'pipe', 'pipe', this.statFd,
    ];
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
    const errors = this.stdio.includes('2') ? child.stdio[2] as Readable | null : null;
    errors?.on('data', (chunk: Buffer) => {
      process.stderr.write(this.raw ? chunk.toString('latin1').replace(/\r?\n/g, '\r\n') : chunk);
    });
    this.startReading();
  }

  /** After the run, and on every error path: the terminal as it was, srt's listeners gone. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.listening = false;
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
    const [cols, rows] = this.output.getWindowSize();
    return [Math.min(cols, 0xffff), Math.min(rows, 0xffff)];
  }

  private sendSize(): void {
    const [cols, rows] = this.size();
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
    stty('-opost');
    this.raw = true;
  }

  private leaveRaw(): void {
    if (!this.raw) return;
    this.input.setRawMode(false);
    this.raw = false;
  }

  private startReading(): void {
    if (this.reading || this.closed) return;
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
    if (!this.foreground()) {
      // `bg`, or a SIGSTOP followed by a SIGCONT in the background: frozen until `fg`.
      this.send('F');
      this.suspend('SIGTTIN');
      return;
    }
    this.suspended = false;
    this.enterRaw();
    this.sendSize();
    this.send('C');
    this.startReading();
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
