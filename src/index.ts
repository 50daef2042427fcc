// Public library API of srt. The CLI (src/cli.ts) is a thin user of these exports.

export { loadPolicy, loadSettingsReport, buildPolicy, buildPolicyWithSources, SettingsError, defaultManagedPaths, findRoot } from './settings/index.js';
export type { LoadOptions, SettingsReport, SettingsLayer, CliFlags, PolicyContext, PolicyBuild, SettingsFile } from './settings/index.js';
export { settingsJsonSchema } from './settings/schema.js';
export type { SettingsDocument } from './settings/schema.js';
export type * from './policy.js';
export { parseDomainEntry, normalizeHost, ruleMatches } from './proxy/domains.js';
export type { DomainRule, ParsedDomainEntry } from './proxy/domains.js';
export { Sandbox, SandboxError } from './sandbox.js';
export type { CommandSpec, PlatformName, SandboxOptions, SpawnPlan } from './sandbox.js';
