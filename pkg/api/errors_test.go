package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"
)

func TestErrorf(t *testing.T) {
	e := Errorf(CodeNotFound, "pool %q in %d", "p", 3)
	if e.Code != CodeNotFound || e.Message != `pool "p" in 3` || !reflect.DeepEqual(e.Details, ErrorDetails{}) {
		t.Fatalf("Errorf = %+v", e)
	}
	if got := e.Error(); got != `NOT_FOUND: pool "p" in 3` {
		t.Fatalf("Error() = %q", got)
	}
}

func TestWithPath(t *testing.T) {
	e := Errorf(CodeConflict, "x")
	got := e.WithPath("a").WithPath("b")
	if got != e {
		t.Fatal("WithPath must return its receiver")
	}
	want := ErrorDetails{Path: new("b")}
	if !reflect.DeepEqual(e.Details, want) {
		t.Fatalf("details = %v, want %v", e.Details, want)
	}
}

func TestConstructors(t *testing.T) {
	tests := []struct {
		name    string
		err     *ComputeError
		code    Code
		message string
		details ErrorDetails
	}{
		{"invalid input", InvalidInput("flavors[0].offerId", "bad %s", "offer"), CodeInvalidInput, "bad offer",
			ErrorDetails{Path: new("flavors[0].offerId")}},
		{"invalid config", InvalidConfig("config.token", "need %d", 1), CodeInvalidConfig, "need 1",
			ErrorDetails{Path: new("config.token")}},
		{"not found", NotFound("pool", "pool_1"), CodeNotFound, `pool "pool_1" not found`,
			ErrorDetails{ID: "pool_1"}},
		{"rate limited", RateLimited(1500*time.Millisecond, "slow down"), CodeRateLimited, "slow down",
			ErrorDetails{RetryAfterMs: new(int64(1500))}},
		{"rate limited sub-millisecond", RateLimited(999*time.Microsecond, "x"), CodeRateLimited, "x",
			ErrorDetails{RetryAfterMs: new(int64(0))}},
		{"rate limited negative", RateLimited(-5*time.Second, "x"), CodeRateLimited, "x",
			ErrorDetails{RetryAfterMs: new(int64(0))}},
		{"provider error", ProviderError(422, "invalid_input", "api said %s", "no"), CodeProviderError, "api said no",
			ErrorDetails{Status: new(422), Code: new("invalid_input")}},
		{"provider unreachable", ProviderError(0, "", "down"), CodeProviderError, "down",
			ErrorDetails{Status: new(0), Code: new("")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err.Code != tc.code || tc.err.Message != tc.message || !reflect.DeepEqual(tc.err.Details, tc.details) {
				t.Fatalf("got %+v, want code %s message %q details %v", tc.err, tc.code, tc.message, tc.details)
			}
		})
	}
}

func TestPath(t *testing.T) {
	tests := []struct {
		err  *ComputeError
		want string
	}{
		{InvalidInput("machine.name", "x"), "machine.name"},
		{InvalidInput("", "x"), ""},
		{Errorf(CodeInternal, "x"), ""},
	}
	for i, tc := range tests {
		if got := tc.err.Path(); got != tc.want {
			t.Errorf("%d: Path() = %q, want %q", i, got, tc.want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		name string
		body string // the details of a decoded reply
		want time.Duration
	}{
		{"whole milliseconds", `{"retryAfterMs":1200}`, 1200 * time.Millisecond},
		{"seconds", `{"retryAfterMs":3000}`, 3 * time.Second},
		{"zero", `{"retryAfterMs":0}`, 0},
		{"absent", `{"path":"x"}`, 0},
		{"unknown keys ignored", `{"retryAfterMs":250,"vendorHint":{"a":[1]}}`, 250 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e ComputeError
			if err := json.Unmarshal([]byte(`{"code":"RATE_LIMITED","message":"x","details":`+tc.body+`}`), &e); err != nil {
				t.Fatal(err)
			}
			if got := e.RetryAfter(); got != tc.want {
				t.Fatalf("RetryAfter() = %v, want %v", got, tc.want)
			}
		})
	}
	if got := Errorf(CodeRateLimited, "no details").RetryAfter(); got != 0 {
		t.Fatalf("RetryAfter() without details = %v, want 0", got)
	}
	if got := RateLimited(2*time.Second, "x").RetryAfter(); got != 2*time.Second {
		t.Fatalf("RateLimited(2s).RetryAfter() = %v", got)
	}
}

func TestAsComputeError(t *testing.T) {
	ce := NotFound("pool", "pool_1")
	var typedNil *ComputeError
	tests := []struct {
		name    string
		err     error
		same    bool // the result is ce itself
		code    Code
		message string
	}{
		{"nil", nil, false, "", ""},
		{"itself", ce, true, CodeNotFound, ce.Message},
		{"wrapped once", fmt.Errorf("read: %w", ce), true, CodeNotFound, ce.Message},
		{"wrapped twice", fmt.Errorf("a: %w", fmt.Errorf("b: %w", ce)), true, CodeNotFound, ce.Message},
		{"joined", errors.Join(errors.New("other"), ce), true, CodeNotFound, ce.Message},
		{"foreign", errors.New("disk on fire"), false, CodeInternal, "disk on fire"},
		{"typed nil", typedNil, false, CodeInternal, "nil *ComputeError returned as an error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := AsComputeError(tc.err)
			if tc.err == nil {
				if got != nil {
					t.Fatalf("AsComputeError(nil) = %+v, want nil", got)
				}
				return
			}
			if got == nil {
				t.Fatal("AsComputeError of a non-nil error returned nil")
			}
			if tc.same != (got == ce) {
				t.Fatalf("identity: got %p, ce %p, want same=%v", got, ce, tc.same)
			}
			if got.Code != tc.code || got.Message != tc.message {
				t.Fatalf("got %s %q, want %s %q", got.Code, got.Message, tc.code, tc.message)
			}
		})
	}
}

func TestCodeOfIsCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		code Code
	}{
		{"nil", nil, ""},
		{"compute error", Errorf(CodeRateLimited, "x"), CodeRateLimited},
		{"wrapped", fmt.Errorf("ctx: %w", Errorf(CodeConflict, "x")), CodeConflict},
		{"foreign", errors.New("x"), CodeInternal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := CodeOf(tc.err); got != tc.code {
				t.Fatalf("CodeOf = %q, want %q", got, tc.code)
			}
			if tc.err == nil {
				if IsCode(nil, Codes()...) {
					t.Fatal("IsCode(nil, every code) = true")
				}
				return
			}
			if !IsCode(tc.err, CodeNotFound, tc.code) {
				t.Fatalf("IsCode(err, NOT_FOUND, %s) = false", tc.code)
			}
			if IsCode(tc.err, CodeAccessDenied) {
				t.Fatal("IsCode(err, ACCESS_DENIED) = true")
			}
			if IsCode(tc.err) {
				t.Fatal("IsCode(err) with no codes = true")
			}
		})
	}
}

func TestCodeTerminal(t *testing.T) {
	terminal := map[Code]bool{CodeUnsupported: true, CodeInvalidState: true, CodeInvalidConfig: true, CodeInvalidInput: true}
	want := []Code{
		CodeInvalidInput, CodeInvalidConfig, CodeNotFound, CodeAlreadyExists, CodeConflict,
		CodeAccessDenied, CodeUnsupported, CodeInvalidState, CodeCapacityUnavailable,
		CodeRateLimited, CodeProviderError, CodeUnavailable, CodeInternal,
	}
	if !reflect.DeepEqual(Codes(), want) {
		t.Fatalf("Codes() = %v, want %v", Codes(), want)
	}
	for _, c := range Codes() {
		if got := c.Terminal(); got != terminal[c] {
			t.Errorf("%s.Terminal() = %v, want %v", c, got, terminal[c])
		}
	}
	if Code("SOMETHING_ELSE").Terminal() {
		t.Error("an unknown code must not be terminal")
	}
}

func TestNameHolderSurvivesTheWire(t *testing.T) {
	want := NameHolder{ID: "50000001", IdempotencyKey: "inst_01", State: string(StateDeleting)}
	data, err := json.Marshal(ProviderError(409, "uniqueness_error", "taken").WithNameHolder(want))
	if err != nil {
		t.Fatal(err)
	}
	var ce ComputeError
	if err := json.Unmarshal(data, &ce); err != nil {
		t.Fatal(err)
	}
	if got, named := ce.NameHolder(); !named || got != want {
		t.Fatalf("NameHolder = %+v, %v; want %+v, true", got, named, want)
	}
	if _, named := ProviderError(409, "uniqueness_error", "taken").NameHolder(); named {
		t.Fatal("a refusal without holder details names a holder")
	}
}

// TestErrorWireBytes: one error per details field, each encoded to the
// exact bytes the former map[string]any details produced (keys sorted,
// zero values sent where the constructor always sets them).
func TestErrorWireBytes(t *testing.T) {
	permanentAndUnsent := ProviderError(422, "invalid_input", "image %q not found", "debian-99")
	permanentAndUnsent.Details.Permanent, permanentAndUnsent.Details.NotExecuted = true, true
	unsentRateLimit := RateLimited(1500*time.Millisecond, "slow down")
	unsentRateLimit.Details.NotExecuted = true
	reason := NotFound("server", "inst_01")
	reason.Details.Reason = "no server carries the idempotency key"
	accounts := Errorf(CodeInvalidState, "referenced")
	accounts.Details.Accounts = []string{"pacct_nested", "pacct_top"}
	instances := Errorf(CodeInvalidState, "used")
	instances.Details.Instances = []string{"inst_01"}
	pools := Errorf(CodeInvalidState, "used")
	pools.Details.Pools = []string{"pool_01", "pool_02"}
	scheme := InvalidInput("ref", "no store")
	scheme.Details.Scheme = "vault"
	version := Errorf(CodeConflict, "stale").WithPath("version")
	version.Details.Version = 4
	allowed := InvalidConfig("config.zone", "unknown")
	allowed.Details.Allowed = []string{"token", "location"}
	candidates := InvalidInput("name", "ambiguous")
	candidates.Details.Candidates = []string{"inst_01", "inst_02"}
	tests := []struct {
		name string
		err  *ComputeError
		want string
	}{
		{"no details", Errorf(CodeInternal, "bug"), `{"code":"INTERNAL","message":"bug"}`},
		{"path", InvalidInput("machine.name", "required"),
			`{"code":"INVALID_INPUT","message":"required","details":{"path":"machine.name"}}`},
		{"empty path", InvalidInput("", "request body must be a JSON object"),
			`{"code":"INVALID_INPUT","message":"request body must be a JSON object","details":{"path":""}}`},
		{"config path", InvalidConfig("config.token", "required"),
			`{"code":"INVALID_CONFIG","message":"required","details":{"path":"config.token"}}`},
		{"id", NotFound("pool", "pool_1"), `{"code":"NOT_FOUND","message":"pool \"pool_1\" not found","details":{"id":"pool_1"}}`},
		{"reason", reason,
			`{"code":"NOT_FOUND","message":"server \"inst_01\" not found","details":{"id":"inst_01","reason":"no server carries the idempotency key"}}`},
		{"retryAfterMs zero", RateLimited(0, "now"), `{"code":"RATE_LIMITED","message":"now","details":{"retryAfterMs":0}}`},
		{"retryAfterMs and notExecuted", unsentRateLimit,
			`{"code":"RATE_LIMITED","message":"slow down","details":{"notExecuted":true,"retryAfterMs":1500}}`},
		{"status and code unreachable", ProviderError(0, "", "down"),
			`{"code":"PROVIDER_ERROR","message":"down","details":{"code":"","status":0}}`},
		{"permanent and notExecuted", permanentAndUnsent,
			`{"code":"PROVIDER_ERROR","message":"image \"debian-99\" not found","details":{"code":"invalid_input","notExecuted":true,"permanent":true,"status":422}}`},
		{"name holder", ProviderError(409, "uniqueness_error", "taken").WithNameHolder(NameHolder{ID: "50000001", IdempotencyKey: "inst_01", State: "running"}),
			`{"code":"PROVIDER_ERROR","message":"taken","details":{"code":"uniqueness_error","holderId":"50000001","holderIdempotencyKey":"inst_01","holderState":"running","status":409}}`},
		{"name holder gone", ProviderError(409, "uniqueness_error", "taken").WithNameHolder(NameHolder{State: "deleted"}),
			`{"code":"PROVIDER_ERROR","message":"taken","details":{"code":"uniqueness_error","holderId":"","holderIdempotencyKey":"","holderState":"deleted","status":409}}`},
		{"accounts", accounts, `{"code":"INVALID_STATE","message":"referenced","details":{"accounts":["pacct_nested","pacct_top"]}}`},
		{"instances", instances, `{"code":"INVALID_STATE","message":"used","details":{"instances":["inst_01"]}}`},
		{"pools", pools, `{"code":"INVALID_STATE","message":"used","details":{"pools":["pool_01","pool_02"]}}`},
		{"scope", AccessDeniedScope("secrets", "put", ScopeSecretsManage),
			`{"code":"ACCESS_DENIED","message":"secrets.put needs scope compute:secrets:manage, which this credential does not hold","details":{"scope":"compute:secrets:manage"}}`},
		{"scheme", scheme, `{"code":"INVALID_INPUT","message":"no store","details":{"path":"ref","scheme":"vault"}}`},
		{"version", version, `{"code":"CONFLICT","message":"stale","details":{"path":"version","version":4}}`},
		{"allowed", allowed, `{"code":"INVALID_CONFIG","message":"unknown","details":{"allowed":["token","location"],"path":"config.zone"}}`},
		{"quota", QuotaExceeded("quotas.instances", 10, "full"),
			`{"code":"CAPACITY_UNAVAILABLE","message":"full","details":{"limit":"quotas.instances","quota":10}}`},
		{"candidates", candidates, `{"code":"INVALID_INPUT","message":"ambiguous","details":{"candidates":["inst_01","inst_02"],"path":"name"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.err)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("encoded\n %s\nwant\n %s", got, tc.want)
			}
			var back ComputeError
			if err := json.Unmarshal(got, &back); err != nil || !reflect.DeepEqual(&back, tc.err) {
				t.Fatalf("decoded %+v (%v), want %+v", back, err, tc.err)
			}
		})
	}
}

// TestMapStringsCoversEveryString: MapStrings reaches every string the
// details hold (the secret redaction of pkg/provider relies on it). The
// input sets every field, so a new field fails here until it is mapped.
func TestMapStringsCoversEveryString(t *testing.T) {
	var in ErrorDetails
	all := `{"accounts":["s"],"allowed":["s"],"candidates":["s"],"code":"s","holderId":"s","holderIdempotencyKey":"s","holderState":"s","id":"s",
		"instances":["s"],"limit":"s","notExecuted":true,"path":"s","permanent":true,"pools":["s"],"quota":1,"reason":"s",
		"retryAfterMs":1,"scheme":"s","scope":"s","status":1,"version":1}`
	if err := json.Unmarshal([]byte(all), &in); err != nil {
		t.Fatal(err)
	}
	v := reflect.ValueOf(in)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("field %s is not set by the test input: add its key", v.Type().Field(i).Name)
		}
	}
	out := in.MapStrings(func(s string) string { return s + "-cut" })
	var wire map[string]any
	if err := json.Unmarshal([]byte(out.String()), &wire); err != nil {
		t.Fatal(err)
	}
	var strs []string
	for _, val := range wire {
		switch x := val.(type) {
		case string:
			strs = append(strs, x)
		case []any:
			for _, e := range x {
				strs = append(strs, e.(string))
			}
		}
	}
	if len(strs) != 15 {
		t.Fatalf("%d strings in %s, want 15", len(strs), out)
	}
	for _, s := range strs {
		if s != "s-cut" {
			t.Errorf("string %q of %s was not mapped", s, out)
		}
	}
	if in.Reason != "s" {
		t.Errorf("MapStrings changed its input: %s", in)
	}
}
