package bus

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"better-compute.io/compute/pkg/api"
)

func TestMissingKeys(t *testing.T) {
	set := func(keys ...string) map[string]bool {
		m := map[string]bool{}
		for _, k := range keys {
			m[k] = true
		}
		return m
	}
	cases := []struct {
		name       string
		want, seen map[string]bool
		missing    int
	}{
		{"no leader view (plain KeyValue)", nil, set("a.1"), 0},
		{"replica holds all", set("a.1", "a.2"), set("a.1", "a.2"), 0},
		{"replica holds more (written since)", set("a.1"), set("a.1", "a.2"), 0},
		{"replica lags by one", set("a.1", "a.2", "a.3"), set("a.1", "a.2"), 1},
		{"replica holds nothing yet", set("a.1", "a.2"), set(), 2},
	}
	for _, tc := range cases {
		if got := missingKeys(tc.want, tc.seen); got != tc.missing {
			t.Errorf("%s: %d missing, want %d", tc.name, got, tc.missing)
		}
	}
}

func TestTransientStreamError(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{context.DeadlineExceeded, true},
		{fmt.Errorf("create: %w", nats.ErrTimeout), true},
		{nats.ErrNoResponders, true},
		{jetstream.ErrBucketNotFound, true},
		{&jetstream.APIError{Code: 503, Description: "JetStream system temporarily unavailable"}, true},
		{&jetstream.APIError{Code: 500, Description: "no suitable peers"}, true},
		{&jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamNameInUse, Description: "stream name already in use with a different configuration"}, false},
		{errors.New("invalid stream name"), false},
		{&jetstream.APIError{Code: 500, ErrorCode: 10052, Description: "stream configuration update can not change persist mode"}, false},
	}
	for _, c := range cases {
		if got := transientStreamError(c.err); got != c.want {
			t.Errorf("transientStreamError(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// silentKV is a bucket whose watchers never deliver anything, not even the
// end-of-values marker (a consumer whose messages never arrive).
type silentKV struct{ jetstream.KeyValue }

func (silentKV) Bucket() string { return "silent" }

func (silentKV) WatchFiltered(context.Context, []string, ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	return silentWatcher{}, nil
}

type silentWatcher struct{}

func (silentWatcher) Updates() <-chan jetstream.KeyValueEntry { return nil }
func (silentWatcher) Stop() error                             { return nil }

// A listing whose context has no deadline still ends (after DefaultTimeout)
// with UNAVAILABLE when the watcher never delivers; before, it waited forever.
func TestListKeysWithoutDeadlineEnds(t *testing.T) {
	keys, err := listKeys(context.Background(), silentKV{}, "acme.")
	if !api.IsCode(err, api.CodeUnavailable) || keys != nil {
		t.Fatalf("listing a silent bucket: keys %v, err %v; want UNAVAILABLE", keys, err)
	}
}
