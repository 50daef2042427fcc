#!/bin/sh
# The peers `npm run bench -- --vs reference,codex` measures beside srt, installed from npm into a
# bench-only prefix (never this repository's node_modules): $SRT_BENCH_PEERS, or
# ~/.cache/srt-bench-peers. The reference tool also needs socat and ripgrep on PATH.
set -eu
dir=${SRT_BENCH_PEERS:-$HOME/.cache/srt-bench-peers}
mkdir -p "$dir"
cd "$dir"
[ -f package.json ] || echo '{"private":true}' > package.json
npm install --no-audit --no-fund --save-exact @anthropic-ai/sandbox-runtime@0.0.83 @openai/codex@0.171.0
command -v socat >/dev/null || echo "note: the reference tool needs socat (apt-get install socat)" >&2
echo "peers installed in $dir"
