package emulator

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
)

// authenticate checks the PVEAPIToken header and returns the token ID.
// Failures are 401 with PVE's reason phrases and a bare {"data":null}.
func (e *Emulator) authenticate(r *http.Request) (string, *apiError) {
	unauthorized := func(msg string) (string, *apiError) {
		return "", &apiError{status: http.StatusUnauthorized, message: msg, bare: true}
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "PVEAPIToken=")
	if !ok {
		return unauthorized("No ticket")
	}
	id, secret, ok := strings.Cut(token, "=")
	user, name, okID := strings.Cut(id, "!")
	if !ok || !okID || user == "" || name == "" {
		// Guess: the wording for a malformed token header.
		return unauthorized("invalid token value!")
	}
	e.mu.Lock()
	want, known := e.tokens[id]
	e.mu.Unlock()
	if !known {
		return unauthorized(fmt.Sprintf("no such token '%s' for user '%s'", name, user))
	}
	if subtle.ConstantTimeCompare([]byte(secret), []byte(want)) != 1 {
		return unauthorized("invalid token value!")
	}
	return id, nil
}
