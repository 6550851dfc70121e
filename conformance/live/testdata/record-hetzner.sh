#!/bin/sh
# Records conformance/live/testdata/hetzner-cloud afresh: a live
# core,cloud,faults,durable,scale run against the Hetzner emulator standing
# in for the real API. Run it from anywhere after a change to the registry
# or to the requests the provider sends (TestShippedRecordingReplays then
# names the first request the old recording lacks). Uses loopback port
# 4680 (ADDR=host:port to move it).
set -eu
cd "$(dirname "$0")/../../.."
addr=${ADDR:-127.0.0.1:4680}
out=conformance/live/testdata/hetzner-cloud
go build -o bin/compute ./cmd/compute
bin/compute emulator hetzner --addr "$addr" --action-duration 100ms --rate-limit 1000000 &
emu=$!
trap 'kill $emu 2>/dev/null || true' EXIT
sleep 1
rm -rf "$out.new"
HCLOUD_TOKEN=recording-token bin/compute certify --provider hetzner-cloud --live \
  --config '{"token":"env://HCLOUD_TOKEN"}' --offer cx23 --image ubuntu-24.04 \
  --profile core,cloud,faults,durable,scale --api-url "http://$addr/v1" --poll-interval 25ms \
  --record "$out.new" --report "$out.new.report"
rm -rf "$out" "$out.new.report"
mv "$out.new" "$out"
