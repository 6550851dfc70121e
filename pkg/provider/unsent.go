package provider

import (
	"errors"
	"net"
)

// Unsent reports whether err, from an HTTP transport's RoundTrip, proves
// the request never left: the connection could not be made (dial refused,
// no route, DNS failure). Any other transport error (a reset, a timeout, a
// dropped reply) may come after the request was sent. Providers use it to
// mark a call api.ErrorDetails.NotExecuted.
func Unsent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
