package emulator

import (
	"errors"

	"better-compute.io/compute/pkg/api"
)

// parseSelector parses a label_selector with api.ParseSelector: the API
// takes the Kubernetes grammar the platform's own selectors use
// (../shared/reference/hetzner-cloud-api.md, "Labels and label
// selectors"): comma-separated `k=v`, `k==v`, `k!=v`, `k`, `!k`,
// `k in (a,b)` and `k notin (a,b)`, keys and values under the label
// rules; the empty string selects everything. The error is the message
// alone (no platform error code): the lists answer it as 400
// invalid_input on the field label_selector.
//
// Guess: like Kubernetes, k!=v and k notin (…) also match objects
// without the label k; a selector longer than api.MaxSelectorLength
// characters is refused as malformed.
func parseSelector(s string) (api.Selector, error) {
	sel, err := api.ParseSelector("label_selector", s)
	if ce := (*api.ComputeError)(nil); errors.As(err, &ce) {
		return nil, errors.New(ce.Message)
	}
	return sel, err
}

// isAlnum reports whether c is an ASCII letter or digit.
func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
