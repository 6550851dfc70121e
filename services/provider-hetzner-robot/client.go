package robot

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/syself/hrobot-go/models"
	"golang.org/x/crypto/ssh"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// client is the provider client of one account.
type client struct {
	s *settings
	// claims serializes this account's claims in this process: the
	// webservice has no compare-and-set on server names, so two claims
	// of one free server would both seem to win. Replicas of the provider
	// do not share it (docs: one provider replica per Robot account, or
	// claims by server number only).
	claims sync.Mutex
	// keyLine, keyFP: the account's SSH public key and its MD5
	// fingerprint as Robot names keys.
	keyLine, keyFP, keyName string
}

var (
	_ provider.Powerer     = (*client)(nil)
	_ provider.Reinstaller = (*client)(nil)
	_ provider.Lister      = (*client)(nil)
	_ provider.KeyDeleter  = (*client)(nil)
)

func newClient(s *settings, acct api.ProviderAccount) (*client, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	line, _ := acct.Config[FieldSSHPublicKey].(string)
	pub, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil {
		return nil, api.InvalidConfig("config."+FieldSSHPublicKey, "sshPublicKeyLine must be an OpenSSH public key (authorized_keys line)")
	}
	name, _ := acct.Config[FieldKeyName].(string)
	if name == "" {
		name = DefaultKeyName
	}
	return &client{s: s, keyLine: strings.TrimSpace(line), keyFP: ssh.FingerprintLegacyMD5(pub), keyName: name}, nil
}

// ClaimName is the Robot server name of a server claimed with key.
func ClaimName(key string) string { return ClaimPrefix + key }

// serverNumber parses a machine or offer id. Errors: INVALID_INPUT at path.
func serverNumber(id, path string) (int, error) {
	n, err := strconv.Atoi(id)
	if err != nil || n <= 0 || strconv.Itoa(n) != id {
		return 0, api.InvalidInput(path, "%s must be a Robot server number", path)
	}
	return n, nil
}

// machine is srv as an ExternalMachine (sshPort: the emulator's, or "").
func machine(srv *models.Server, sshPort string) *api.ExternalMachine {
	m := &api.ExternalMachine{ID: strconv.Itoa(srv.ServerNumber), Name: srv.Name, State: api.StateRunning,
		OfferID: srv.Product, Region: region(srv.Dc), Addresses: []string{}}
	if key, ok := strings.CutPrefix(srv.Name, ClaimPrefix); ok {
		m.IdempotencyKey, m.Name = key, key // the claim names the machine: its Robot name holds nothing else
	}
	if srv.ServerIP != "" {
		m.Addresses = append(m.Addresses, srv.ServerIP)
	}
	if srv.ServerIPv6Net != "" {
		m.Addresses = append(m.Addresses, srv.ServerIPv6Net+"1") // the host address of the /64, as CAPH uses it
	}
	if srv.Status != "ready" {
		m.State = api.StatePending // "in process": being handed over
	}
	m.SSHEndpoint = api.EmulatorSSHEndpoint(sshPort) // emulator-only
	return m
}

// ListOffers is the account's servers free to claim (no server name),
// one offer per server (id: its number), then one per product of them
// (id: the product, e.g. "EX44"), with the product's CPU, memory, disks
// and monthly price from the order endpoint (GET /server, then GET
// /order/server/product/{id} once per product).
func (c *client) ListOffers(ctx context.Context, call *provider.Call, q api.OfferQuery) ([]api.Offer, error) {
	s, err := c.newSession(ctx, call)
	if err != nil {
		return nil, err
	}
	servers, err := s.api.ServerGetList()
	if isCode(err, models.ErrorCodeServerNotFound) {
		return []api.Offer{}, nil // an account without servers
	}
	if err != nil {
		return nil, s.classify(ctx, call, err)
	}
	products, err := s.products(servers)
	if err != nil {
		return nil, s.classify(ctx, call, err)
	}
	out, byProduct := []api.Offer{}, []api.Offer{}
	seen := map[string]bool{}
	for _, srv := range servers {
		if !free(&srv) {
			continue
		}
		p, known := products[srv.Product]
		if o := offer(strconv.Itoa(srv.ServerNumber), &srv, p, known); q.Matches(o) {
			out = append(out, o)
		}
		if o := offer(srv.Product, &srv, p, known); !seen[srv.Product] && q.Matches(o) {
			seen[srv.Product] = true
			byProduct = append(byProduct, o)
		}
	}
	return append(out, byProduct...), nil
}

// free reports whether srv is free to claim: no name, not cancelled.
func free(srv *models.Server) bool { return srv.Name == "" && !srv.Cancelled }

// Create claims a server: the one spec.OfferID names by number, or any
// free server of the product it names (a pool flavor's "EX44"). A server
// already named with this claim is the same claim (idempotent). Errors:
// INVALID_INPUT (permanent; path machine.offerId: neither a number nor a
// product of the account), NOT_FOUND (permanent: no such server),
// ACCESS_DENIED (permanent: the server is named by someone else),
// CAPACITY_UNAVAILABLE (no free server of the product: rent one).
func (c *client) Create(ctx context.Context, call *provider.Call, spec api.MachineSpec) (*api.ExternalMachine, error) {
	c.claims.Lock()
	defer c.claims.Unlock()
	s, err := c.newSession(ctx, call)
	if err != nil {
		return nil, err
	}
	n, err := serverNumber(spec.OfferID, "machine.offerId")
	if err != nil {
		if n, err = c.pickServer(ctx, call, s, spec.OfferID); err != nil {
			return nil, err
		}
	}
	srv, err := s.api.ServerGet(n)
	if isCode(err, models.ErrorCodeServerNotFound) {
		ce := api.NotFound("server", strconv.Itoa(n))
		ce.Details.Permanent = true
		return nil, ce
	}
	if err != nil {
		return nil, s.classify(ctx, call, err)
	}
	claim := ClaimName(call.IdempotencyKey)
	switch srv.Name {
	case claim:
		return machine(srv, s.rec.port()), nil
	case "":
	default:
		return nil, notOurs(n, "it is named "+strconv.Quote(srv.Name))
	}
	if _, err := s.api.ServerSetName(n, &models.ServerSetNameInput{Name: claim}); err != nil {
		return nil, s.classify(ctx, call, err)
	}
	srv, err = s.api.ServerGet(n)
	if err != nil {
		return nil, s.classify(ctx, call, err)
	}
	return machine(srv, s.rec.port()), nil
}

// pickServer is the server a product claim takes: the one already named
// with the claim, else the free server of the product with the lowest
// number. Errors: INVALID_INPUT (permanent) for a product the account has
// no server of, CAPACITY_UNAVAILABLE when none of them is free.
func (c *client) pickServer(ctx context.Context, call *provider.Call, s *session, product string) (int, error) {
	servers, err := s.api.ServerGetList()
	if err != nil && !isCode(err, models.ErrorCodeServerNotFound) {
		return 0, s.classify(ctx, call, err)
	}
	pick, known := 0, false
	for _, srv := range servers {
		switch {
		case srv.Name == ClaimName(call.IdempotencyKey):
			return srv.ServerNumber, nil
		case srv.Product != product:
			continue
		}
		known = true
		if free(&srv) && (pick == 0 || srv.ServerNumber < pick) {
			pick = srv.ServerNumber
		}
	}
	switch {
	case !known:
		ce := api.InvalidInput("machine.offerId", "machine.offerId %q is neither a server number nor a product of the account's servers", product)
		ce.Details.Permanent = true
		return 0, ce
	case pick == 0:
		return 0, api.Errorf(api.CodeCapacityUnavailable, "hetzner-robot: no free server of product %s: every one is claimed", product)
	}
	return pick, nil
}

// claimed reads server id and checks it is claimed by this platform
// (with call.IdempotencyKey, by that claim). Errors: INVALID_INPUT (id),
// NOT_FOUND (absent, unnamed, or another claim of this platform under a
// key), ACCESS_DENIED (permanent: named by someone else).
func (c *client) claimed(ctx context.Context, call *provider.Call, s *session, id string) (int, *models.Server, error) {
	n, err := serverNumber(id, "id")
	if err != nil {
		return 0, nil, err
	}
	srv, err := s.api.ServerGet(n)
	switch {
	case isCode(err, models.ErrorCodeServerNotFound):
		return 0, nil, api.NotFound("server", id)
	case err != nil:
		return 0, nil, s.classify(ctx, call, err)
	case call.IdempotencyKey != "" && srv.Name != ClaimName(call.IdempotencyKey), srv.Name == "":
		return 0, nil, api.NotFound("server", id) // released, or claimed again under another key
	case !strings.HasPrefix(srv.Name, ClaimPrefix):
		return 0, nil, notOurs(n, "it is not claimed by this platform")
	}
	return n, srv, nil
}

// Get returns the claimed server id, or nil when it is absent or no
// longer claimed by this platform. Its power comes from GET /reset/{n}:
// an operating status other than "running" is stopped, except "not
// supported" (older servers cannot tell; Guess: they run), which leaves
// it running, as does a server without resets.
func (c *client) Get(ctx context.Context, call *provider.Call, id string) (*api.ExternalMachine, error) {
	s, err := c.newSession(ctx, call)
	if err != nil {
		return nil, err
	}
	n, srv, err := c.claimed(ctx, call, s, id)
	switch {
	case api.IsCode(err, api.CodeNotFound, api.CodeAccessDenied):
		return nil, nil
	case err != nil:
		return nil, err
	}
	m := machine(srv, s.rec.port())
	rs, err := s.api.ResetGet(n)
	switch {
	case isCode(err, models.ErrorCodeResetNotAvailable):
	case err != nil:
		return nil, s.classify(ctx, call, err)
	case m.State == api.StateRunning && rs.OperatingStatus != "running" && rs.OperatingStatus != "not supported" &&
		rs.OperatingStatus != "":
		m.State = api.StateStopped
	}
	return m, nil
}

// List is the servers this platform claimed, one page (cursor: the
// number after which to go on).
func (c *client) List(ctx context.Context, call *provider.Call, cursor string, limit int) ([]api.ExternalMachine, string, error) {
	after := 0
	if cursor != "" {
		n, err := serverNumber(cursor, "cursor")
		if err != nil {
			return nil, "", err
		}
		after = n
	}
	s, err := c.newSession(ctx, call)
	if err != nil {
		return nil, "", err
	}
	servers, err := s.api.ServerGetList()
	if isCode(err, models.ErrorCodeServerNotFound) {
		return []api.ExternalMachine{}, "", nil
	}
	if err != nil {
		return nil, "", s.classify(ctx, call, err)
	}
	out := []api.ExternalMachine{}
	for i := range servers {
		srv := &servers[i]
		if srv.ServerNumber <= after || !strings.HasPrefix(srv.Name, ClaimPrefix) {
			continue
		}
		if len(out) == limit {
			return out, out[len(out)-1].ID, nil
		}
		out = append(out, *machine(srv, ""))
	}
	return out, "", nil
}

// Delete releases the claimed server id: its rescue arming is removed and
// its name cleared. The rental is never cancelled.
func (c *client) Delete(ctx context.Context, call *provider.Call, id string) error {
	s, err := c.newSession(ctx, call)
	if err != nil {
		return err
	}
	n, _, err := c.claimed(ctx, call, s, id)
	if err != nil {
		return err
	}
	return c.release(ctx, call, s, n)
}

func (c *client) release(ctx context.Context, call *provider.Call, s *session, n int) error {
	if _, err := s.api.BootRescueDelete(n); err != nil {
		return s.classify(ctx, call, err)
	}
	if _, err := s.api.ServerSetName(n, &models.ServerSetNameInput{Name: ""}); err != nil {
		return s.classify(ctx, call, err)
	}
	return nil
}

// DeleteByKey releases every server claimed with key; NOT_FOUND when none is.
func (c *client) DeleteByKey(ctx context.Context, call *provider.Call, key string) error {
	s, err := c.newSession(ctx, call)
	if err != nil {
		return err
	}
	servers, err := s.api.ServerGetList()
	if isCode(err, models.ErrorCodeServerNotFound) {
		return api.NotFound("machine with key", key)
	}
	if err != nil {
		return s.classify(ctx, call, err)
	}
	found := false
	for _, srv := range servers {
		if srv.Name != ClaimName(key) {
			continue
		}
		found = true
		if err := c.release(ctx, call, s, srv.ServerNumber); err != nil {
			return err
		}
	}
	if !found {
		return api.NotFound("machine with key", key)
	}
	return nil
}
