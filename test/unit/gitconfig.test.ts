import { describe, expect, it } from 'vitest';
import { gitConfigValue, parseGitConfig, reviewGitConfig, serializeGitConfig } from '../../src/profiles/gitconfig.js';

describe('git config parsing', () => {
  it('sections, subsections (old and new), values, quotes, escapes, continuations, comments, keys after a header', () => {
    const text = [
      '# comment', '[core]', '\trepositoryformatversion = 0', '\tbare', '[remote "origin"]', '\turl = "https://x/y.git" ; c',
      '[Branch.Main]', '\tremote = origin', '[alias] st = "status -s"   # trailing', '[x]', 'v = a\\', 'b  "q  q"  \\t',
      '[sub "A\\"b"]', 'K = 1',
    ].join('\n');
    const e = parseGitConfig(text);
    expect(e.map((x) => [x.name, x.value])).toEqual([
      ['core.repositoryformatversion', '0'], ['core.bare', 'true'], ['remote.origin.url', 'https://x/y.git'],
      ['branch.main.remote', 'origin'], ['alias.st', 'status -s'], ['x.v', 'ab  q  q  \t'], ['sub.A"b.k', '1'],
    ]);
    expect(gitConfigValue(parseGitConfig('[core]\nhooksPath = a\n[CORE]\nHOOKSPATH = .husky\n'), 'core.hooksPath')).toBe('.husky');
  });

  it('refuses what git refuses', () => {
    for (const bad of ['key = outside', '[core\nx = 1', '[core]\n1x = 2', '[core]\nx = "open', '[core]\nx = \\q']) {
      expect(() => parseGitConfig(bad), bad).toThrow();
    }
  });
});

describe('reviewing a new repository\'s config', () => {
  it('keeps what git writes for init and clone; nothing to disable', () => {
    const clone = '[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n' +
      '[remote "origin"]\n\turl = /src/r\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch "main"]\n\tremote = origin\n\tmerge = refs/heads/main\n';
    expect(reviewGitConfig(clone)).toBeNull();
  });

  it('disables every entry git could run (SPEC §3 list and more), keeps the rest in a fresh file', () => {
    const evil = '[core]\n\tbare = false\n\tfsmonitor = "touch /tmp/p"\n\thooksPath = h\n\tpager = evil\n\teditor = e\n\tsshCommand = s\n' +
      '[filter "lfs"]\n\tclean = x\n[diff "d"]\n\ttextconv = t\n[merge "m"]\n\tdriver = d\n[credential]\n\thelper = c\n[gpg]\n\tprogram = g\n' +
      '[alias]\n\tx = !sh\n\ty = -c core.fsmonitor=z status\n[include]\n\tpath = /tmp/i\n[includeIf "gitdir:/"]\n\tpath = /tmp/j\n' +
      '[remote "o"]\n\turl = u\n\tuploadpack = evil\n[submodule "s"]\n\turl = u\n\tupdate = !evil\n';
    const r = reviewGitConfig(evil)!;
    expect(r.disabled).toEqual(['core.fsmonitor', 'core.hookspath', 'core.pager', 'core.editor', 'core.sshcommand', 'filter.lfs.clean',
      'diff.d.textconv', 'merge.m.driver', 'credential.helper', 'gpg.program', 'alias.x', 'alias.y', 'include.path',
      'includeif.gitdir:/.path', 'remote.o.uploadpack', 'submodule.s.update']);
    expect(r.kept).toBe('[core]\n\tbare = "false"\n[remote "o"]\n\turl = "u"\n[submodule "s"]\n\turl = "u"\n');
    // What is kept parses back to the same safe entries.
    expect(reviewGitConfig(r.kept)).toBeNull();
  });

  it('a config git cannot read is disabled whole', () => {
    expect(reviewGitConfig('[core\n')).toEqual({ disabled: ['(unreadable config)'], kept: '' });
  });

  it('serializes with quoting that survives hostile values', () => {
    const text = serializeGitConfig([{ name: 'remote.a"b.url', section: 'remote', subsection: 'a"b', key: 'url', value: 'x"\\\n#y' }]);
    expect(parseGitConfig(text).map((e) => [e.subsection, e.value])).toEqual([['a"b', 'x"\\\n#y']]);
  });
});
