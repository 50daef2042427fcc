// srt-init's command lines (init/main.c and init/relays.c parse them), written from typed fields
// in this one place: inside the sandbox as its first process, and outside as the launcher that
// binds the exposed host ports before it runs bwrap (`--host-listen`).

import { hostPort } from '../host-port.js';

/** A listener inside the sandbox (a loopback address) whose connections go to a Unix socket of the proxy. */
export interface RelayListen {
  address: string;
  port: number;
  socketPath: string;
}

/** A listener on the host's loopback, relayed into the sandbox's 127.0.0.1:sandboxPort
 *  (`network.exposePorts`). The launcher binds it on descriptor `fd` before bwrap starts; bwrap
 *  hands the descriptor on. */
export interface HostListen {
  fd: number;
  hostAddress: string;
  hostPort: number;
  sandboxPort: number;
}

/** How srt-init runs the command (its options, in the order it is given them). */
export interface InitArgs {
  helperPath: string;
  relays: RelayListen[];
  exposes: HostListen[];
  /** Landlock: writes only beneath `writable` (socket files too with `socketFiles`), or off. */
  landlock: { writable: string[]; socketFiles: boolean } | 'off';
  /** The command's own pty, relayed over `channelFd`; `stdio`: which of its fds 0-2 are on it. */
  pty?: { channelFd: number; parentStatFd: number; stdio: string };
  /** The protected-path supervisor: its rules file and the descriptor it reports on. */
  protect?: { rulesPath: string; reportFd: number };
  /** The descriptor srt-init reads srt's go from before it starts the command. */
  goFd?: number;
  /** The mount plan srt-init checks before anything runs. */
  verify?: string;
  /** The sandbox's RLIMIT_NPROC at most (init/limits.c): a quarter of the host's PID space, read
   *  outside (inside the sandbox's PID namespace kernel.pid_max may read the namespace's own). */
  maxProcs: number;
  filter: string;
}

/** `srt-init OPTIONS --`: what bwrap runs, followed by the command. */
export function initArgv(a: InitArgs): string[] {
  return [
    a.helperPath,
    ...a.relays.flatMap((r) => ['--relay', `${hostPort(r.address, r.port)}:${r.socketPath}`]),
    ...a.exposes.flatMap((e) => ['--expose', `${e.fd}:${e.sandboxPort}`]),
    ...(a.landlock === 'off'
      ? ['--no-landlock']
      : [...a.landlock.writable.flatMap((w) => ['--writable', w]), ...(a.landlock.socketFiles ? ['--socket-files'] : [])]),
    ...(a.pty ? ['--pty', `${a.pty.channelFd}:${a.pty.parentStatFd}:${a.pty.stdio}`] : []),
    ...(a.protect ? ['--protect', a.protect.rulesPath, '--report-fd', String(a.protect.reportFd)] : []),
    ...(a.verify !== undefined ? ['--verify', a.verify] : []),
    '--max-procs', String(a.maxProcs),
    ...(a.goFd !== undefined ? ['--go-fd', String(a.goFd)] : []),
    '--filter', a.filter, '--',
  ];
}

/** `srt-init --host-listen FD:ADDR:PORT... --`: binds the exposed host ports, then runs bwrap
 *  (followed by bwrap's argv). Empty when nothing is exposed: bwrap is run directly. */
export function hostListenArgv(helperPath: string, exposes: HostListen[]): string[] {
  if (exposes.length === 0) return [];
  return [helperPath, ...exposes.flatMap((e) => ['--host-listen', `${e.fd}:${hostPort(e.hostAddress, e.hostPort)}`]), '--'];
}
