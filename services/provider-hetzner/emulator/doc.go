// Package emulator is a stateful, in-memory emulator of the Hetzner Cloud API
// (the subset a control plane needs: server types, locations, images,
// servers, server actions, change_type, server metrics and actions) for
// tests and local runs.
//
// The emulator serves the public API under /v1 with the real reply shapes,
// status codes, error bodies, pagination and rate-limit headers, so the
// official hcloud-go client can talk to it unchanged. A control API under
// /_emulator/ (and the matching Go methods) injects faults: failed calls,
// latency, hung calls, dropped responses, failed actions, catalogue changes,
// out-of-band drift and a rate-limit window closed until a reset.
//
// Actions (create, power, rebuild, change_type, delete) run for Options.ActionDuration on
// the emulator's clock and complete lazily: their effects are applied the
// next time any state is read, so no background goroutines are needed. A
// server being deleted keeps its name until its delete action ends.
//
// Where the real API's behaviour is not documented, the emulator makes a
// choice; such places say "Guess:" in their comments.
package emulator
