// `--log FILE` (SPEC §1): one JSON line per network decision, per upstream connection that ends
// (with its byte counts), per refused write and read, and per loopback address and port the
// command's connections to were refused, appended to FILE. The schema is
// documented in docs/cli.md ("The audit log"); fields are only ever added.

import { closeSync, openSync, writeSync } from 'node:fs';
import type { Source } from './policy.js';

/** How a connection reached the proxy (gate.ts Via). */
export type AuditClient = 'http' | 'connect' | 'socks' | 'upgrade' | 'forward';

export type AuditEvent =
  | {
      kind: 'network';
      client: AuditClient;
      /** `host:port` as srt judged it (canonical, IPv6 bracketed). */
      target: string;
      verdict: 'allow' | 'deny';
      /** The allowedDomains/deniedDomains entry that decided, when one did. */
      rule?: string;
      /** Where that entry came from. */
      source?: Source;
      reason?: string;
      /** For an allow: the addresses that passed the resolved-address guard. */
      addresses?: string[];
    }
  /** An upstream connection ended (or could not be made: `error`). */
  | { kind: 'connection'; target: string; bytesUp: number; bytesDown: number; error?: string }
  /** A write or read the sandbox refused. `rule`: a protected path, a denyWrite/denyRead entry
   *  (`entry`, `source`), a credential, or a read-only place (`allow`: the allowWrite entry that
   *  would allow it, when srt offers one). */
  | {
      kind: 'write' | 'read';
      verdict: 'refused';
      op: string;
      path: string;
      rule: 'protected' | 'denyWrite' | 'denyRead' | 'credential' | 'read-only';
      entry?: string;
      source?: Source;
      allow?: string;
    }
  /** TCP connections of the command to a loopback address and port nothing listened on inside
   *  the sandbox (`count` of them): no forwarded port, no server of its own. `allow`: the
   *  allowedDomains entry that would forward it, when srt offers one. */
  | { kind: 'connect'; verdict: 'refused'; target: string; count: number; rule: 'not-forwarded'; allow?: string };

export type AuditSink = (event: AuditEvent) => void;

/** A sink appending to `path` (opened once, created 0600 if missing). Throws when it cannot be opened. */
export function auditFile(path: string): { sink: AuditSink; close: () => void } {
  const fd = openSync(path, 'a', 0o600);
  let open = true;
  return {
    sink: (event) => {
      if (open) writeSync(fd, `${JSON.stringify({ time: new Date().toISOString(), ...event })}\n`);
    },
    close: () => {
      if (open) closeSync(fd);
      open = false;
    },
  };
}
