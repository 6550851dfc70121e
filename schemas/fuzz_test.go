package schemas

import (
	"encoding/json"
	"slices"
	"testing"

	"better-compute.io/compute/pkg/api"
)

// FuzzValidate: any bytes against any schema answer nil or INVALID_INPUT,
// never a panic or another code.
func FuzzValidate(f *testing.F) {
	names := Names()
	for name, msgs := range messages(f) {
		for _, m := range msgs {
			data, ok := m.([]byte)
			if !ok {
				data, _ = json.Marshal(m)
			}
			f.Add(uint8(slices.Index(names, name)), data)
		}
	}
	f.Add(uint8(0), []byte(`{"a":[1,{"b":null}],"c":1e400}`))
	f.Fuzz(func(t *testing.T, i uint8, data []byte) {
		err := Validate(names[int(i)%len(names)], data)
		if err != nil && !api.IsCode(err, api.CodeInvalidInput) {
			t.Fatalf("want nil or INVALID_INPUT, got %v", err)
		}
	})
}
