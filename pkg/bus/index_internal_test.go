package bus

import (
	"container/list"
	"testing"
)

// A cached record is a copy of the message's value: nats.go hands the
// value as a slice of one buffer with the message's headers, which
// CacheBytes does not count (kept, they made the cache hold 1.6× its bound
// for records of a few bytes).
func TestIndexCacheKeepsACopyOfTheValue(t *testing.T) {
	ix := &Index[int]{o: IndexOptions[int]{CacheBytes: 1 << 10}, cache: list.New()}
	msg := []byte(`Nats-Expected-Last-Subject-Sequence: 0{"n":1}`)
	value := msg[len(msg)-len(`{"n":1}`):]
	entry := &indexEntry[int]{id: "a"}
	ix.store(entry, value)
	for i := range msg {
		msg[i] = 'x'
	}
	if string(entry.raw) != `{"n":1}` || ix.cacheBytes != len(`{"n":1}`)+cacheEntryOverhead {
		t.Fatalf("cached %q costing %d, want {\"n\":1} costing %d", entry.raw, ix.cacheBytes, len(`{"n":1}`)+cacheEntryOverhead)
	}
}
