package conformance

import (
	"crypto/rand"
	"encoding/json"
	"slices"
	"strings"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// badRequest is a request the provider must refuse with code (and, when
// path is set, details.path).
type badRequest struct {
	what string
	verb string
	body any // a value, or []byte sent as is
	code api.Code
	path string
}

// expectRefused sends each request and checks code and path.
func (c *check) expectRefused(reqs []badRequest) {
	for _, q := range reqs {
		_, err := c.raw(q.verb, q.body)
		if !c.expectCode(q.what, err, q.code) {
			continue
		}
		if got := api.AsComputeError(err).Path(); q.path != "" && got != q.path {
			c.Errorf("%s: details.path is %q, want %q", q.what, got, q.path)
		}
	}
}

// body is a request body: the subject's account and fields.
func (c *check) body(fields map[string]any) map[string]any {
	out := map[string]any{"account": c.acct()}
	for k, v := range fields {
		out[k] = v
	}
	return out
}

// machineVerbs are the verbs naming one machine that the provider claims
// (get and delete always).
func (c *check) machineVerbs() []string {
	verbs := []string{provider.VerbGet, provider.VerbDelete}
	if c.r.claims(provider.CapabilityPower) {
		verbs = append(verbs, provider.VerbPower)
	}
	if c.r.claims(provider.CapabilityReinstall) {
		verbs = append(verbs, provider.VerbReinstall)
	}
	return verbs
}

// machineBody is a valid body of a machine verb for id.
func (c *check) machineBody(verb, id string) map[string]any {
	switch verb {
	case provider.VerbPower:
		return c.body(map[string]any{"id": id, "action": api.ActionOn})
	case provider.VerbReinstall:
		return c.body(map[string]any{"id": id, "image": c.r.s.Image})
	}
	return c.body(map[string]any{"id": id})
}

func errMissingNotFound(c *check) {
	m := c.runningMachine()
	c.deleteGone(m.ID)
	for _, verb := range c.machineVerbs() {
		if verb == provider.VerbGet {
			continue // absent is not an error for get (life.get.unknown-absent)
		}
		_, err := c.raw(verb, c.machineBody(verb, m.ID))
		c.expectCode(verb+" of the missing machine "+m.ID, err, api.CodeNotFound)
	}
}

func errEmptyID(c *check) {
	var reqs []badRequest
	for _, verb := range c.machineVerbs() {
		reqs = append(reqs, badRequest{verb + " with an empty id", verb, c.machineBody(verb, ""), api.CodeInvalidInput, "id"})
	}
	c.expectRefused(reqs)
}

func errWrongTypes(c *check) {
	spec := c.spec(c.name("m"))
	reqs := []badRequest{
		{"get with a numeric id", provider.VerbGet, c.body(map[string]any{"id": 42}), api.CodeInvalidInput, ""},
		{"get with a string account", provider.VerbGet, map[string]any{"account": "acct", "id": "1"}, api.CodeInvalidInput, ""},
		{"create with a string machine", provider.VerbCreate, c.body(map[string]any{"idempotencyKey": spec.Name, "machine": "x"}),
			api.CodeInvalidInput, ""},
		{"create with a numeric key", provider.VerbCreate, c.body(map[string]any{"idempotencyKey": 7, "machine": spec}),
			api.CodeInvalidInput, ""},
		{"create with a string list of SSH keys", provider.VerbCreate, c.body(map[string]any{"idempotencyKey": spec.Name,
			"machine": map[string]any{"name": spec.Name, "offerId": spec.OfferID, "image": spec.Image,
				"sshKeys": "ssh-ed25519 AAAA"}}), api.CodeInvalidInput, ""},
		{"offers with a string minVcpu", provider.VerbOffers, c.body(map[string]any{"query": map[string]any{"minVcpu": "many"}}),
			api.CodeInvalidInput, ""},
	}
	if c.r.claims(provider.CapabilityPower) {
		reqs = append(
			reqs,
			badRequest{"power with a boolean action", provider.VerbPower, c.body(map[string]any{"id": "1", "action": true}),
				api.CodeInvalidInput, ""},
		)
	}
	if c.r.claims(provider.CapabilityList) {
		reqs = append(reqs,
			badRequest{"list with a string limit", provider.VerbList, c.body(map[string]any{"limit": "ten"}), api.CodeInvalidInput, ""})
	}
	c.expectRefused(reqs)
	c.expectNone(spec.Name)
}

// expectNone fails if a machine called name exists (a refused request
// must not make one).
func (c *check) expectNone(name string) {
	if n, ok := c.countNamed(name); ok && n != 0 {
		c.Errorf("a refused request made %d machines called %s", n, name)
	}
}

func errOversized(c *check) {
	long := strings.Repeat("x", 4096)
	create := func(what, key string, spec api.MachineSpec, path string) badRequest {
		return badRequest{"create with " + what, provider.VerbCreate, c.body(map[string]any{"idempotencyKey": key, "machine": spec}),
			api.CodeInvalidInput, path}
	}
	name := c.name("m")
	withName := c.spec(long)
	withImage := c.spec(name)
	withImage.Image = long
	withUserData := c.spec(name)
	withUserData.UserData = strings.Repeat("u", provider.MaxUserDataBytes+1)
	withKeys := c.spec(name)
	for range provider.MaxSSHKeys + 1 {
		withKeys.SSHKeys = append(withKeys.SSHKeys, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIConformance")
	}
	reqs := []badRequest{
		create("a 4096-character key", long, c.spec(name), "idempotencyKey"),
		create("a 4096-character name", name, withName, "machine.name"),
		create("a 4096-character image", name, withImage, "machine.image"),
		create("user data over the limit", name, withUserData, "machine.userData"),
		create("too many SSH keys", name, withKeys, "machine.sshKeys"),
	}
	for _, verb := range c.machineVerbs() {
		reqs = append(reqs, badRequest{verb + " with a 4096-character id", verb, c.machineBody(verb, long), api.CodeInvalidInput, "id"})
	}
	c.expectRefused(reqs)
	c.expectNone(name)
}

func errMalformed(c *check) {
	var reqs []badRequest
	for _, body := range []string{`{"account":`, `[]`, `"get"`, ``, `{"id":"1"}}`, `{"account":{"id":"a","tenantId":"t"},"id":"1"} trailing`} {
		reqs = append(reqs,
			badRequest{"get with body " + strings.TrimSpace(body) + "…", provider.VerbGet, []byte(body), api.CodeInvalidInput, ""})
	}
	c.expectRefused(reqs)
}

func errUnknownField(c *check) {
	spec := map[string]any{"name": c.name("m"), "offerId": c.r.s.OfferID, "image": c.r.s.Image, "conformanceExtra": 1}
	for _, q := range []badRequest{
		{"get with an unknown field", provider.VerbGet, c.body(map[string]any{"id": "1", "conformanceExtra": true}), api.CodeInvalidInput, ""},
		{"create with an unknown machine field", provider.VerbCreate,
			c.body(map[string]any{"idempotencyKey": spec["name"], "machine": spec}), api.CodeInvalidInput, ""},
	} {
		_, err := c.raw(q.verb, q.body)
		if c.expectCode(q.what, err, q.code) && !strings.HasSuffix(api.AsComputeError(err).Path(), "conformanceExtra") {
			c.Errorf("%s: details.path %q does not name conformanceExtra", q.what, api.AsComputeError(err).Path())
		}
	}
	c.expectNone(spec["name"].(string))
}

func errBadValues(c *check) {
	acct := c.acct()
	badTenant, noID := acct, acct
	badTenant.TenantID = "Not.A.Tenant"
	noID.ID = ""
	reqs := []badRequest{
		{"an account with an invalid tenant", provider.VerbGet, map[string]any{"account": badTenant, "id": "1"},
			api.CodeInvalidInput, "account.tenantId"},
		{"an account without an id", provider.VerbGet, map[string]any{"account": noID, "id": "1"}, api.CodeInvalidInput, "account.id"},
	}
	if c.r.claims(provider.CapabilityPower) {
		reqs = append(
			reqs,
			badRequest{"power with action explode", provider.VerbPower, c.body(map[string]any{"id": "1", "action": "explode"}),
				api.CodeInvalidInput, "action"},
		)
	}
	if c.r.claims(provider.CapabilityList) {
		reqs = append(
			reqs,
			badRequest{"list with limit -1", provider.VerbList, c.body(map[string]any{"limit": -1}), api.CodeInvalidInput, "limit"},
			badRequest{"list with a limit above the maximum", provider.VerbList, c.body(map[string]any{"limit": provider.MaxListLimit + 1}),
				api.CodeInvalidInput, "limit"},
		)
	}
	c.expectRefused(reqs)
}

// withConfig is the subject's account with config replaced.
func (c *check) withConfig(cfg map[string]any) api.ProviderAccount {
	acct := c.acct()
	acct.Config = cfg
	return acct
}

func errConfigInvalid(c *check) {
	offers := func(cfg map[string]any) map[string]any {
		return map[string]any{"account": c.withConfig(cfg), "query": api.OfferQuery{}}
	}
	cfg := c.acct().Config
	unknown := clone(cfg)
	unknown["conformanceUnknownField"] = "x"
	reqs := []badRequest{
		{"a config with an unknown field", provider.VerbOffers, offers(unknown), api.CodeInvalidConfig, "account.config.conformanceUnknownField"},
	}
	for _, f := range c.r.desc.Manifest {
		switch {
		case f.Required && f.Default == nil:
			without := clone(cfg)
			delete(without, f.Name)
			reqs = append(reqs,
				badRequest{"a config without " + f.Name, provider.VerbOffers, offers(without), api.CodeInvalidConfig, "account.config." + f.Name})
		case f.Type == provider.TypeOption:
			bad := clone(cfg)
			bad[f.Name] = "conformance-not-an-option"
			reqs = append(
				reqs,
				badRequest{"a config with " + f.Name + " not one of its options", provider.VerbOffers, offers(bad),
					api.CodeInvalidConfig, "account.config." + f.Name},
			)
		}
	}
	c.expectRefused(reqs)
}

func errPlainSecret(c *check) {
	i := slices.IndexFunc(c.r.desc.Manifest, func(f api.ManifestField) bool {
		return f.Type == provider.TypeSecret || f.Type == provider.TypeString && provider.IsSecretFieldName(f.Name)
	})
	if i < 0 {
		c.Logf("the manifest has no secret field")
		return
	}
	field := c.r.desc.Manifest[i].Name
	plain := "conformance-plain-" + strings.ToLower(rand.Text())
	cfg := clone(c.acct().Config)
	cfg[field] = plain
	raw, err := c.raw(provider.VerbOffers, map[string]any{"account": c.withConfig(cfg), "query": api.OfferQuery{}})
	if c.expectCode("a plain value in secret field "+field, err, api.CodeInvalidInput) {
		if got := api.AsComputeError(err).Path(); got != "account.config."+field {
			c.Errorf("details.path is %q, want %q", got, "account.config."+field)
		}
	}
	data, _ := json.Marshal(err)
	if strings.Contains(string(data)+string(raw), plain) {
		c.Errorf("the reply to a plain value in secret field %s echoes the value", field)
	}
}

// errRefusalPermanent: a create that can never pass (its offer names no
// offer) answers an error the reconciler fails the instance on at once
// (api.ComputeError.Permanent), not one it would retry forever.
func errRefusalPermanent(c *check) {
	name := c.name("m")
	spec := c.spec(name)
	spec.OfferID = "conformance-no-such-offer"
	ctx, cancel := c.callCtx()
	defer cancel()
	m, err := c.remote().Create(ctx, c.acct(), name, spec)
	switch {
	case err == nil:
		if m != nil && m.ID != "" {
			c.cleanupMachine(m.ID)
		}
		c.Errorf("create with offer %s succeeded, want a permanent refusal", spec.OfferID)
	case !api.AsComputeError(err).Permanent():
		ce := api.AsComputeError(err)
		c.Errorf("create with offer %s answered %v (details %v): retryable, want a terminal code or details.permanent",
			spec.OfferID, ce, ce.Details)
	}
	c.expectNone(name)
}
