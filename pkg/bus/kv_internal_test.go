package bus

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"better-compute.io/compute/pkg/api"
)

// Every way JetStream says that a compare-and-set lost is the same
// ComputeError; anything else is UNAVAILABLE.
func TestConflictError(t *testing.T) {
	wrongLast := &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence, Description: "wrong last sequence: 4"}
	wrongLastR3 := &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequenceConstant, Description: "wrong last sequence"}
	lost := []error{
		wrongLast, wrongLastR3, fmt.Errorf("nats: %w", wrongLastR3),
		jetstream.ErrKeyExists, fmt.Errorf("%w: %w", wrongLastR3, jetstream.ErrKeyExists), jetstream.ErrKeyRevisionMismatch,
	}
	for _, err := range lost {
		if got, want := api.AsComputeError(conflictError("create", "acme.x", 0, err)), api.Errorf(api.CodeAlreadyExists, "acme.x already exists"); !reflect.DeepEqual(got, want) {
			t.Errorf("create failing with %v = %v, want %v", err, got, want)
		}
		for _, op := range []string{"update", "delete"} {
			if got, want := api.AsComputeError(conflictError(op, "acme.x", 7, err)), api.Errorf(api.CodeConflict, "acme.x changed since revision 7"); !reflect.DeepEqual(got, want) {
				t.Errorf("%s failing with %v = %v, want %v", op, err, got, want)
			}
		}
	}
	other := &jetstream.APIError{Code: 503, ErrorCode: jetstream.JSErrCodeJetStreamNotEnabled, Description: "jetstream not enabled"}
	for _, err := range []error{other, errors.New("nats: timeout")} {
		if got := conflictError("update", "acme.x", 7, err); !api.IsCode(got, api.CodeUnavailable) {
			t.Errorf("update failing with %v = %v, want UNAVAILABLE", err, got)
		}
	}
	if err := conflictError("create", "acme.x", 0, nil); err != nil {
		t.Errorf("no failure = %v, want nil", err)
	}
}
