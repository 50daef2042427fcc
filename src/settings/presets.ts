// Toolchain presets (`--with npm`, `"presets": ["npm"]`): what each tool needs, as data, and
// nothing more. Each preset becomes a settings layer of the scope that named it (user, cli or
// managed; never a repository's file), so every entry shows up in `srt config` with that source.
//
//   allowedDomains  the registries the tool fetches from (the tool's defaults)
//   caches          directories the tool writes on its own: writable, created empty when missing
//   protect         places inside those caches that a host program runs later without asking
//                   (npx runs what `_npx/` holds): write-denied whatever else says
//
// Paths are the tools' default locations (`~` is the home directory); a tool pointed elsewhere
// (npm_config_cache, CARGO_HOME, GOPATH, XDG_CACHE_HOME) needs that directory in allowWrite.

export interface Preset {
  /** One line for `srt help presets`. */
  summary: string;
  allowedDomains: string[];
  caches: string[];
  protect: string[];
}

export const PRESETS: Readonly<Record<string, Preset>> = {
  npm: {
    summary: 'npm install/ci from the public registry',
    allowedDomains: ['registry.npmjs.org'],
    caches: ['~/.npm'],
    protect: ['~/.npm/_npx'],
  },
  pnpm: {
    summary: 'pnpm install from the public registry',
    allowedDomains: ['registry.npmjs.org'],
    caches: ['~/.local/share/pnpm/store', '~/.cache/pnpm', '~/.local/state/pnpm'],
    protect: ['~/.cache/pnpm/dlx'],
  },
  yarn: {
    summary: 'yarn (classic and berry) install from the public registry',
    allowedDomains: ['registry.yarnpkg.com', 'registry.npmjs.org', 'repo.yarnpkg.com'],
    caches: ['~/.cache/yarn', '~/.yarn/berry/cache'],
    protect: [],
  },
  pip: {
    summary: 'pip install from PyPI',
    allowedDomains: ['pypi.org', 'files.pythonhosted.org'],
    caches: ['~/.cache/pip'],
    protect: [],
  },
  uv: {
    summary: 'uv pip/sync/run from PyPI',
    allowedDomains: ['pypi.org', 'files.pythonhosted.org'],
    caches: ['~/.cache/uv'],
    protect: [],
  },
  cargo: {
    summary: 'cargo fetch/build from crates.io',
    allowedDomains: ['index.crates.io', 'static.crates.io', 'crates.io'],
    caches: ['~/.cargo/registry', '~/.cargo/git'],
    protect: [],
  },
  go: {
    summary: 'go mod download/build through the Go module proxy',
    allowedDomains: ['proxy.golang.org', 'sum.golang.org'],
    caches: ['~/go/pkg/mod', '~/.cache/go-build'],
    protect: [],
  },
  gradle: {
    summary: 'gradle builds with Maven Central and the plugin portal (not the wrapper download)',
    allowedDomains: ['repo.maven.apache.org', 'repo1.maven.org', 'plugins.gradle.org', 'plugins-artifacts.gradle.org'],
    caches: ['~/.gradle/caches'],
    protect: [],
  },
  maven: {
    summary: 'mvn builds with Maven Central',
    allowedDomains: ['repo.maven.apache.org', 'repo1.maven.org'],
    caches: ['~/.m2/repository'],
    protect: [],
  },
  git: {
    summary: 'git clone/fetch/push over https with GitHub, GitLab and Bitbucket (not ssh)',
    allowedDomains: ['github.com:443', 'gitlab.com:443', 'bitbucket.org:443'],
    caches: [],
    protect: [],
  },
  gh: {
    summary: 'the GitHub CLI (its API, uploads and downloads)',
    allowedDomains: ['github.com:443', 'api.github.com:443', 'uploads.github.com:443', 'objects.githubusercontent.com:443', 'codeload.github.com:443'],
    caches: [],
    protect: [],
  },
};

export const PRESET_NAMES = Object.keys(PRESETS);
