package natsauth

import (
	"github.com/nats-io/jwt/v2"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// User names of the SERVICES account: one per service (the name `compute
// serve` takes), and the operator's admin user.
const (
	UserAdmin           = "admin"
	UserSecrets         = "secrets"
	UserAccounts        = "accounts"
	UserReconciler      = "reconciler"
	UserTenants         = "tenants"
	UserProviderHetzner = "provider-hetzner"
	UserProviderProxmox = "provider-proxmox"
	UserPoolctl         = "poolctl"
	// UserProviderHetznerRobot is the hetzner-robot provider's user.
	UserProviderHetznerRobot = "provider-hetzner-robot"
)

// AdminRoot prefixes the operator-only subjects of the SERVICES account
// (compute.admin.tenants.<verb>): no tenant account imports them.
const AdminRoot = "compute.admin"

// noStreamRemoval keeps a service from deleting or purging a stream or a
// message behind the KV layer's back.
var noStreamRemoval = []string{"$JS.API.STREAM.DELETE.>", "$JS.API.STREAM.PURGE.>", "$JS.API.STREAM.MSG.DELETE.>"}

// watermark is the publish permission on the high-water mark of bucket
// (bus.WatermarkKey), which only the bucket's owner writes.
func watermark(bucket string) string {
	return "$KV." + bus.BucketWatermarks + "." + bus.WatermarkKey(bucket)
}

// Every service: the JetStream API (it creates its buckets and streams at
// start-up and reads through them) but never removing a stream or a message;
// the marks of its own buckets; micro discovery ($SRV); its own inbox
// (_INBOX_svc_<service>, `compute serve` uses it); and replies to the
// requests it receives. Each may ping its own micro service (the container
// health check, `compute health --service <service>`, runs as that user).
// Providers keep no state (no JetStream) and answer only their own
// provider id's subjects, so one provider never sees another's accounts.
var services = map[string]jwt.Permissions{
	UserSecrets: servicePerms(
		[]string{"$JS.API.>", "$KV." + bus.BucketSecrets + ".>", "$KV." + bus.BucketIdempotency + ".*.secrets-put.*",
			watermark(bus.BucketSecrets), "$SRV.PING.secrets"}, noStreamRemoval,
		[]string{"compute.v1.*.secrets.*", "compute.internal.secrets.resolve", "compute.internal.secrets.check",
			"compute.internal.secrets.rekey", "$SRV.>", "_INBOX_svc_secrets.>"}),
	UserAccounts: servicePerms(
		[]string{"$JS.API.>", "$KV." + bus.BucketAccounts + ".>", "$KV." + bus.BucketPools + ".>", "$SRV.PING.accounts",
			watermark(bus.BucketAccounts), watermark(bus.BucketPools),
			// references are checked, never resolved: accounts never holds a value
			bus.SecretsCheck,
			"compute.internal.provider.*.describe", "compute.internal.provider.*.offers",
			// pools.create asks the account's provider whether it can have the pool
			"compute.internal.provider.*.checkpool"}, noStreamRemoval,
		[]string{"compute.v1.*.accounts.*", "compute.v1.*.pools.*", "compute.v1.*.providers.*", "$SRV.>", "_INBOX_svc_accounts.>"}),
	UserReconciler: servicePerms(
		[]string{"$JS.API.>", "$JS.ACK.COMPUTE_WORK.>", "$KV." + bus.BucketInstances + ".>", "$SRV.PING.reconciler",
			"$KV." + bus.BucketIdempotency + ".*.instances-create.*", watermark(bus.BucketInstances),
			// static addresses of pools' network.addresses, claimed and released
			"$KV." + bus.BucketAddresses + ".>",
			// the tenants' instance counts under their quotas (services/reconciler/usage.go)
			"$KV." + bus.BucketUsage + ".>",
			bus.WorkRoot + ".>",
			// the only publisher of events: nobody else can forge a status change
			bus.EventsOf("*"),
			"compute.internal.provider.*.create", "compute.internal.provider.*.get",
			"compute.internal.provider.*.delete", "compute.internal.provider.*.power",
			"compute.internal.provider.*.reinstall", "compute.internal.provider.*.list",
			"compute.internal.provider.*.relabel",
			"compute.internal.provider.*.resize", "compute.internal.provider.*.metrics",
			// machine access: the pool's private key, resolved per use
			"compute.internal.secrets.resolve"}, noStreamRemoval,
		// accounts.bootstrap: the sequence it starts is an instance's
		[]string{"compute.v1.*.instances.*", "compute.v1.*.accounts.bootstrap", "$SRV.>", "_INBOX_svc_reconciler.>"}),
	// poolctl: its own bucket, reads of the pools (a KV watch), the instance
	// API as a client of every tenant, and the instance events it reacts to
	UserPoolctl: servicePerms(
		[]string{"$JS.API.>", "$KV." + bus.BucketPoolControl + ".>", watermark(bus.BucketPoolControl), "$SRV.PING.poolctl",
			"compute.v1.*.instances.create", "compute.v1.*.instances.list", "compute.v1.*.instances.delete",
			"compute.v1.*.instances.get"}, noStreamRemoval,
		[]string{bus.EventsOf("*"), "$SRV.>", "_INBOX_svc_poolctl.>"}),
	// tenants: its own bucket and the operator-only subjects; the account
	// JWTs it pushes go through its SYS connection (SysUser)
	UserTenants: servicePerms(
		[]string{"$JS.API.>", "$KV." + bus.BucketTenants + ".>", watermark(bus.BucketTenants), "$SRV.PING.tenants"}, noStreamRemoval,
		[]string{AdminRoot + ".tenants.*", "$SRV.>", "_INBOX_svc_tenants.>"}),
	UserProviderHetzner: servicePerms(
		[]string{bus.SecretsResolve, "$SRV.PING.provider-hetzner-cloud"}, nil,
		[]string{"compute.internal.provider.hetzner-cloud.>", "$SRV.>", "_INBOX_svc_provider-hetzner.>"}),
	UserProviderProxmox: servicePerms(
		[]string{bus.SecretsResolve, "$SRV.PING.provider-proxmox"}, nil,
		[]string{"compute.internal.provider.proxmox.>", "$SRV.>", "_INBOX_svc_provider-proxmox.>"}),
	UserProviderHetznerRobot: servicePerms(
		[]string{bus.SecretsResolve, "$SRV.PING.provider-hetzner-robot"}, nil,
		[]string{"compute.internal.provider.hetzner-robot.>", "$SRV.>", "_INBOX_svc_provider-hetzner-robot.>"}),
}

// servicePerms is a service user's permissions: publish pub but not deny,
// subscribe sub, and reply to the requests it receives.
func servicePerms(pub, deny, sub []string) jwt.Permissions {
	return jwt.Permissions{
		Pub:  jwt.Permission{Allow: pub, Deny: deny},
		Sub:  jwt.Permission{Allow: sub},
		Resp: &jwt.ResponsePermission{MaxMsgs: 1},
	}
}

// Services lists the service users of the SERVICES account (each with
// ServicePermissions), sorted.
func Services() []string {
	return []string{UserAccounts, UserPoolctl, UserProviderHetzner, UserProviderHetznerRobot, UserProviderProxmox, UserReconciler,
		UserSecrets, UserTenants}
}

// ServicePermissions are the permissions of the SERVICES account's user
// name (one of Services), and whether it is one.
func ServicePermissions(name string) (jwt.Permissions, bool) {
	p, ok := services[name]
	return p, ok
}

// TenantPermissions are the permissions of a tenant credential holding
// scopes: publish the verbs of its tenant the scopes allow (api.Allowed),
// subscribe to the tenant's events and to its inbox _INBOX_<tenant>, the
// prefix the compute CLI uses (nats.CustomInboxPrefix for other clients).
// A credential cannot subscribe to its tenant's commands, so one credential
// never reads another's requests (a secret value being put).
func TenantPermissions(tenant string, scopes []api.Scope) jwt.Permissions {
	pub := jwt.Permission{Deny: []string{">"}} // no scope: nothing (an empty allow list would allow all)
	if allowed := api.Allowed(scopes); len(allowed) > 0 {
		pub = jwt.Permission{}
		for _, v := range allowed {
			pub.Allow = append(pub.Allow, bus.Command(tenant, v.Resource, v.Verb))
		}
	}
	return jwt.Permissions{
		Pub: pub,
		Sub: jwt.Permission{Allow: []string{bus.EventsOf(tenant), bus.InboxRoot + "_" + tenant + ".>"}},
	}
}
