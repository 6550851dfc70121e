// Package console is the web console of the compute control plane
// (`compute serve console`, and `compute up --console-addr`): server-rendered
// pages of one tenant's fleet, live over Server-Sent Events.
//
// Policies this package owns:
//
//   - Identity. The console holds no NATS identity of its own for tenant
//     data. Signing in opens one NATS connection with a credential of the
//     tenant (the text of its .creds file, pasted into the sign-in form
//     or loaded from the file: a user of the tenant's NATS account) with
//     the tenant's inbox prefix _INBOX_<tenant>; every page of that
//     session is read over that connection and its subjects
//     (compute.v1.<tenant>.…) only, so nats-server keeps enforcing the
//     isolation of tenants.
//   - Sessions live in memory (a restart signs everyone out). The cookie
//     (SessionCookie) is HttpOnly and SameSite=Strict (Secure behind TLS)
//     and holds a random 256-bit token, never a credential; only the
//     session's connection keeps the credentials (to reconnect). A session ends at sign-out or
//     after Options.IdleTimeout without a page request (the event stream
//     and the live refreshes do not count as activity); its connection closes with it.
//   - Every POST carries a CSRF token: the session's, or before sign-in a
//     random one set as a cookie and echoed by the form (double submit).
//   - Sign-in checks the credentials with one instances list of the tenant:
//     another tenant's credential connects, but nats-server refuses it the
//     tenant's subjects (ACCESS_DENIED).
//   - Live updates: the session follows the tenant's instance events
//     (compute.v1.<tenant>.events.instances.>, client Watch; the only
//     events published); /events streams each to the browser, whose
//     script re-reads the page's main section (no reload). The events
//     timeline of an instance shows the events this session received
//     (at most EventBufferSize per session): tenants may not read the
//     COMPUTE_EVENTS stream.
//   - Cost (Cost): an instance costs from when its machine exists until it
//     is gone, on or off (Hetzner Cloud bills stopped servers): the price
//     per hour of the offer its flavor names, on its pool's account; per
//     month, api.HoursPerMonth (730) times that (offers carry no monthly
//     cap). Instances whose offer has no price (Proxmox) are counted
//     apart, never as free.
//   - Errors render the ComputeError's code and message; the console
//     renders no secret value (account configs hold references only, and
//     the console shows no config).
package console
