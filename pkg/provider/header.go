package provider

// HeaderSafe reports whether a resolved secret can travel as a token in an
// HTTP header such as Authorization: non-empty printable ASCII without
// spaces. Providers refuse other values with INVALID_CONFIG naming the
// secret's field, never echoing the value.
func HeaderSafe(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}
