package conformance

import (
	"maps"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// conformanceLabels are the labels the labels behaviours give machines:
// lower-case, so that a provider whose label form loses case (Proxmox VE
// tags) reads them back as given; one prefixed key and one empty value.
var conformanceLabels = map[string]string{"conformance": "labels", "example.com/tier": "web", "backup": ""}

// createLabelled creates the machine of name carrying labels (its
// deletion registered as a cleanup), stopping the behaviour when it fails.
func (c *check) createLabelled(name string, labels map[string]string) *api.ExternalMachine {
	spec := c.spec(name)
	spec.Labels = labels
	ctx, cancel := c.callCtx()
	defer cancel()
	m, err := c.remote().Create(ctx, c.acct(), name, spec)
	if err != nil {
		c.Fatalf("create %s with labels %v: %v", name, labels, err)
	}
	c.cleanupMachine(m.ID)
	return m
}

// expectLabels reports an error when m's labels are not want.
func (c *check) expectLabels(what string, m *api.ExternalMachine, want map[string]string) {
	if !maps.Equal(m.Labels, want) {
		c.Errorf("%s: machine %s reports labels %v, want exactly %v (user labels only, no system label)", what, m.ID, m.Labels, want)
	}
}

// labelsAtCreate: labels given at create are on the machine: the running
// machine's get reports exactly them (no system label, such as the
// idempotency key's, among them).
func labelsAtCreate(c *check) {
	m := c.createLabelled(c.name("m"), conformanceLabels)
	c.expectLabels("get", c.waitState(m.ID, api.StateRunning), conformanceLabels)
}

// labelsListed: list reports each machine's labels as get does.
func labelsListed(c *check) {
	if !c.r.claims(provider.CapabilityList) {
		c.Logf("the provider does not claim list")
		return
	}
	m := c.createLabelled(c.name("m"), conformanceLabels)
	c.waitState(m.ID, api.StateRunning)
	for _, item := range c.listAll(provider.MaxListLimit).items {
		if item.ID == m.ID {
			c.expectLabels("list", &item, conformanceLabels)
			return
		}
	}
	c.Errorf("list did not answer machine %s", m.ID)
}

// labelsRelabel: relabel replaces the machine's labels whole (one
// removed, one changed, one added; then all removed) and answers the
// machine with them; get agrees; the machine still carries its key, so a
// create retried with it answers the same machine.
func labelsRelabel(c *check) {
	name := c.name("m")
	m := c.createLabelled(name, conformanceLabels)
	c.waitState(m.ID, api.StateRunning)
	r := c.remote()
	r.IdempotencyKey = name
	for _, want := range []map[string]string{{"conformance": "relabelled", "added": "yes"}, {}} {
		ctx, cancel := c.callCtx()
		got, err := r.Relabel(ctx, c.acct(), m.ID, want)
		cancel()
		if err != nil {
			c.claimedButUnsupported(provider.CapabilityLabels, err)
			c.Fatalf("relabel %s to %v: %v", m.ID, want, err)
		}
		if len(want) == 0 {
			want = nil
		}
		c.expectLabels("relabel", got, want)
		now, err := c.get(m.ID)
		if err != nil || now == nil {
			c.Fatalf("get %s after relabel: %+v, %v", m.ID, now, err)
		}
		c.expectLabels("get after relabel", now, want)
		if now.IdempotencyKey != name {
			c.Errorf("after relabel machine %s reports idempotency key %q, want %q (system labels kept)", m.ID, now.IdempotencyKey, name)
		}
	}
	again, err := c.create(name)
	if err != nil || again.ID != m.ID {
		c.Errorf("create %s after relabels answered %+v (%v), want machine %s", name, again, err, m.ID)
	}
}

// labelsRelabelRefusals: relabel refuses an invalid label and a key
// under the platform's prefix (INVALID_INPUT naming labels[<key>]), and a
// missing machine is NOT_FOUND.
func labelsRelabelRefusals(c *check) {
	m := c.runningMachine()
	c.expectRefused([]badRequest{
		{"relabel with an invalid key", provider.VerbRelabel, c.body(map[string]any{"id": m.ID, "labels": map[string]string{"-x": "y"}}),
			api.CodeInvalidInput, "labels[-x]"},
		{"relabel with a system key", provider.VerbRelabel,
			c.body(map[string]any{"id": m.ID, "labels": map[string]string{api.SystemLabelPrefix + "/managed": "false"}}),
			api.CodeInvalidInput, "labels[" + api.SystemLabelPrefix + "/managed]"},
	})
	c.deleteGone(m.ID)
	ctx, cancel := c.callCtx()
	defer cancel()
	_, err := c.remote().Relabel(ctx, c.acct(), m.ID, map[string]string{"a": "b"})
	c.expectCode("relabel of the missing machine "+m.ID, err, api.CodeNotFound)
}

// labelsNotSelected: selecting by labels is the control plane's job, not
// the provider's: list answers every managed machine, whatever its
// labels (or none).
func labelsNotSelected(c *check) {
	if !c.r.claims(provider.CapabilityList) {
		c.Logf("the provider does not claim list")
		return
	}
	a := c.createLabelled(c.name("a"), map[string]string{"conformance": "a"})
	b := c.createLabelled(c.name("b"), nil)
	c.waitState(a.ID, api.StateRunning)
	c.waitState(b.ID, api.StateRunning)
	counts, _ := c.listIDs(provider.MaxListLimit)
	for _, id := range []string{a.ID, b.ID} {
		if counts[id] != 1 {
			c.Errorf("list answered machine %s %d times, want once whatever its labels", id, counts[id])
		}
	}
}
