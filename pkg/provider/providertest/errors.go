package providertest

import (
	"testing"

	"better-compute.io/compute/pkg/api"
)

// WantCode fails the test unless err is a ComputeError with code, and
// returns it.
func WantCode(t testing.TB, err error, code api.Code) *api.ComputeError {
	t.Helper()
	if !api.IsCode(err, code) {
		t.Fatalf("error = %v, want %s", err, code)
	}
	return api.AsComputeError(err)
}

// WantProviderError fails the test unless err is PROVIDER_ERROR with
// details {status, code}, and returns it.
func WantProviderError(t testing.TB, err error, status int, code string) *api.ComputeError {
	t.Helper()
	ce := WantCode(t, err, api.CodeProviderError)
	if gotStatus, gotCode := ce.APIStatus(); ce.Details.Status == nil || ce.Details.Code == nil || gotStatus != status || gotCode != code {
		t.Fatalf("details = %v, want status %d code %q", ce.Details, status, code)
	}
	return ce
}
