#!/bin/sh
# Writes the operator-mode NATS keys and credentials beside FILE (directory
# auth/, by `compute nats-init`, once: its keys are kept) and the environment
# file of deploy/compose.yaml (default deploy/.env) with fresh random values,
# unless it already exists: the cluster route password, the seal key of the
# secrets service and COMPUTE_AUTH_DIR, the auth directory compose mounts.
# Both are git-ignored; keep them (with the volumes): a new seal key cannot
# open the secrets sealed with the old one, new NATS keys do not know the
# tenants the resolver holds. COMPUTE=... names the compute command to run
# (default: go run ./cmd/compute from the repository).
# Usage: sh deploy/gen-env.sh [FILE]
set -eu
out=${1:-deploy/.env}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$(dirname "$out")/auth"
auth=$(cd "$(dirname "$out")/auth" && pwd)
if [ ! -e "$auth/nats-auth.conf" ]; then
  (cd "$root" && ${COMPUTE:-go run ./cmd/compute} nats-init --out "$auth" --resolver-dir /data/jwt)
fi
[ -e "$out" ] && exit 0
umask 077
# 24 random bytes in hex behind a letter, so that nats-server's config
# parser reads the value as a string, never as a number
password() { printf 'pw%s' "$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')"; }
{
  echo "# deploy/compose.yaml environment, generated $(date -u +%Y-%m-%dT%H:%M:%SZ) by deploy/gen-env.sh."
  echo "# Secret: never commit or share it. Keep it as long as the volumes live."
  echo "COMPUTE_ROUTE_PASSWORD=$(password)"
  # NATS keys and credentials (nats-server reads nats-auth.conf, services their env/<user>.env)
  echo "COMPUTE_AUTH_DIR=$auth"
  # AES-256 key of the secrets service: standard base64 of 32 random bytes
  echo "COMPUTE_SEAL_KEY=$(head -c 32 /dev/urandom | base64 | tr -d '\n')"
} > "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out (route password, seal key) and $auth (NATS operator keys and credentials)"
