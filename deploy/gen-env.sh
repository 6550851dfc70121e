#!/bin/sh
# Writes the operator-mode NATS keys and credentials beside FILE (directory
# auth/, by `compute nats-init`, once: its keys are kept) and the environment
# file of deploy/compose.yaml (default deploy/.env) with fresh random values,
# unless it already exists: the cluster route password, the seal key of the
# secrets service, COMPUTE_AUTH_DIR, the auth directory compose mounts, and
# COMPUTE_TLS_DIR, the TLS certificates of the stack (see below).
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

# TLS (every NATS connection of the stack): a CA and one certificate of the
# three nodes (clients and routes; SANs nats-1, nats-2, nats-3, localhost,
# 127.0.0.1) in tls/ next to the environment file, unless it exists:
#   tls/ca.pem                   the CA clients pin (--tls-ca, COMPUTE_NATS_CA)
#   tls/ca-key.pem               the CA key (mode 0600; never mounted)
#   tls/nats/{ca,cert,key}.pem   mounted into the NATS nodes
# tls/ is mode 0700: the key in tls/nats is world-readable for the
# container's user (65532), and only the owner can reach it on the host.
# Needs openssl (1.1.1 or later).
tls=$(cd "$(dirname "$out")" && pwd)/tls
if [ ! -e "$tls/ca.pem" ]; then
  command -v openssl >/dev/null || { echo "gen-env.sh: openssl is needed to make the TLS certificates" >&2; exit 1; }
  mkdir -p "$tls/nats"
  chmod 700 "$tls"
  chmod 755 "$tls/nats"
  (
    cd "$tls"
    umask 077
    openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -days 3650 \
      -subj "/CN=compute deploy CA" -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign" -keyout ca-key.pem -out ca.pem 2>/dev/null
    openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -subj "/CN=nats" \
      -keyout nats/key.pem -out nats/req.csr 2>/dev/null
    printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
      "extendedKeyUsage=serverAuth,clientAuth" \
      "subjectAltName=DNS:nats-1,DNS:nats-2,DNS:nats-3,DNS:localhost,IP:127.0.0.1" > nats/ext.cnf
    openssl x509 -req -in nats/req.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 825 \
      -extfile nats/ext.cnf -out nats/cert.pem 2>/dev/null
    rm -f nats/req.csr nats/ext.cnf ca.srl
    cp ca.pem nats/ca.pem
    chmod 644 ca.pem nats/ca.pem nats/cert.pem nats/key.pem
  )
  echo "wrote $tls (CA and the NATS nodes' certificate)"
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
  # the TLS directory above (compose mounts it; clients pin its ca.pem)
  echo "COMPUTE_TLS_DIR=$tls"
} > "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out (route password, seal key) and $auth (NATS operator keys and credentials)"
