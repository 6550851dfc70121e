// Package conformance is the provider conformance program: one set of
// behaviours every provider must clear, checked only through the
// provider's bus subjects (compute.internal.provider.<id>.<verb>), so a
// provider written in any language can be certified.
//
// The behaviours form a frozen, append-only registry (Registry): each has
// a stable id ("life.create.retry-same-key"), an area, a title, the
// profiles it belongs to (core, cloud, faults, durable, transport,
// secrets, scale) and the capability it needs. A Subject names the
// provider, the bus connection, an account (secret references only), an
// offer and image create accepts, and optional hooks into the backend
// (Faults, Inventory) and the service (Service).
//
// Certify runs every behaviour and returns a Report (report.json and
// junit.xml); Run does the same from a Go test, one subtest per
// behaviour. A behaviour outside the claimed profiles, or needing a
// capability the provider does not claim, is SKIPPED; a claimed
// capability is always verified. The verdict is FAILED if a required
// behaviour failed, INCOMPLETE if one could not run, CERTIFIED otherwise.
//
// Package conformance/fake starts credential-free subjects in-process
// (embedded NATS, an emulator, the provider and secrets services).
package conformance
