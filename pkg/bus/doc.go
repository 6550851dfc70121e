// Package bus is the NATS layer every service shares: subject names, the
// request/reply convention (JSON replies; failures as micro error headers plus
// a {"error":{…}} body), a client helper that turns a reply back into an
// api.ComputeError, micro services whose handlers run on a bounded worker
// pool with the caller's deadline (the micro protocol spoken here, so that
// $SRV.STATS counts error replies and the time until the reply), JetStream
// KV/stream setup, typed record tables, and an embedded nats-server for
// `compute up` and tests.
//
// Policies this package owns:
//   - Records live in KV buckets under RecordKey(tenant, id) =
//     "<tenant>.<id>", read and written only through a Table[T]: the key
//     format, the compare-and-set loop (Mutate, MutateAt, Remove, with
//     CASAttempts tries) and the error codes are here and nowhere else. A
//     lost compare-and-set is ALREADY_EXISTS (create) or CONFLICT (update,
//     delete) whichever JetStream code reports it (conflictError); a list
//     holds every record written before it, on a replicated bucket too
//     (consistentKeys).
//   - A list that must not cost O(inventory) is answered from an Index: a
//     table's records (a view of each) kept in memory from one ordered
//     watch of the bucket, sorted by id per tenant and per facet, and
//     caught up to the stream leader's last sequence before each list, so
//     it keeps List's guarantee; a page's records are read from the bucket.
//   - Each bucket has one owner, the only service that writes it; the
//     others read through the table's Reader. compute_secrets: secrets;
//     compute_accounts and compute_pools: accounts (read by the reconciler,
//     and accounts by secrets); compute_instances: the reconciler (read by
//     accounts); compute_idempotency: the service of each endpoint whose
//     records it holds (secrets-put, instances-create). See tables.go.
//   - Endpoints are named EndpointName(resource, verb) = "<resource>-<verb>".
//   - Every service's list verbs answer a tenant at its quotas.concurrentLists
//     or quotas.listsPerSecond RATE_LIMITED before taking a worker
//     (ServiceConfig.Quotas), and a service's workers are shared
//     tenant-fair (fairpool.go); the
//     tenants' quotas are followed from a watch of compute_tenants
//     (quotas.go, Stores.Quotas).
package bus
