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
	if e.Code != CodeNotFound || e.Message != `pool "p" in 3` || e.Details != nil {
		t.Fatalf("Errorf = %+v", e)
	}
	if got := e.Error(); got != `NOT_FOUND: pool "p" in 3` {
		t.Fatalf("Error() = %q", got)
	}
}

func TestWith(t *testing.T) {
	e := Errorf(CodeConflict, "x")
	got := e.With("a", 1).With("b", "two").With("a", 3)
	if got != e {
		t.Fatal("With must return its receiver")
	}
	want := map[string]any{"a": 3, "b": "two"}
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
		details map[string]any
	}{
		{"invalid input", InvalidInput("flavors[0].offerId", "bad %s", "offer"), CodeInvalidInput, "bad offer",
			map[string]any{DetailPath: "flavors[0].offerId"}},
		{"invalid config", InvalidConfig("config.token", "need %d", 1), CodeInvalidConfig, "need 1",
			map[string]any{DetailPath: "config.token"}},
		{"not found", NotFound("pool", "pool_1"), CodeNotFound, `pool "pool_1" not found`,
			map[string]any{"id": "pool_1"}},
		{"rate limited", RateLimited(1500*time.Millisecond, "slow down"), CodeRateLimited, "slow down",
			map[string]any{DetailRetryAfterMs: int64(1500)}},
		{"rate limited sub-millisecond", RateLimited(999*time.Microsecond, "x"), CodeRateLimited, "x",
			map[string]any{DetailRetryAfterMs: int64(0)}},
		{"rate limited negative", RateLimited(-5*time.Second, "x"), CodeRateLimited, "x",
			map[string]any{DetailRetryAfterMs: int64(0)}},
		{"provider error", ProviderError(422, "invalid_input", "api said %s", "no"), CodeProviderError, "api said no",
			map[string]any{DetailStatus: 422, DetailCode: "invalid_input"}},
		{"provider unreachable", ProviderError(0, "", "down"), CodeProviderError, "down",
			map[string]any{DetailStatus: 0, DetailCode: ""}},
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
		{Errorf(CodeInternal, "x").With(DetailPath, 7), ""},
	}
	for i, tc := range tests {
		if got := tc.err.Path(); got != tc.want {
			t.Errorf("%d: Path() = %q, want %q", i, got, tc.want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		name  string
		value any
		want  time.Duration
	}{
		{"int", 250, 250 * time.Millisecond},
		{"int64", int64(1200), 1200 * time.Millisecond},
		{"float64 from JSON", float64(3000), 3 * time.Second},
		{"float64 fraction", 1.5, 1500 * time.Microsecond},
		{"string ignored", "100", 0},
		{"int32 ignored", int32(100), 0},
		{"nil", nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := Errorf(CodeRateLimited, "x").With(DetailRetryAfterMs, tc.value)
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
				if IsCode(nil, Codes...) {
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
	if !reflect.DeepEqual(Codes, want) {
		t.Fatalf("Codes = %v, want %v", Codes, want)
	}
	for _, c := range Codes {
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
