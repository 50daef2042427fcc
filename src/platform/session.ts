// One run's lifecycle, the same on every platform: one command at a time, the signals it forwards
// (handlers installed for the run only), the filtering proxy with its credential stages, what the
// run refused, and its cleanup, whatever ends it. The backends add what is theirs: what to spawn
// and how (platform/linux.ts, platform/macos.ts).

import type { AuditSink } from '../audit.js';
import type { CredentialPlan } from '../credentials/plan.js';
import type { CredentialStage } from '../credentials/stage.js';
import type { Policy } from '../policy.js';
import type { ProxyHandle, ProxyOptions } from '../proxy/server.js';
import type { Messages } from './backend.js';

/** Every signal a terminal or a supervisor sends to end srt (Ctrl-C, Ctrl-\, hang-up, kill):
 *  forwarded to the command while it runs; Node would otherwise die on them without cleaning up. */
export const FORWARDED_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'] as const;

let proxyModuleLoad: Promise<typeof import('../proxy/server.js')> | undefined;
/** The proxy is loaded only for runs that need it, so startup does not pay for it otherwise. */
export function loadProxyModule(): Promise<typeof import('../proxy/server.js')> {
  return (proxyModuleLoad ??= import('../proxy/server.js'));
}

/** The signals one run receives, from its start to its end (then the handlers are gone). */
export class RunSignals {
  /** Every signal received so far, in order. */
  readonly received: NodeJS.Signals[] = [];
  private readonly listeners = new Set<(sig: NodeJS.Signals) => void>();
  private readonly handler = (sig: NodeJS.Signals) => {
    this.received.push(sig);
    for (const l of [...this.listeners]) l(sig);
  };

  constructor(private readonly onExit: () => void) {
    for (const s of FORWARDED_SIGNALS) process.on(s, this.handler);
    process.on('exit', this.onExit);
  }

  /** Call `fn` for each signal from now on; returns the way to stop. */
  listen(fn: (sig: NodeJS.Signals) => void): () => void {
    this.listeners.add(fn);
    return () => { this.listeners.delete(fn); };
  }

  detach(): void {
    for (const s of FORWARDED_SIGNALS) process.off(s, this.handler);
    process.off('exit', this.onExit);
    this.listeners.clear();
  }
}

/** The proxy's listeners: Unix sockets the relays lead to (Linux), or loopback ports (macOS). */
export type ProxyListen = ProxyOptions['listen'];

/** A proxy kept for the next command: what it was started with (another start replaces it). */
interface KeptProxy {
  handle: ProxyHandle;
  listen: string;
  termination: ProxyOptions['termination'];
}

export class RunSession {
  private proxy: ProxyHandle | undefined;
  /** A library sandbox's proxy, serving its commands one after another while their listeners
   *  and TLS termination stay the same (never with credential stages: each run mints its own). */
  private kept: KeptProxy | undefined;
  /** The refusals of the last run's proxy, taken when its command ended. */
  private refused: import('../proxy/server.js').Violation[] = [];
  private proxyModule: typeof import('../proxy/server.js') | undefined;
  /** Injects, re-masks and guards credentials in the proxy (only when something is masked). */
  private stage: CredentialStage | undefined;
  /** Lines for the end of the run: refused protected writes, repositories disabled, paths set aside. */
  private endNotes: string[] = [];
  private busy = false;
  private disposed = false;
  /** Set once this run's command has ended: how its output left srt's stderr terminal. */
  private ended: { midLine: boolean } | undefined;

  constructor(
    readonly policy: Policy,
    readonly out: Messages,
    private readonly debug: boolean,
    private readonly audit?: AuditSink,
  ) {}

  /** `srt[debug]: …` lines, when debugging. */
  get log(): ((line: string) => void) | undefined {
    return this.debug ? (line: string) => this.out.say(`srt[debug]: ${line}`) : undefined;
  }

  /**
   * One run: `body` gets the run's signals; `cleanupSync` runs after it whatever happens (and from
   * the process's exit while the run lasts). A signal that arrives before the command starts ends
   * the run before it does (the backend returns 128+N).
   */
  async run(body: (signals: RunSignals) => Promise<number>, cleanupSync: () => void): Promise<number> {
    if (this.disposed) throw new Error('Sandbox already disposed');
    if (this.busy) throw new Error('a Sandbox runs one command at a time; wait for run() to finish');
    this.busy = true;
    this.ended = undefined;
    this.endNotes = [];
    this.proxy = undefined;
    this.refused = [];
    this.stage = undefined;
    const signals = new RunSignals(cleanupSync);
    try {
      return await body(signals);
    } finally {
      signals.detach();
      await this.closeProxy();
      cleanupSync();
      this.busy = false;
    }
  }

  /** The run's command has ended: its proxy's refusals are taken, then a kept proxy is made
   *  ready for the next command (its connections closed) and any other is closed. */
  private async closeProxy(): Promise<void> {
    const proxy = this.proxy;
    if (!proxy) return;
    this.refused = proxy.violations();
    if (this.kept?.handle === proxy) proxy.endCommand();
    else await proxy.close();
  }

  /**
   * Start the filtering proxy, with credential stages when something is masked. `keep`: it may
   * serve the next commands too (until dispose), when they listen where this one does.
   */
  async startProxy(credentials: CredentialPlan, listen: ProxyListen, extra: Partial<ProxyOptions> = {}, keep = false): Promise<ProxyHandle> {
    this.proxyModule = await loadProxyModule();
    const key = JSON.stringify(listen);
    const kept = this.kept;
    if (kept && keep && credentials.secrets.length === 0 && kept.listen === key && kept.termination === extra.termination) {
      kept.handle.setNetwork(this.policy.network);
      this.proxy = kept.handle;
      return kept.handle;
    }
    this.kept = undefined;
    await kept?.handle.close();
    const log = this.log;
    // Loaded only when something is masked (`srt -- true` pays for no credential code).
    const { stages, credential } = credentials.secrets.length > 0
      ? await (await import('../credentials/stages.js')).credentialStages(credentials, this.policy, log)
      : { stages: [], credential: undefined };
    this.stage = credential;
    this.proxy = await this.proxyModule.startProxy({
      network: this.policy.network,
      listen,
      ...(stages.length ? { stages } : {}),
      ...(log ? { log } : {}),
      ...(this.audit ? { audit: this.audit } : {}),
      ...extra,
    });
    if (keep && stages.length === 0) this.kept = { handle: this.proxy, listen: key, termination: extra.termination };
    return this.proxy;
  }

  /** The command has ended; `midLine`: its output left srt's stderr terminal mid-line. */
  commandEnded(midLine = false): void {
    this.ended = { midLine };
  }

  /** After the command of the last run ended (undefined before and while it runs): whether its
   *  output left srt's stderr terminal mid-line, as far as srt saw it. */
  get commandEnd(): { midLine: boolean } | undefined {
    return this.ended;
  }

  /** A line for the end of the run (what srt refused or did about the run's writes). */
  note(line: string): void {
    this.endNotes.push(line);
  }

  /** Where this run's refused writes go as data (`--log`). */
  get auditSink(): AuditSink | undefined {
    return this.audit;
  }

  /** Replace the network policy of a running sandbox (`--control-fd`): new connections follow it. */
  updateNetwork(network: Policy['network']): void {
    this.policy.network = network;
    this.proxy?.setNetwork(network);
  }

  /** One printable line per distinct refusal by the proxy, then the backend's end-of-run lines
   *  (`extra`), then the run's own notes and the credential stage's. */
  violations(extra: string[] = []): string[] {
    const live = this.busy ? this.proxy?.violations() : undefined;
    const proxied = this.proxyModule ? (live ?? this.refused).map(this.proxyModule.formatViolation) : [];
    return [...proxied, ...extra, ...this.endNotes, ...(this.stage?.notes() ?? []).map((n) => `srt: warning: ${n}`)];
  }

  /** Closes a kept proxy (its sockets are removed with it). */
  async dispose(): Promise<void> {
    this.disposed = true;
    const kept = this.kept;
    this.kept = undefined;
    await kept?.handle.close();
  }
}
