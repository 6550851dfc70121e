// Package hetzner is the hetzner-cloud provider: it makes VPS on Hetzner
// Cloud through the official hcloud-go client, pointed at any endpoint that
// speaks the Hetzner Cloud API (the real one, or the emulator in ./emulator).
//
// Serve it with provider.Serve(nc, Definition(…), provider.ServeOptions{…}).
//
// Policies this provider owns (hcloud-go's own retries are off):
//   - every call resolves the account's token (config.token) for itself and
//     builds an hcloud client for that call only; the token is never cached;
//   - an instance's labels are server labels beside the system labels,
//     which no user label replaces and relabel keeps (see labels.go);
//   - create is idempotent through two server labels (see Labels) and
//     returns as soon as POST /servers is accepted (with a network to
//     join by ipRange, once attached): the reconciler's next get sees the
//     machine come up;
//   - power and reinstall wait for their action by polling
//     GET /actions?id=… every poll interval on the call's clock;
//   - the account's concurrent gets (with an idempotency key, as the
//     reconciler sends them) and action polls share requests (see
//     provider.Batcher, WithBatchWindow): one GET /servers?label_selector=…
//     page answers up to 50 gets, one GET /actions up to 25 polls; a server
//     a page leaves out is asked for alone, so only its 404 says it is gone;
//   - a create refused for a taken name (409 uniqueness_error) names the
//     holder (api.NameHolder) when it is a managed server, so the caller can
//     wait for a server being deleted to give the name up;
//   - every reply's RateLimit-* headers are reported (call.ObserveRateLimit),
//     429s included;
//   - 404 means absent, 429 is RATE_LIMITED with retryAfterMs from
//     RateLimit-Reset, 403 resource_limit_exceeded (the project's quota)
//     carries retryAfterMs QuotaRetryAfter, every other failure (including an unreachable API) is
//     PROVIDER_ERROR with details.status and details.code, and
//     details.permanent when the same request can never pass (400, 422
//     other than service_error, 409 uniqueness_error; see providerError);
//   - a pool's network (networks, firewalls, public_net; network.go) and
//     spread placement group (placement.go) travel in the one POST
//     /servers, and a location without capacity (412 resource_unavailable)
//     passes the same request to the pool's next location (create.go's
//     post): a create still makes one server per key; a network with an
//     ipRange is joined after it by attach_to_network with ip_range, and
//     the create answers only once attached (attachRanged); checkpool
//     (CheckPool) refuses at pools.create what the project cannot have.
package hetzner
