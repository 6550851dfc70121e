package bus

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"better-compute.io/compute/pkg/api"
)

// DefaultTimeout bounds a Call whose context has no deadline.
const DefaultTimeout = 10 * time.Second

type requestIDKey struct{}

// WithRequestID returns ctx carrying a request id that Call forwards in the
// Compute-Request-Id header.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID is the request id ctx carries ("" when none).
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// Call sends in (JSON-encoded; a []byte is sent as is) on subject and
// decodes the reply into out (nil to ignore it). The context's deadline
// (DefaultTimeout when it has none) travels in the Compute-Deadline header.
//
// Errors: the service's *api.ComputeError; INVALID_INPUT for a request
// larger than the server's max payload; UNAVAILABLE when nobody answers
// the subject or the deadline passes; INTERNAL for an unencodable request.
func Call(ctx context.Context, nc *nats.Conn, subject string, in, out any) error {
	_, err := CallHeaders(ctx, nc, subject, in, out)
	return err
}

// CallHeaders is Call that also returns the reply's headers (nil when no
// reply arrived), e.g. a provider's rate-limit state.
func CallHeaders(ctx context.Context, nc *nats.Conn, subject string, in, out any) (nats.Header, error) {
	ctx, cancel := withDefaultDeadline(ctx)
	defer cancel()
	data, ok := in.([]byte)
	if !ok {
		var err error
		if data, err = json.Marshal(in); err != nil {
			return nil, api.Errorf(api.CodeInternal, "encode request for %s: %v", subject, err)
		}
	}
	deadline, _ := ctx.Deadline()
	msg := nats.NewMsg(subject)
	msg.Data = data
	msg.Header.Set(DeadlineHeader, strconv.FormatInt(deadline.UnixMilli(), 10))
	if id := RequestID(ctx); id != "" {
		msg.Header.Set(RequestIDHeader, id)
	}
	reply, err := nc.RequestMsgWithContext(ctx, msg)
	if errors.Is(err, nats.ErrMaxPayload) {
		return nil, api.InvalidInput("", "the request for %s is %d bytes, more than the server's max payload of %d bytes",
			subject, len(data), nc.MaxPayload())
	}
	if err != nil {
		return nil, transportError(subject, err)
	}
	return reply.Header, DecodeReply(reply.Header.Get(micro.ErrorCodeHeader), reply.Header.Get(micro.ErrorHeader), reply.Data, out)
}

// withDefaultDeadline is ctx, or with no deadline of its own, ctx ending
// DefaultTimeout from now: no NATS wait of ours lasts forever.
func withDefaultDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, DefaultTimeout)
}

// transportError maps a NATS request failure to UNAVAILABLE (retryable).
func transportError(subject string, err error) error {
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return api.Errorf(api.CodeUnavailable, "no service answers %s", subject)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return api.Errorf(api.CodeUnavailable, "no reply on %s before the deadline", subject)
	case errors.Is(err, context.Canceled):
		return api.Errorf(api.CodeUnavailable, "request on %s cancelled", subject)
	}
	return api.Errorf(api.CodeUnavailable, "request on %s failed: %v", subject, err)
}
