#!/usr/bin/env bash
# The same steps as a two-branch Tarmac landing, done by hand in a shell: the
# baseline of `npm run bench`. Usage: bare-landing.sh <repo-url> <workdir> <target> <branch>...
set -euo pipefail
repo=$1 work=$2 target=$3; shift 3
git=(git -c rerere.enabled=false -c advice.detachedHead=false)
mkdir -p "$work"
mirror="$work/mirror.git" ws="$work/ws" snap="$work/snap"
"${git[@]}" init -q --bare "$mirror"
refspecs=("+refs/heads/$target:refs/remotes/origin/$target")
for branch in "$@"; do refspecs+=("+refs/heads/$branch:refs/remotes/origin/$branch"); done
"${git[@]}" -C "$mirror" fetch -q --no-tags "$repo" "${refspecs[@]}"
base=$("${git[@]}" -C "$mirror" rev-parse "refs/remotes/origin/$target")
"${git[@]}" -C "$work" clone -q --shared --no-checkout "$mirror" "$ws"
"${git[@]}" -C "$ws" checkout -q --detach "$base"
onto=$base
for branch in "$@"; do
  sha=$("${git[@]}" -C "$mirror" rev-parse "refs/remotes/origin/$branch")
  upstream=$("${git[@]}" -C "$ws" merge-base "$base" "$sha")
  "${git[@]}" -C "$ws" -c core.editor=true rebase -q --onto "$onto" "$upstream" "$sha"
  onto=$("${git[@]}" -C "$ws" rev-parse HEAD)
done
mkdir -p "$snap"
"${git[@]}" -C "$ws" archive --format=tar HEAD | tar -x -C "$snap"
chown -R 1000:1000 "$snap" 2>/dev/null || true
docker run --rm --network none --read-only --tmpfs /tmp --cap-drop ALL --security-opt no-new-privileges \
  --user 1000:1000 -v "$snap:/workspace" -w /workspace tarmac/runner:bookworm make test >/dev/null
"${git[@]}" -C "$ws" push -q "$repo" "$onto:refs/heads/$target"
rm -rf "$work"
