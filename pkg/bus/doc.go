// Package bus is the NATS layer every service shares: subject names, the
// request/reply convention (JSON replies; failures as micro error headers plus
// a {"error":{…}} body), a client helper that turns a reply back into an
// api.ComputeError, micro services whose handlers run on a bounded worker
// pool with the caller's deadline (the micro protocol spoken here, so that
// $SRV.STATS counts error replies and the time until the reply), JetStream
// KV/stream setup, and an embedded nats-server for `compute up` and tests.
package bus
