// Package metrics is the one Prometheus registry of a compute process and
// the metrics every service records on it (docs/operations.md lists them
// with their labels and example alerts).
//
// Policies this package owns:
//   - One registry per process (Registry), served by Handler on the
//     address of --metrics-addr (Serve); nothing registers on
//     prometheus.DefaultRegisterer.
//   - Every name starts with compute_ and carries its unit (_seconds,
//     _total for counters).
//   - Label values come from bounded sets only: service and endpoint
//     names, ComputeError codes, HTTP statuses, provider ids, route
//     templates (Route: never a raw id), instance phases, condition types
//     and reasons. The one label from tenant data is account (a provider
//     account id, one series per account the reconciler paces: bounded
//     by the accounts the operator's tenants register). No label ever
//     holds a secret value or a secret reference, a tenant id, an
//     instance id or a concrete subject.
//   - Recording never fails and never blocks on I/O: counters and
//     histograms are updated in place; sampled values (queue depth,
//     instances by phase, rate-limit budgets) are read by their owner's
//     collector at scrape time.
package metrics
