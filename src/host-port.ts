// One spelling of a host with a port, wherever srt writes one (messages, settings it shows,
// srt-init's options, a CONNECT line, a Host header): an IPv6 address in brackets.

/** `host` as it goes before `:port`: an IPv6 address (the only host with a colon) in brackets. */
export function bracketHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

/** `127.0.0.1:3000`, `example.com:443`, `[::1]:8080`. */
export function hostPort(host: string, port: number): string {
  return `${bracketHost(host)}:${port}`;
}
