// Package authtest proves deploy/nats.conf: its tests start a nats-server
// from that file (passwords from the environment, a random port, a
// temporary JetStream store), run every service as its own NATS user, and
// try, as one tenant, everything another tenant's users and the internal
// subjects must be safe from. It holds tests only.
package authtest
