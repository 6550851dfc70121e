package conformance

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus/bustest"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/pkg/provider/memory"
)

func TestOfferProblems(t *testing.T) {
	price := func(v float64) *float64 { return &v }
	good := api.Offer{ID: "s", Kind: api.KindVPS, Region: "r", Vcpu: 1, MemoryGiB: 1, DiskGiB: 10, PricePerHour: price(0.01), Currency: "EUR"}
	for _, tc := range []struct {
		name   string
		change func(o *api.Offer)
		want   string
	}{
		{"good", func(*api.Offer) {}, ""},
		{"free", func(o *api.Offer) { o.PricePerHour = price(0) }, ""},
		{"no price", func(o *api.Offer) { o.PricePerHour, o.Currency = nil, "" }, ""},
		{"empty id", func(o *api.Offer) { o.ID = "" }, "empty id"},
		{"metal from a vps provider", func(o *api.Offer) { o.Kind = api.KindMetal }, "kind"},
		{"no region", func(o *api.Offer) { o.Region = "" }, "empty region"},
		{"no vcpu", func(o *api.Offer) { o.Vcpu = 0 }, "vcpu"},
		{"no memory", func(o *api.Offer) { o.MemoryGiB = 0 }, "memoryGiB"},
		{"infinite memory", func(o *api.Offer) { o.MemoryGiB = math.Inf(1) }, "memoryGiB"},
		{"negative disk", func(o *api.Offer) { o.DiskGiB = -1 }, "diskGiB"},
		{"negative gpus", func(o *api.Offer) { o.GPUs = -1 }, "gpus"},
		{"negative price", func(o *api.Offer) { o.PricePerHour = price(-0.5) }, "pricePerHour"},
		{"NaN price", func(o *api.Offer) { o.PricePerHour = price(math.NaN()) }, "pricePerHour"},
		{"price without currency", func(o *api.Offer) { o.Currency = "" }, "currency"},
		{"lower-case currency", func(o *api.Offer) { o.Currency = "eur" }, "currency"},
	} {
		o := good
		tc.change(&o)
		got := strings.Join(offerProblems(o, []string{api.KindVPS}), "; ")
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: problems %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	ds := make([]time.Duration, 100)
	for i := range ds {
		ds[len(ds)-1-i] = time.Duration(i+1) * time.Millisecond
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}, {0.001, time.Millisecond}} {
		if got := percentile(ds, tc.q); got != tc.want {
			t.Errorf("p%g = %s, want %s", tc.q*100, got, tc.want)
		}
	}
	if percentile(nil, 0.99) != 0 {
		t.Error("percentile of nothing is not 0")
	}
}

func TestSecretForms(t *testing.T) {
	forms := secretForms([]string{"plain-token", `quo"te`, ""})
	for _, tc := range []struct {
		data string
		want bool
	}{
		{`{"x":"plain-token"}`, true},
		{`{"x":"quo\"te"}`, true},
		{`quo"te`, true},
		{`{"x":"plain-toke"}`, false},
		{``, false},
	} {
		if got := containsAny([]byte(tc.data), forms); got != tc.want {
			t.Errorf("containsAny(%q) = %v, want %v", tc.data, got, tc.want)
		}
	}
}

// TestDefineRefusesTable: provider.Define refuses each broken variant of
// a valid definition with INVALID_CONFIG and the path the table names.
func TestDefineRefusesTable(t *testing.T) {
	base := memory.Definition(memory.NewCloud()).Definition()
	cases := brokenDefinitions(base)
	if len(cases) != 15 {
		t.Fatalf("%d broken variants of a definition with capabilities and fields, want 15", len(cases))
	}
	for _, tc := range cases {
		d := base
		tc.mutate(&d)
		_, err := provider.Define(d)
		if ce := api.AsComputeError(err); ce == nil || ce.Code != api.CodeInvalidConfig || ce.Path() != tc.path {
			t.Errorf("%s: Define answered %v (path %q), want INVALID_CONFIG at %q", tc.name, err, ce.Path(), tc.path)
		}
	}
	if _, err := provider.Define(base); err != nil {
		t.Fatalf("a variant changed the base definition: %v", err)
	}
}

func TestSkipOrIncomplete(t *testing.T) {
	r := &run{s: Subject{Profiles: []string{ProfileCore, ProfileFaults}}, desc: &api.ProviderDescription{Capabilities: []string{provider.CapabilityList}}}
	byID := func(id string) *Behaviour {
		return &registry[slices.IndexFunc(registry, func(b Behaviour) bool { return b.ID == id })]
	}
	for _, tc := range []struct {
		id     string
		only   []string
		status Status
		reason string
	}{
		{"def.describe", nil, "", ""},
		{"life.list.includes-ours", nil, "", ""},
		{"life.power.stop-start", nil, Skipped, "capability power not claimed"},
		{"scale.latency", nil, Skipped, "profile scale not claimed"},
		{"fault.rate-limited", nil, Incomplete, "needs the subject's Faults hook"},
		{"fault.server-error-converges", nil, Incomplete, "Faults and Inventory"},
		{"def.describe", []string{"offers.filters"}, Incomplete, "not selected"},
	} {
		r.opts.Only = tc.only
		status, reason := r.skipOrIncomplete(byID(tc.id))
		if status != tc.status || !strings.Contains(reason, tc.reason) {
			t.Errorf("%s: %s %q, want %s %q", tc.id, status, reason, tc.status, tc.reason)
		}
	}
}

func TestRedact(t *testing.T) {
	r := &run{s: Subject{SecretValues: []string{"s3cr3t"}}}
	res := r.redact(Result{ID: "x", Reason: "token s3cr3t leaked", Log: []string{"a", "b s3cr3t"}})
	if res.Reason != "token [REDACTED] leaked" || res.Log[1] != "b [REDACTED]" || !slices.Equal(r.redacted, []string{"x"}) {
		t.Fatalf("redacted %+v, noted %v", res, r.redacted)
	}
	if r.redact(Result{ID: "y", Reason: "clean"}); len(r.redacted) != 1 {
		t.Fatalf("a clean result was noted: %v", r.redacted)
	}
}

func TestCertifyRefusesUnusableSubjects(t *testing.T) {
	nc := bustest.Start(t).NC
	ok := Subject{ProviderID: "memory", NC: nc, OfferID: "small", Image: "x"}
	with := func(f func(s *Subject)) Subject { s := ok; f(&s); return s }
	for _, tc := range []struct {
		name string
		s    Subject
		want string
	}{
		{"no connection", with(func(s *Subject) { s.NC = nil }), "NC"},
		{"no provider", with(func(s *Subject) { s.ProviderID = "" }), "ProviderID"},
		{"no image", with(func(s *Subject) { s.Image = "" }), "Image"},
		{"upper-case prefix", with(func(s *Subject) { s.Prefix = "CF" }), "Prefix"},
		{"unknown profile", with(func(s *Subject) { s.Profiles = []string{"core", "speed"} }), `"speed"`},
	} {
		if _, err := Certify(context.Background(), tc.s, Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.want)
		}
	}
}
