package secrets

import (
	"fmt"

	"better-compute.io/compute/pkg/api"
)

// DefaultOperatorTenant is the one tenant allowed to resolve env:// and
// vault:// references when the operator lists none.
const DefaultOperatorTenant = "root"

// operatorTenants turns an operator's tenant list into a set: nil means
// [DefaultOperatorTenant], an empty non-nil list allows no tenant. Errors:
// an invalid tenant id, reported as a "<what> tenant".
func operatorTenants(list []string, what string) (map[string]bool, error) {
	if list == nil {
		list = []string{DefaultOperatorTenant}
	}
	set := make(map[string]bool, len(list))
	for _, t := range list {
		if !api.ValidTenant(t) {
			return nil, fmt.Errorf("%s tenant %q is not a valid tenant id", what, t)
		}
		set[t] = true
	}
	return set, nil
}
