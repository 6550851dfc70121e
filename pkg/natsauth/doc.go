// Package natsauth runs NATS in operator mode for the compute control plane:
// it makes the operator, the accounts and the users (nkeys and JWTs), and is
// the one place that says who may publish and subscribe to what.
//
// Accounts (docs/architecture.md, "Tenancy"):
//
//	SYS       the system account (nats-server's $SYS subjects; the tenants
//	          service pushes account JWTs through it)
//	SERVICES  every service as its own user (Services) and the admin user;
//	          it exports each public verb compute.v1.*.<resource>.<verb> as a
//	          service and compute.v1.*.events.> as a stream
//	<tenant>  one account per tenant, importing only compute.v1.<tenant>.…;
//	          its users are the tenant's credentials, each with the publish
//	          permissions of its scopes (api.Allowed)
//
// Replies cross accounts only back to the importing account, so a tenant
// cannot aim a service's reply at another tenant's inbox.
//
// Keys: the operator's signing key signs every account JWT; one issuer key
// is the signing key of every account and signs every user JWT. Init writes
// both (mode 0600) with the operator, SYS and SERVICES JWTs, the services'
// credentials and the nats-server configuration include (ServerConf) into a
// directory; Load reads them back for the tenants service.
package natsauth
