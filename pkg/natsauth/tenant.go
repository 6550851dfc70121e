package natsauth

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// NewAccountKey is a fresh account public key (A…) for a new tenant; its
// seed is dropped at once (the issuer signs the tenant's users).
func NewAccountKey() (string, error) {
	kp, err := nkeys.CreateAccount()
	if err != nil {
		return "", err
	}
	return kp.PublicKey()
}

// TenantAccount signs the account JWT of tenant t: it imports each public
// verb of t.ID from the SERVICES account as a service and t.ID's events as
// a stream (nothing of another tenant), carries t.Limits, and revokes every
// credential revoked in t, or all of them when t is revoked.
func (a *Authority) TenantAccount(t api.Tenant) (string, error) {
	ac := jwt.NewAccountClaims(t.Account)
	ac.Name = t.ID
	for _, v := range api.Verbs {
		ac.Imports.Add(&jwt.Import{Name: v.Resource + "." + v.Verb, Subject: jwt.Subject(bus.Command(t.ID, v.Resource, v.Verb)),
			Account: a.Services, Type: jwt.Service})
	}
	ac.Imports.Add(&jwt.Import{Name: "events", Subject: jwt.Subject(bus.EventsOf(t.ID)), Account: a.Services, Type: jwt.Stream})
	ac.Limits.Conn = t.Limits.Connections
	ac.Limits.Subs = t.Limits.Subscriptions
	ac.Limits.Payload = t.Limits.PayloadBytes
	if t.Limits.JetStreamBytes > 0 {
		ac.Limits.JetStreamLimits = jwt.JetStreamLimits{DiskStorage: t.Limits.JetStreamBytes, Streams: jwt.NoLimit,
			Consumer: jwt.NoLimit, MaxAckPending: jwt.NoLimit, DiskMaxStreamBytes: jwt.NoLimit}
	}
	for _, c := range t.Credentials {
		if c.RevokedAt != nil {
			ac.RevokeAt(c.ID, *c.RevokedAt) // every JWT of that key issued until then
		}
	}
	if t.RevokedAt != nil {
		ac.RevokeAt(jwt.All, *t.RevokedAt)
	}
	return a.sign(ac)
}

// TenantUser mints a credential of tenant t with scopes (TenantPermissions).
func (a *Authority) TenantUser(t api.Tenant, name string, scopes []api.Scope) (creds []byte, pub string, err error) {
	return a.User(t.Account, t.ID+"/"+name, TenantPermissions(t.ID, scopes))
}

// SysUser mints a user of the SYS account that may only push account JWTs
// (ClaimsUpdate) and read its replies: the tenants service's second
// connection.
func (a *Authority) SysUser() (creds []byte, err error) {
	creds, _, err = a.User(a.Sys, "tenants-sys", jwt.Permissions{
		Pub: jwt.Permission{Allow: []string{ClaimsUpdate}},
		Sub: jwt.Permission{Allow: []string{bus.InboxRoot + ".>"}},
	})
	return creds, err
}

// ConnectSys connects as a fresh SysUser with o's server and TLS options
// (its credentials stay in memory). Errors: bus.Connect's.
func (a *Authority) ConnectSys(o bus.ConnectOptions) (*nats.Conn, error) {
	creds, err := a.SysUser()
	if err != nil {
		return nil, err
	}
	token, err := jwt.ParseDecoratedJWT(creds)
	if err != nil {
		return nil, err
	}
	kp, err := nkeys.ParseDecoratedNKey(creds)
	if err != nil {
		return nil, err
	}
	seed, _ := kp.Seed()
	o.User, o.Password, o.Token, o.CredsFile, o.NkeyFile = "", "", "", "", ""
	o.Name = "compute-tenants-sys"
	o.InboxPrefix = ""
	o.Extra = []nats.Option{nats.UserJWTAndSeed(token, string(seed))} // not the service user's own
	return bus.Connect(o)
}

// ClaimsUpdate is the system subject nats-server's full resolver takes an
// account JWT on: stored, applied to connected clients (a revocation closes
// their connections) and sent to every node of the cluster.
const ClaimsUpdate = "$SYS.REQ.CLAIMS.UPDATE"

// claimsReply is the resolver's answer to ClaimsUpdate.
type claimsReply struct {
	Data *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"data"`
	Error *struct {
		Code        int    `json:"code"`
		Description string `json:"description"`
	} `json:"error"`
}

// Push sends an account JWT to the resolver over sys, a connection of the
// SYS account (SysUser), and waits for its answer. Errors: UNAVAILABLE (no
// resolver answered, or it refused the JWT).
func Push(ctx context.Context, sys *nats.Conn, accountJWT string) error {
	msg, err := sys.RequestWithContext(ctx, ClaimsUpdate, []byte(accountJWT))
	if err != nil {
		return api.Errorf(api.CodeUnavailable, "push account JWT: %v", err)
	}
	var r claimsReply
	if err := json.Unmarshal(msg.Data, &r); err != nil {
		return api.Errorf(api.CodeUnavailable, "push account JWT: undecodable answer: %v", err)
	}
	if r.Error != nil {
		return api.Errorf(api.CodeUnavailable, "push account JWT: the resolver refused it: %d %s", r.Error.Code, r.Error.Description)
	}
	if r.Data == nil || r.Data.Code != 200 {
		return api.Errorf(api.CodeUnavailable, "push account JWT: unexpected answer %s", fmt.Sprint(r.Data))
	}
	return nil
}
