#!/usr/bin/env bash
# Enforcement checks for the macOS backend, to run ON A MAC (nothing here can run on Linux):
#
#   bash scripts/macos-check.sh
#
# It needs the built checkout (npm ci && npm run build; macOS has no srt-init to build) and
# uses a throwaway HOME and project, never your own files. Part 1 asks Seatbelt itself the
# questions srt's profile depends on (rule precedence, the regex dialect, -D parameters). Part 2
# runs srt's escape checks against the real sandbox: each tries the escape, expects it refused and
# looks at the host afterwards. Prints PASS/FAIL/INFO per check; exits 1 if any check fails.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

if [ "$(uname -s)" != Darwin ]; then
  echo "macos-check: this checks Seatbelt enforcement and runs only on macOS; on Linux review the profile with: bin/srt --dry-run --platform macos -- CMD" >&2
  exit 2
fi
[ -x /usr/bin/sandbox-exec ] || { echo "macos-check: /usr/bin/sandbox-exec is missing" >&2; exit 2; }
[ -f dist/bundle/cli.cjs ] || { echo "macos-check: build first: npm ci && npm run build" >&2; exit 2; }
node=$(command -v node) || { echo "macos-check: node is not on PATH" >&2; exit 2; }

failures=0
pass() { printf 'PASS  %s\n' "$1"; }
fail() { printf 'FAIL  %s\n' "$1"; failures=$((failures + 1)); }
info() { printf 'INFO  %s\n' "$1"; }
# Right after a command: `ok NAME` passes when it succeeded, `no NAME` when it failed (refused).
ok() { local s=$?; if [ "$s" = 0 ]; then pass "$1"; else fail "$1"; fi; }
no() { local s=$?; if [ "$s" != 0 ]; then pass "$1"; else fail "$1"; fi; }

scratch=$(cd "$(mktemp -d)" && pwd -P)
server=
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; chmod -R u+rwx "$scratch" 2>/dev/null; rm -rf "$scratch"; }
trap cleanup EXIT

echo "== Part 1: Seatbelt's own rules (what srt's profile relies on)"
probe="$scratch/probe"
mkdir -p "$probe"
echo secret >"$probe/file"
re_probe=$(printf '%s' "$probe" | sed 's/[.[\\()*+?{|^$]/\\&/g')
sb() { /usr/bin/sandbox-exec "$@" >/dev/null 2>&1; }
sb -p '(version 1)(allow default)(deny file-read* (literal (param "F")))(allow file-read* (literal (param "F")))' -D "F=$probe/file" /bin/cat "$probe/file"
ok 'the last matching rule wins (a later allow beats an earlier deny)'
sb -p '(version 1)(allow default)(allow file-read* (literal (param "F")))(deny file-read* (literal (param "F")))' -D "F=$probe/file" /bin/cat "$probe/file"
no 'the last matching rule wins (a later deny beats an earlier allow)'
sb -p '(version 1)(allow default)(deny file-read* (regex (param "R")))' -D "R=^$re_probe/[Ff][Ii][Ll][Ee](/.*)?\$" /bin/cat "$probe/file"
no '(regex (param …)) takes a POSIX ERE from a -D parameter'
sb -p '(version 1)(allow default)(deny file-read* (regex (param "R")))' -D "R=^$re_probe/[Ff][Ii][Ll][Ee](/.*)?\$" /bin/cat "$probe/FILE"
no 'a case-folded regex also matches a path spelled in another case'
sb -p '(version 1)(allow default)(deny file-read* (literal (param "F")))' -D "F=$probe/file" /bin/cat "$probe/FILE"
if [ $? != 0 ]; then info 'Seatbelt matches an existing file by its on-disk name (another case spelling is still denied)'
else info 'Seatbelt matches the path as spelled: srt folds case on every deny regex for this reason'; fi
name=$(printf 'caf\303\251')
touch "$probe/$name"
if sb -p '(version 1)(allow default)(deny file-read* (regex (param "R")))' -D "R=^$re_probe/caf[^/]\$" /bin/cat "$probe/$name"; then
  info 'regex [^/] does not match one non-ASCII character (byte matching): in a glob, write * rather than ? or […] for such names'
else
  info 'regex [^/] matches one non-ASCII character (character matching): globs ? and […] work for any name'
fi

echo "== Part 2: srt's escape checks under the real sandbox"
home="$scratch/home"
work="$home/proj"
mkdir -p "$home/.ssh" "$work/.git/hooks" "$work/src"
echo 'PRIVATE KEY' >"$home/.ssh/id_test"
echo 'ref: refs/heads/main' >"$work/.git/HEAD"
printf '[core]\n' >"$work/.git/config"
echo 'echo hi' >"$home/.bashrc"
srt() { (cd "$work" && env -i PATH=/usr/bin:/bin:/usr/sbin:/sbin HOME="$home" LANG=en_US.UTF-8 "$node" "$repo/bin/srt" "$@"); }
inside() { srt "$@" >"$scratch/out" 2>"$scratch/err"; }

inside -- /usr/bin/true; ok 'srt -- true runs (exit 0)'
inside -- /bin/sh -c 'exit 7'; [ $? = 7 ]; ok "the exit status is the command's own"
inside -- /bin/sh -c 'kill -TERM $$'; [ $? = 143 ]; ok 'killed by SIGTERM: 128+15'
inside -- /no/such/command; [ $? = 127 ]; ok 'a missing command: 127'

inside -- /bin/sh -c "echo x > '$home/escape'"; [ ! -e "$home/escape" ]; ok 'no write outside the project (home)'
inside -- /bin/sh -c "echo x > /private/tmp/srt-check-$$"; [ ! -e "/private/tmp/srt-check-$$" ]; ok 'no write to /tmp'
inside -- /bin/sh -c "echo x > '$work/src/ok.txt'"; [ -f "$work/src/ok.txt" ]; ok 'the project is writable'
inside -- /bin/sh -c 'echo x > "$TMPDIR/t" && cat "$TMPDIR/t"'; ok "the run's TMPDIR is writable"
inside -- /bin/sh -c "ln -s '$home' '$work/up' && echo x > '$work/up/via-link'"; [ ! -e "$home/via-link" ]; ok 'a write through a symlink is judged where it lands'

inside -- /bin/sh -c "echo hook > '$work/.git/hooks/pre-commit'"; [ ! -e "$work/.git/hooks/pre-commit" ]; ok 'protected: .git/hooks'
inside -- /bin/sh -c "echo hook > '$work/.GIT/HOOKS/post-checkout'"; [ ! -e "$work/.git/hooks/post-checkout" ]; ok 'protected: .git/hooks in another case spelling'
inside -- /bin/sh -c "printf '[core]\n\tfsmonitor = evil\n' >> '$work/.git/config'"; ! grep -q evil "$work/.git/config"; ok 'protected: .git/config'
inside -- /bin/sh -c "mkdir -p '$work/a/b/.vscode' && echo '{}' > '$work/a/b/.vscode/tasks.json'"; [ ! -e "$work/a/b/.vscode/tasks.json" ]; ok 'protected: a missing .vscode at any depth stays uncreatable'
inside -- /bin/sh -c "echo evil > '$work/.bashrc'"; [ ! -e "$work/.bashrc" ]; ok 'protected: .bashrc in the project'
inside -- /bin/sh -c "mkdir -p '$work/.srt' && echo '{}' > '$work/.srt/settings.json'"; [ ! -e "$work/.srt/settings.json" ]; ok "protected: the project's .srt settings"
inside -- /bin/sh -c "mv '$work/.git' '$work/.git2'"; [ -d "$work/.git" ] && [ ! -e "$work/.git2" ]; ok 'rename guard: .git cannot be moved away'
inside -- /bin/sh -c "ln '$work/.git/config' '$work/cfg' && echo evil >> '$work/cfg'"; ! grep -q evil "$work/.git/config"; ok 'no hard link to a protected file'
inside -- /bin/sh -c "ln -s '$work/.git/hooks' '$work/h' && echo x > '$work/h/pre-push'"; [ ! -e "$work/.git/hooks/pre-push" ]; ok 'no write into a protected directory through a symlink'
inside -- /bin/sh -c "touch '$work/suid' && chmod u+s '$work/suid'"; [ ! -u "$work/suid" ]; ok 'no set-user-id files'
inside -- /bin/sh -c 'git init -q "$TMPDIR/r" && echo x > "$TMPDIR/r/.git/hooks/post-commit"'; ok 'a repository in TMPDIR (removed after the run) is not protected'

inside --deny-read '~/.ssh' -- /bin/cat "$home/.ssh/id_test"; no 'denyRead ~/.ssh: the key is unreadable'
inside --deny-read '~/.ssh' -- /bin/cat "$home/.SSH/id_test"; no 'denyRead ~/.ssh: also in another case spelling'
inside --deny-read '~/.ssh' -- /bin/ls "$home/.ssh"; no 'denyRead ~/.ssh: its listing is unreadable'
vol="/.vol/$(stat -f %d "$home/.ssh/id_test")/$(stat -f %i "$home/.ssh/id_test")"
inside --deny-read '~/.ssh' -- /bin/cat "$vol"; no 'denyRead: not through /.vol/<device>/<inode> either'
inside --deny-read '~/' -- /bin/sh -c "cat '$work/.git/HEAD' && ! cat '$home/.bashrc'"; ok 'denyRead ~/ with the project re-opened (the current directory)'
inside --deny-read '~/' -- /bin/sh -c "cd '$work/src' && pwd -P && /bin/realpath ."; ok 'realpath and getcwd work through a hidden parent'

python3 -u -m http.server --bind 127.0.0.1 0 >"$scratch/server.log" 2>&1 &
server=$!
port=
for _ in $(seq 50); do port=$(sed -n 's/.* port \([0-9][0-9]*\).*/\1/p' "$scratch/server.log" | head -1); [ -n "$port" ] && break; sleep 0.1; done
if [ -n "$port" ]; then
  inside -- /usr/bin/curl -s --max-time 5 --noproxy '*' "http://127.0.0.1:$port/"; no 'no direct connection to a loopback service'
  inside -- /usr/bin/curl -s --max-time 5 "http://127.0.0.1:$port/"; no 'the proxy refuses a destination that is not allowed'
  grep -q 'srt: blocked 127.0.0.1' "$scratch/err"; ok 'the refusal is reported at the end of the run'
  inside --allow-domain "127.0.0.1:$port" -- /usr/bin/curl -sf --max-time 5 --noproxy '*' "http://127.0.0.1:$port/"; ok 'an allowed 127.0.0.1:PORT is reachable directly'
else
  fail 'could not start a loopback HTTP server (python3) for the network checks'
fi
inside -- /usr/bin/nc -z -G 3 1.1.1.1 443; no 'no direct connection to the internet'
inside -- /usr/bin/python3 -c "import socket; socket.socket(socket.AF_UNIX).connect('/private/var/run/mDNSResponder')"; no 'no Unix socket outside allowUnixSockets (mDNSResponder: DNS)'
inside -- /usr/bin/security find-generic-password -s srt-macos-check; no 'no keychain (securityd)'
inside -- /bin/ps -E -p $$ -o command=
if grep -q 'HOME=' "$scratch/out"; then fail "another process's environment is readable (ps -E)"; else pass "another process's environment stays unreadable"; fi
inside -- /usr/bin/open -g -a Finder; no 'no application launch through LaunchServices (open -a)'
inside -- /usr/bin/defaults write com.example.srt-macos-check planted yes
! /usr/bin/defaults read com.example.srt-macos-check planted >/dev/null 2>&1; ok 'no preference writes (cfprefsd applies user-preference-write)'
/usr/bin/defaults delete com.example.srt-macos-check >/dev/null 2>&1
for t in /dev/ttys000 /dev/ttys001 /dev/ttys002; do
  [ -e "$t" ] || continue
  inside -- /bin/dd if="$t" of=/dev/null count=0; no "another terminal ($t) cannot be opened"
  break
done

inside --deny-read '~/.ssh' -- /bin/cat "$home/.ssh/id_test"
if grep -q 'srt: sandbox refused file-read' "$scratch/err"; then pass 'Seatbelt denials are in the end-of-run report'
else info 'no Seatbelt denial lines in the report (log stream needs an admin account); the refusal itself was checked above'; fi

echo
if [ "$failures" = 0 ]; then echo "macos-check: all checks passed"; exit 0; fi
echo "macos-check: $failures check(s) failed" >&2
exit 1
