// Package proxmox is the proxmox provider: it makes VPS by full-cloning
// QEMU templates on an operator's own Proxmox VE cluster, through the
// Telmate proxmox-api-go client pointed at the cluster's API (the real one,
// or the emulator in ./emulator, which speaks the same HTTP API).
//
// Serve it with provider.Serve(nc, Definition(…), provider.ServeOptions{…}).
//
// Policies this provider owns:
//   - every call resolves the account's token secret (config.tokenSecret)
//     for itself and builds a Telmate client for that call only (debug off);
//     the secret is never cached, logged or put in an error;
//   - the Telmate client is the transport through its raw calls only (POST
//     and PUT); GET and DELETE are sent with the same HTTP client, because
//     Telmate's GET helpers sleep ignoring the context and its DELETE drops
//     the UPID (see api.go); its task waiting, StatusChangeVm and GetNextID
//     are never used;
//   - an instance's labels are tags, one per label ("<key>+<value>"
//     lower-cased, the key's "/" written "+"; lossy in case only), beside
//     the template's tags and better-compute, which every write keeps;
//     reading back, tags holding '+' that parse are labels (see labels.go);
//   - a machine id is a VMID. Create is idempotent through it: the key
//     hashes to a slot in [vmidMin, vmidMax], up to MaxProbes slots are
//     probed, and the clone's description records the key (see Create);
//   - GET /cluster/resources only says where VMs are (vmid, node, type,
//     and the config's lock and tags): PVE serves names, statuses and
//     template flags there from data pvestatd refreshes about every 10 s,
//     so a VMID reused moments ago shows its old occupant. Whose a VM is,
//     whether it is a template and whether it runs are read from the VM
//     (its config, its status/current), never from the list alone. A
//     create reads the list once, unfiltered: its nodes and storages
//     (as fresh as GET /nodes, from the same RRD cache) place the clone,
//     and concurrent creates of the account share one read
//     (WithTaskBatchWindow);
//   - a VM is this system's when it carries the better-compute tag (in any
//     case and separator) and an idempotency-key line in its description;
//     delete, power and reinstall refuse other VMs with ACCESS_DENIED, get
//     answers them absent and list skips them, so shared clusters are safe;
//     templates are never machines;
//   - the tag is the last change of a create (and of a reinstall): set
//     after configuration, resize and start succeed, so list and get
//     never show a half-configured clone as a machine. Until then the key
//     line alone makes the clone its key's, for the create with that key
//     only: the clone request writes it (PVE's clone takes a description,
//     not tags), so from the moment the VM exists a retried create finds
//     it in the key's slots, finishes it and tags it. Until the tag, the
//     description also names the clone's template (a line
//     "better-compute.io/clone-of=<vmid>", dropped with the tag): a
//     create that finds a settled half-made clone of another template
//     than it asks for (a failed reinstall's new image) destroys it and
//     clones its own image instead of finishing it. The image a create
//     asks for is the instance's, which a failed reinstall leaves
//     unchanged, so the machine runs what the record names; the old disk
//     is gone either way, the reinstall reads Failed, and asking for it
//     again installs the new image. A clone still in progress (a
//     concurrent create or reinstall of the key) is waited for and
//     finished, as before.
//     The reconciler
//     deletes an instance whose create answer it never recorded by
//     creating with the key first, so a crash at any step of a create
//     leaves neither a duplicate nor a leaked VM;
//   - a create's configuration is one synchronous PUT …/config (no task),
//     written against the clone's config as derived from the template's,
//     which the create reads anyway (clonedConfig), not read again; the
//     account keeps a confirmed template's config (templateCache: while
//     the cluster list shows the template unchanged, at most 10 minutes,
//     until a clone from it fails or its clone has no guest agent), and
//     a create from the kept config writes every key it manages whole but
//     never net0: one that may have to write net0 (the pool's bridge or
//     VLAN) reads the template's config;
//   - a create answers a DHCP VM with the guest agent running, with one
//     agent request's addresses (or addresses pending), as get would, so
//     the reconciler looks at it no more; other VMs pending;
//   - every task (clone, resize, start, stop, shutdown, reset,
//     reboot, destroy) is waited for by polling it on the call's clock,
//     within the task timeout and the call's context: every task poll
//     interval when one is set (account config taskPollMs over the
//     option WithTaskPollInterval), else when a task of its type is
//     expected to end (taskPacer); the timeout is taskTimeoutMs over
//     WithTaskTimeout. Concurrent waits of the account share the node's
//     task list (GET /nodes/{node}/tasks, WithTaskBatchWindow); a task the
//     list leaves out is polled alone (…/tasks/{upid}/status). OK
//     and "WARNINGS: N" are success, any other exit status is
//     PROVIDER_ERROR with the exit status as details.code;
//   - no request is ever repeated by the provider (the reconciler owns
//     retries), so reset and reboot are never sent twice;
//   - errors: a missing VM is NOT_FOUND (absent for get), reset or reboot
//     of a VM that is not running INVALID_STATE, everything else PVE
//     answers PROVIDER_ERROR with details.status (HTTP status) and
//     details.code (see failureRules; 401 unauthorized, 403 forbidden, 595
//     node_unreachable), details.permanent on a 400 or 422 (the request
//     itself is refused: it can never pass), the message read from the
//     body or, before PVE 8.3, the HTTP reason phrase; an unreachable API (TLS failures
//     included) PROVIDER_ERROR status 0 code unreachable; a panic on an
//     unexpected reply PROVIDER_ERROR;
//   - offers are the account's sizes, in one region: the pinned node's
//     name, else "proxmox";
//   - a pool's network reaches net0 (bridge= and tag=) and cloud-init
//     (ipconfig0 ip=<address>/<len>,gw=<gateway> and nameserver for the
//     machine's static address, which the control plane allocates; else
//     ip=dhcp); a reinstall keeps them (network.go);
//   - a clone lands on the allowed node (pool placement.nodes, else the
//     pinned node, else every node) with the most free memory that holds
//     it, another node than the template's only when the template's disks
//     are on shared storage; none: CAPACITY_UNAVAILABLE placement.nodes,
//     nothing made (placement.go);
//   - checkpool refuses at pool create what the cluster lacks: a node, a
//     bridge of an allowed node, a flavor's storage (poolcheck.go).
package proxmox
