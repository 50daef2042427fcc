// node-forge's DER encoder on its own (lib/asn1.js loads util and oids, not the rest of forge:
// a few ms instead of the ~25 ms of the whole library). Its types are those of `forge.asn1`.
declare module 'node-forge/lib/asn1.js' {
  import type { asn1 } from 'node-forge';
  const a: typeof asn1;
  export default a;
}
