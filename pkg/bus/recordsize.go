package bus

import (
	"encoding/json"
	"sort"

	"better-compute.io/compute/pkg/api"
)

// Size limits of stored records and list replies, in bytes of encoded JSON
// (after escaping: '<' is six bytes, "\u003c"). nats-server's default
// max_payload is 1 MiB (1,048,576 bytes) per message, a KV write included;
// both limits leave room below it for a record's later growth (its status)
// and a reply's envelope. docs/user-guide.md lists them.
const (
	// MaxRecordBytes bounds a record a Table writes: a larger one is
	// refused with INVALID_INPUT before it reaches the store.
	MaxRecordBytes = 256 * 1024
	// MaxPageBytes bounds the records of one list page: List ends a page
	// before the record that would cross it (a page holds at least one
	// record, and MaxRecordBytes is smaller).
	MaxPageBytes = 512 * 1024
)

// GrowthRoom is the room a record the system writes again after its create
// (an instance: its status, conditions, last operation and deletion mark)
// keeps below MaxRecordBytes when it is created (a Table made with
// growthRoom refuses a larger create), so those later writes are never
// refused for size: a status write refused would leave the instance stuck,
// and a delete refused would keep it for good.
const GrowthRoom = 32 * 1024

// legacyGrowth is how many bytes an update may add to a record that was
// stored larger than MaxRecordBytes before the limit existed: enough for a
// delete or power request and a status, so such a record can still be
// deleted.
const legacyGrowth = 4 * 1024

// checkRecordSize refuses data, the encoding of a record, when it is larger
// than MaxRecordBytes, unless it updates prev (the record as read; nil for
// a create) that was as large already and grows it by legacyGrowth at
// most; a create (prev nil) of a table that keeps room (GrowthRoom) is
// refused past MaxRecordBytes less room. Error: INVALID_INPUT whose
// details.path names the record's largest field (largestField), the one
// to shrink.
func checkRecordSize(data []byte, prev any, room int) error {
	if limit := MaxRecordBytes - room; prev == nil && room > 0 && len(data) > limit {
		path := largestField(data)
		return api.InvalidInput(path, "%s is too large: the record would be %d bytes of JSON (escapes counted), more than the limit "+
			"of %d for a new record (%d, less %d kept for its status)", path, len(data), limit, MaxRecordBytes, room)
	}
	if len(data) <= MaxRecordBytes {
		return nil
	}
	if prev != nil {
		if old, err := json.Marshal(prev); err == nil && len(old) > MaxRecordBytes && len(data) <= len(old)+legacyGrowth {
			return nil
		}
	}
	path := largestField(data)
	return api.InvalidInput(path, "%s is too large: the record would be %d bytes of JSON (escapes counted), more than the limit of %d",
		path, len(data), MaxRecordBytes)
}

// largestField is the dotted path of the member of the JSON object data
// that holds most of its bytes, descending into objects while one member
// holds more than half of its parent ("spec.userData"); "" when data is no
// object. Arrays are not entered: "sshKeys" names the list.
func largestField(data []byte) string {
	path := ""
	for {
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) != nil || len(obj) == 0 {
			return path
		}
		names := make([]string, 0, len(obj))
		for name := range obj {
			names = append(names, name)
		}
		sort.Strings(names)
		best := names[0]
		for _, name := range names[1:] {
			if len(obj[name]) > len(obj[best]) {
				best = name
			}
		}
		if path != "" && 2*len(obj[best]) <= len(data) {
			return path
		}
		if path != "" {
			path += "."
		}
		path += best
		data = obj[best]
	}
}
