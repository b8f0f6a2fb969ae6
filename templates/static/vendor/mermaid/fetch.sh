#!/bin/sh
# Replaces the vendored mermaid.min.js by the one of mermaid's npm package VERSION, checked against its sha256 (README.md
# beside this script says why a copy is kept in git, and how to move to another version). Needs npm; a user never runs it.
set -eu
VERSION=12.3.0
SHA256=336df803d87a38b70a01e736e666c8f7601d2ce42f5e47c8fafe5d721074b9a3
here=$(cd "$(dirname "$0")" && pwd)
if [ -f "$here/mermaid.min.js" ] && echo "$SHA256  $here/mermaid.min.js" | sha256sum -c --status -; then
  exit 0  # already there
fi
command -v npm >/dev/null || { echo "fetch.sh: npm is not installed (Debian package npm)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "mermaid@$VERSION" >/dev/null && tar xzf "mermaid-$VERSION.tgz")
if ! echo "$SHA256  $work/package/dist/mermaid.min.js" | sha256sum -c --status -; then
  echo "fetch.sh: mermaid@$VERSION's mermaid.min.js does not have the sha256 this script expects" >&2
  exit 1
fi
cp "$work/package/dist/mermaid.min.js" "$here/mermaid.min.js"
