package api

import "testing"

func TestOfferQueryMatches(t *testing.T) {
	offer := Offer{ID: "cx22", Kind: KindVPS, Region: "fsn1", Vcpu: 2, MemoryGiB: 4, GPUs: 0, Available: true}
	gpu := Offer{ID: "gx", Kind: KindMetal, Region: "nbg1", Vcpu: 16, MemoryGiB: 64, GPUs: 2}
	tests := []struct {
		name  string
		q     OfferQuery
		offer Offer
		want  bool
	}{
		{"empty query matches", OfferQuery{}, offer, true},
		{"region equal", OfferQuery{Region: "fsn1"}, offer, true},
		{"region differs", OfferQuery{Region: "nbg1"}, offer, false},
		{"kind equal", OfferQuery{Kind: KindVPS}, offer, true},
		{"kind differs", OfferQuery{Kind: KindMetal}, offer, false},
		{"min vcpu equal", OfferQuery{MinVcpu: 2}, offer, true},
		{"min vcpu above", OfferQuery{MinVcpu: 3}, offer, false},
		{"min memory equal", OfferQuery{MinMemoryGiB: 4}, offer, true},
		{"min memory fraction above", OfferQuery{MinMemoryGiB: 4.5}, offer, false},
		{"gpus asked, none offered", OfferQuery{GPUs: 1}, offer, false},
		{"gpus asked, enough", OfferQuery{GPUs: 2}, gpu, true},
		{"gpus asked, too few", OfferQuery{GPUs: 3}, gpu, false},
		{"all filters pass", OfferQuery{Region: "nbg1", Kind: KindMetal, MinVcpu: 8, MinMemoryGiB: 32, GPUs: 1}, gpu, true},
		{"one of all fails", OfferQuery{Region: "nbg1", Kind: KindMetal, MinVcpu: 8, MinMemoryGiB: 128, GPUs: 1}, gpu, false},
		{"unavailable still matches", OfferQuery{}, Offer{Region: "x"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.q.Matches(tc.offer); got != tc.want {
				t.Fatalf("%+v.Matches(%+v) = %v, want %v", tc.q, tc.offer, got, tc.want)
			}
		})
	}
}

func TestPoolFlavor(t *testing.T) {
	p := &Pool{Flavors: []Flavor{
		{Name: "small", OfferID: "cx22", Image: "debian-12"},
		{Name: "large", OfferID: "cx52"},
		{Name: "small", OfferID: "shadowed"},
	}}
	tests := []struct {
		name string
		want Flavor
		ok   bool
	}{
		{"small", Flavor{Name: "small", OfferID: "cx22", Image: "debian-12"}, true},
		{"large", Flavor{Name: "large", OfferID: "cx52"}, true},
		{"Small", Flavor{}, false},
		{"", Flavor{}, false},
	}
	for _, tc := range tests {
		got, ok := p.Flavor(tc.name)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Flavor(%q) = %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := (&Pool{}).Flavor("small"); ok {
		t.Error("a pool without flavors found one")
	}
}

// A condition that is True when all went well is never a problem; one
// that names a problem is one while True.
func TestConditionProblem(t *testing.T) {
	tests := []struct {
		typ    ConditionType
		status ConditionStatus
		reason ConditionReason
		want   bool
	}{
		{ConditionReady, ConditionTrue, ReasonConverged, false},
		{ConditionReady, ConditionFalse, "PROVIDER_ERROR", false},
		{ConditionPlaced, ConditionTrue, ReasonLocationFallback, false},
		{ConditionResized, ConditionTrue, ReasonResized, false},
		{ConditionConfigured, ConditionTrue, ReasonStepSucceeded, false},
		{ConditionConfigured, ConditionFalse, ReasonConfigureFailed, false},
		{ConditionDrained, ConditionTrue, ReasonStepSucceeded, false},
		{ConditionProviderError, ConditionTrue, "RATE_LIMITED", true},
		{ConditionProviderError, ConditionFalse, "Resolved", false},
		{ConditionDrift, ConditionTrue, "PowerChanged", true},
		{ConditionHostKeyChanged, ConditionTrue, ReasonHostKeyChanged, true},
	}
	for _, tc := range tests {
		c := Condition{Type: tc.typ, Status: tc.status, Reason: tc.reason}
		if got := c.Problem(); got != tc.want {
			t.Errorf("%s %s (%s).Problem() = %v, want %v", tc.typ, tc.status, tc.reason, got, tc.want)
		}
	}
}
