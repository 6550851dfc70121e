package conformance

import (
	"context"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// Transport lane figures.
const (
	// lateDeadline is the caller's deadline in transport.late-reply; the
	// API answers lateLatency later.
	lateDeadline = 500 * time.Millisecond
	lateLatency  = 2 * time.Second
	// noResponderDeadline bounds calls to a stopped provider, which must
	// answer long before it.
	noResponderDeadline = 10 * time.Second
	// reconnectAttempt bounds each call while connections reconnect.
	reconnectAttempt = 2 * time.Second
	// payloadMargin is how far beyond the NATS max payload the listed
	// inventory goes.
	payloadMargin = 1.25
)

func transportNoResponders(c *check) {
	restart := c.serviceDown()
	for _, verb := range []string{provider.VerbDescribe, provider.VerbGet} {
		ctx, cancel := context.WithTimeout(c.ctx, noResponderDeadline)
		start := time.Now()
		_, err := c.r.raw(ctx, verb, c.machineBody(provider.VerbGet, "1"))
		early := ctx.Err() == nil
		cancel()
		c.Metric(verb+".answeredAfterMs", float64(time.Since(start).Milliseconds()))
		c.expectCode(verb+" with the provider down", err, api.CodeUnavailable)
		if !early {
			c.Errorf("%s with the provider down waited for its whole deadline (%s), want an immediate no-responders answer",
				verb, noResponderDeadline)
		}
	}
	restart()
	ctx, cancel := c.callCtx()
	defer cancel()
	if _, err := c.remote().Describe(ctx); err != nil {
		c.Errorf("describe after the restart: %v", err)
	}
}

func transportLateReply(c *check) {
	f := c.r.s.Faults
	a := c.mustCreate(c.name("a"))
	b := c.mustCreate(c.name("b"))
	c.arm("delay get requests", f.SetLatency(c.ctx, provider.VerbGet, lateLatency))
	c.Cleanup(func() {
		if err := f.SetLatency(context.Background(), provider.VerbGet, 0); err != nil {
			c.Errorf("remove the latency: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(c.ctx, lateDeadline)
	_, err := c.remote().Get(ctx, c.acct(), a.ID)
	cancel()
	c.expectCode("get slower than the caller's deadline", err, api.CodeUnavailable)
	c.arm("remove the latency", f.SetLatency(c.ctx, provider.VerbGet, 0))
	for _, want := range []string{b.ID, a.ID} {
		m, err := c.get(want)
		if err != nil || m == nil || m.ID != want {
			c.Errorf("get %s after the late reply answered %+v, %v", want, m, err)
		}
	}
}

func transportDuplicate(c *check) {
	name := c.name("m")
	req := api.ProviderCreateRequest{Account: c.acct(), IdempotencyKey: name, Machine: c.spec(name)}
	replies, _ := c.publish(provider.VerbCreate, req, 2, time.Now().Add(c.r.opts.CallTimeout), c.r.opts.CallTimeout)
	var ids []string
	for i, reply := range replies {
		var m api.ExternalMachine
		if err := decodeReply(reply, &m); err != nil {
			c.Fatalf("reply %d to the duplicated create: %v", i+1, err)
		}
		c.cleanupMachine(m.ID)
		ids = append(ids, m.ID)
	}
	if len(ids) != 2 {
		c.Fatalf("the create delivered twice got %d replies, want 2", len(ids))
	}
	if ids[0] != ids[1] {
		c.Errorf("the duplicated create answered machines %s and %s", ids[0], ids[1])
	}
	m, err := c.get(ids[0])
	if err != nil || m == nil {
		c.Fatalf("get %s: %v, %v", ids[0], m, err)
	}
	c.expectOne(m.Name)
}

func transportListPaging(c *check) {
	maxPayload := int(c.r.s.NC.MaxPayload())
	c.ensureSeeded(provider.MaxListLimit)
	first, err := c.listPage("", provider.MaxListLimit)
	if err != nil {
		c.Fatalf("list: %v", err)
	}
	if len(first.items) == 0 {
		c.Fatalf("list answered no machine although %d are seeded", provider.MaxListLimit)
	}
	perMachine := float64(first.bytes) / float64(len(first.items))
	need := int(payloadMargin*float64(maxPayload)/perMachine) + 1
	seeded := c.ensureSeeded(need)
	start := time.Now()
	counts, l := c.listIDs(provider.MaxListLimit)
	c.Metric("listMs", float64(time.Since(start).Milliseconds()))
	c.Metric("maxPayloadBytes", float64(maxPayload))
	c.Metric("maxReplyBytes", float64(l.maxBytes))
	c.Metric("totalBytes", float64(l.total))
	c.Metric("pages", float64(l.pages))
	c.Metric("machines", float64(len(l.items)))
	if l.total <= maxPayload {
		c.Incompletef("the listing has %d bytes, not more than the max payload %d: seed more machines", l.total, maxPayload)
	}
	if l.maxBytes >= maxPayload {
		c.Errorf("a list reply has %d bytes, not under the max payload %d", l.maxBytes, maxPayload)
	}
	expectListed(c, seeded, counts)
}

// expectListed fails for every id not listed exactly once.
func expectListed(c *check, ids []string, counts map[string]int) {
	missing := 0
	for _, id := range ids {
		if counts[id] != 1 {
			if missing++; missing <= 5 {
				c.Errorf("seeded machine %s was listed %d times, want once", id, counts[id])
			}
		}
	}
	if missing > 5 {
		c.Errorf("%d seeded machines in all were not listed exactly once", missing)
	}
}

func transportReconnect(c *check) {
	m := c.mustCreate(c.name("m"))
	start := time.Now()
	if svc := c.r.s.Service; svc != nil {
		c.arm("reconnect the provider service", svc.Reconnect(c.ctx))
	}
	if err := c.r.s.NC.ForceReconnect(); err != nil {
		c.Fatalf("reconnect the program's connection: %v", err)
	}
	err := c.eventually("calls to succeed after the reconnect", func(ctx context.Context) (bool, error) {
		// a request sent while a connection was down may be lost: retry soon
		actx, cancel := context.WithTimeout(ctx, reconnectAttempt)
		defer cancel()
		got, err := c.remote().Get(actx, c.acct(), m.ID)
		return err == nil && got != nil && got.ID == m.ID, err
	})
	if err != nil {
		c.Errorf("%v", err)
	}
	c.Metric("recoveredAfterMs", float64(time.Since(start).Milliseconds()))
}
