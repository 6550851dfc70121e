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
// Actions (create, power, rebuild, change_type, attach_to_network, delete) run for Options.ActionDuration on
// the emulator's clock and complete lazily: their effects are applied the
// next time any state is read, so no background goroutines are needed. A
// server being deleted keeps its name until its delete action ends.
//
// POST /servers takes "networks", "firewalls", "placement_group" and
// "public_net" (netcreate.go): a server gets an address in each network's
// first subnet of its location's zone with a free address, the firewalls
// applied, its group, and no public IPv4/IPv6 when public_net disables it
// (null in replies, "" in ServerSnapshot, no Primary IP). POST
// /servers/{id}/actions/attach_to_network {network, ip?, ip_range?}
// (attach.go) joins a network later, through the subnet ip_range names.
// It enforces what the API does: a spread group holds
// MaxPlacementGroupServers (10; the 11th create answers
// placement_group_member_limit_reached), a network needs a subnet in the
// location's network zone (no_subnet_available), a server needs a public
// IP or a network, firewalls need a public interface
// (private_net_only_server), a server joins a network once
// (server_already_attached), one action at a time (423 locked).
// SetLocationFull (control: POST /_emulator/location-full) makes a
// location answer 412 resource_unavailable to every create, as one out of
// capacity does.
//
// Guesses of this part, where ../shared/reference/hetzner-cloud-api.md
// calls a behaviour Unconfirmed or is silent (each is also marked at its
// code):
//
// Networks and subnets:
//   - Guess: all subnets of a network in one zone (the FAQ) is enforced
//     by refusing a second zone as 422 invalid_input naming
//     subnets[i].network_zone; an unknown zone, a bad type, a range
//     outside the network or overlapping another subnet are 422
//     invalid_input naming the subnet's field; a subnet needs its
//     ip_range (the API's "first free /24" default is not modelled).
//   - Guess: a taken network name is 409 uniqueness_error.
//   - Guess: a cloud subnet's gateway is the network's first address.
//   - Guess: addresses are handed out from a subnet's second address up,
//     never its last; the network's first address is never handed out.
//   - Guess: POST /servers "networks" attaches through the first subnet
//     (in subnet order) of the location's zone that has a free address;
//     a network with none there answers 422 no_subnet_available, as
//     attach_to_network does; a network listed twice answers 422
//     server_already_attached.
//   - Guess: unknown network, firewall or placement group ids in POST
//     /servers are 422 invalid_input naming the field.
//
// attach_to_network:
//   - Guess: an unknown network, an ip_range that is not exactly one of
//     the network's subnets, or a malformed ip are 422 invalid_input
//     naming the field; a taken ip, the gateway or one outside the
//     subnets the server may join is 422 ip_not_available.
//   - Guess: a server with a running action (its create, another attach)
//     answers 423 locked.
//   - Guess: private_net lists the new address at once (as the POST
//     /servers reply lists networks its attach_to_network next actions
//     join); a failed action (FailNextAction("attach_to_network", …))
//     takes it back.
//   - Guess: alias_ips are accepted and not kept.
//
// Firewalls:
//   - Guess: a taken firewall name is 409 uniqueness_error.
//   - Guess: firewalls show status "applied" at once (the apply_firewall
//     action is not modelled); POST /firewalls apply_to is not served.
//   - Guess: firewalls on a server without public IPv4 and IPv6 at create
//     answer 422 private_net_only_server, as applying one does.
//   - Rules are kept as sent; only their direction is checked (the
//     limits of 50 rules, 100 IPs a rule, 5 firewalls a server are not
//     enforced).
//
// Public IPs and Primary IPs:
//   - Guess: POST /servers without public IPv4, IPv6 and network answers
//     422 invalid_input naming public_net (the CLI refuses it before
//     calling; the API's answer is Unconfirmed).
//   - Guess: auto-made Primary IPs are named "primary_ip-<id>", have
//     auto_delete true, ids that follow from their server's, and GET
//     /primary_ips ignores its filters.
//
// Placement groups:
//   - Guess: a spread group's servers share one location (third-party
//     guides); a create in another answers 422 placement_error.
//   - Guess: the 11th server of a group is refused with status 422 (the
//     code and message are the API's; the status is Unconfirmed).
//   - Guess: a taken group name is 409 uniqueness_error; DELETE of a group
//     with servers answers 422 resource_in_use, as a firewall in use does.
//   - Guess: the group embedded in a server shows its id and type only.
//   - Guess: SetLocationFull leaves the catalogue showing the location as
//     available, as the real catalogue does not follow capacity moment by
//     moment.
//
// Where the real API's behaviour is not documented, the emulator makes a
// choice; such places say "Guess:" in their comments.
package emulator
