// Package emulator is a stateful, in-memory emulator of the Hetzner Cloud API
// (the subset a control plane needs: server types, locations, images,
// servers, server actions, change_type, server metrics and actions;
// networks with subnets, firewalls, spread placement groups and the
// Primary IPs of servers) for tests and local runs.
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
// POST /servers takes "networks", "firewalls", "placement_group" and
// "public_net" (netcreate.go): a server gets an address in each network's
// first subnet of its location's zone, the firewalls applied, its group,
// and no public IPv4/IPv6 when public_net disables it (null in replies,
// "" in ServerSnapshot, no Primary IP). It enforces what the API does: a
// spread group holds MaxPlacementGroupServers (10; the 11th create answers
// placement_group_member_limit_reached) of one location (another answers
// placement_error; Guess, from third-party guides), a network needs a subnet in the
// location's network zone (no_subnet_available), a server needs a public
// IP or a network, firewalls need a public interface
// (private_net_only_server). SetLocationFull (control: POST
// /_emulator/location-full) makes a location answer 412
// resource_unavailable to every create, as one out of capacity does.
// Guesses of this part (the reference ../shared/reference/hetzner-cloud-api.md
// calls them Unconfirmed or is silent): the statuses of those refusals at
// create (422 each), unknown network, firewall or group ids as 422
// invalid_input naming the field, taken names of networks, firewalls and
// groups as 409 uniqueness_error, a group with servers refusing DELETE
// with 422 resource_in_use, a cloud subnet's gateway being the network's
// first address, addresses handed out from a subnet's second address up,
// firewalls shown "applied" at once, auto-made Primary IPs named
// "primary_ip-<id>" with auto_delete true.
//
// Where the real API's behaviour is not documented, the emulator makes a
// choice; such places say "Guess:" in their comments.
package emulator
