// Package composetest proves deploy/compose.yaml on a Docker engine: it
// starts the stack (a three-node NATS cluster, every service, the
// emulators) from the images of `make images`, runs the README walkthrough
// from the host with the compute CLI, then loses a NATS node and a
// reconciler under load, restarts every service one by one under load,
// restarts the whole cluster, and measures convergence with one and with
// three reconciler replicas. It holds tests only, and they run only when
// COMPUTE_COMPOSE_TEST=1 (`make test-compose`) and a Docker engine answers,
// so `make test` stays fast and runnable anywhere.
package composetest
