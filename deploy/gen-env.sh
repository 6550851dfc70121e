#!/bin/sh
# Writes the environment file of deploy/compose.yaml (default deploy/.env)
# with fresh random values, unless it already exists: one NATS password per
# user of deploy/nats.conf, the cluster route password, and the seal key of
# the secrets service. The file is created mode 0600 and is git-ignored; keep
# it (with the volumes): a new seal key cannot open the secrets sealed with
# the old one. Usage: sh deploy/gen-env.sh [FILE]
set -eu
out=${1:-deploy/.env}
[ -e "$out" ] && exit 0
umask 077
# 24 random bytes in hex behind a letter, so that nats-server's config
# parser reads the value as a string, never as a number
password() { printf 'pw%s' "$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')"; }
{
  echo "# deploy/compose.yaml environment, generated $(date -u +%Y-%m-%dT%H:%M:%SZ) by deploy/gen-env.sh."
  echo "# Secret: never commit or share it. Keep it as long as the volumes live."
  for name in ADMIN SECRETS ACCOUNTS RECONCILER HETZNER PROXMOX TENANT_ACME TENANT_GLOBEX ROUTE; do
    echo "COMPUTE_${name}_PASSWORD=$(password)"
  done
  # AES-256 key of the secrets service: standard base64 of 32 random bytes
  echo "COMPUTE_SEAL_KEY=$(head -c 32 /dev/urandom | base64 | tr -d '\n')"
} > "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out (random NATS passwords and seal key)"
