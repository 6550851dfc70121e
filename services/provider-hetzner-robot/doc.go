// Package robot is the hetzner-robot provider: it claims dedicated servers
// an operator rents at Hetzner (the Robot webservice) for pools of class
// metal-host or vps-host, through github.com/syself/hrobot-go pointed at
// any endpoint that speaks the webservice (the real
// https://robot-ws.your-server.de, or the emulator in ./emulator).
// Dedicated servers are rented, not created: "create" claims one, "delete"
// releases it, and nothing here ever cancels a rental.
//
// Serve it with provider.Serve(nc, Definition(…), provider.ServeOptions{…}).
//
// Verbs, as this provider answers them (machine id: the server number):
//   - offers: the account's servers free to claim (no server name), one
//     offer per server, id the server number, then one per product,
//     with the product and data centre (GET /server) and the product's
//     CPU, memory, disks and gross monthly price (GET
//     /order/server/product/{id}, once per product; products.go);
//   - create: claim the server the spec's offerId names. Its Robot server
//     name is the claim: ClaimPrefix + the idempotency key. A server
//     without a name is named so (POST /server/{n}); one already named so
//     is the same claim (idempotent); one with any other name is not
//     ours: ACCESS_DENIED (permanent), and it is never touched;
//   - get, list: the claimed servers (named with ClaimPrefix); get reads
//     the power from GET /reset/{n} (operating_status), list says running
//     (one request for every server). Neither tells the rescue from the
//     installed system (the webservice does not say); the bootstrap tells
//     them apart over SSH by hostname;
//   - power: Robot resets (PowerResetTypes); graceful-off and nmi are
//     UNSUPPORTED (the webservice cannot reach the OS);
//   - reinstall: boot the rescue system: store the account's SSH public
//     key (POST /key; one already stored is found by its fingerprint),
//     arm the rescue system with it (DELETE then POST /boot/{n}/rescue
//     os=linux authorized_key=<md5 fingerprint>) and reset (hw, or sw
//     where hw is not offered). The image is installed afterwards over SSH
//     by the bootstrap sequence (package bootstrap), which calls this;
//   - delete: release: disarm the rescue system and clear the server name.
//     delete.byKey releases every server claimed with the key.
//
// Rate limits: every reply of the server endpoints (GET /server, GET/POST
// /server/{n}: 200 requests an hour) is observed as the account's rate
// limit from this process's own count of them (budget.go; Robot reports
// no remaining count), so the reconciler paces an account's passes
// within the 200.
//
// Errors (errors.go, mapFailure): 403 RATE_LIMIT_EXCEEDED is RATE_LIMITED
// with retryAfterMs = the error's interval (the webservice gives no reset
// time, Guess: its window may have just started), for the caller only
// (the limits are per endpoint); 403 BLOCKED (the address is blocked after repeated
// bad logins; Guess, see the emulator) is RATE_LIMITED with its
// blocked_for, else BlockRetryAfter, and observed as the account's rate
// limit spent until then (reply headers: the reconciler holds the whole
// account); 404 SERVER_NOT_FOUND of a claimed
// server is absence; every other failure is PROVIDER_ERROR with
// details.status and details.code (permanent for 400 INVALID_INPUT and
// 401 UNAUTHORIZED is not: a password can be fixed). Every call resolves
// the webservice user and password (config.user, config.password) for
// itself; neither is cached nor appears in an error.
package robot
