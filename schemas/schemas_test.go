package schemas

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"better-compute.io/compute/pkg/api"
)

// readDoc parses the embedded file name.
func readDoc(t *testing.T, name string) map[string]any {
	t.Helper()
	data, err := files.ReadFile("v1/" + name)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(data, &doc), name)
	return doc
}

func TestEveryFileCompiles(t *testing.T) {
	all, err := compiled()
	require.NoError(t, err)
	names := fileNames()
	require.Contains(t, names, defsFile)
	require.Len(t, all, len(names))
	for _, name := range names {
		doc := readDoc(t, name)
		assert.NotNil(t, all[name], name)
		assert.Equal(t, "https://json-schema.org/draft/2020-12/schema", doc["$schema"], name)
		assert.Equal(t, BaseURL+name, doc["$id"], name)
		assert.NotEmpty(t, doc["title"], name)
		assert.NotEmpty(t, doc["description"], name)
	}
	assert.NotContains(t, Names(), defsFile)
	assert.Len(t, Names(), len(names)-1)
}

func TestRealMessagesValidate(t *testing.T) {
	msgs := messages(t)
	for _, name := range Names() {
		require.NotEmpty(t, msgs[name], "no real message for %s", name)
	}
	for name, list := range msgs {
		for i, m := range list {
			data, ok := m.([]byte) // an error body as bus.EncodeError wrote it
			if !ok {
				require.IsType(t, goTypes[name], m, "%s: a message of another type", name)
				var err error
				data, err = json.Marshal(m)
				require.NoError(t, err)
			}
			t.Run(fmt.Sprintf("%s/%d", name, i), func(t *testing.T) {
				assert.NoError(t, Validate(name, data), "%s", data)
			})
		}
	}
}

// The enums of defs.json and machine.json are exactly the Go lists.
func TestEnumsMatchGo(t *testing.T) {
	defs := readDoc(t, defsFile)["$defs"].(map[string]any)
	state := readDoc(t, "machine.json")["properties"].(map[string]any)["state"]
	codes := make([]string, len(api.Codes()))
	for i, c := range api.Codes() {
		codes[i] = string(c)
	}
	assert.Equal(t, codes, enumOf(defs["code"]))
	assert.Equal(t, strs(api.PowerActions()), enumOf(defs["powerAction"]))
	assert.Equal(t, strs(api.MachineStates()), enumOf(state))
	assert.Equal(t, strs(api.Phases()), enumOf(defs["phase"]))
	assert.Equal(t, strs([]api.Power{api.PowerOn, api.PowerOff}), enumOf(defs["power"]))
	offer := readDoc(t, "offer.json")["properties"].(map[string]any)
	assert.Equal(t, strs(api.CapacityTypes()), enumOf(offer["capacityType"]))
}

// strs is a list of typed wire values as strings.
func strs[T ~string](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

// enumOf is the string enum of a schema node.
func enumOf(node any) []string {
	var out []string
	for _, v := range node.(map[string]any)["enum"].([]any) {
		out = append(out, v.(string))
	}
	return out
}

func TestRefused(t *testing.T) {
	const (
		inst = "inst_01jd3x5y7z9a1b2c3d4e5f6g7h"
		pool = "pool_01jd3x5y7z9a1b2c3d4e5f6g7h"
		acct = `{"id":"pacct_01jd3x5y7z9a1b2c3d4e5f6g7h","tenantId":"acme-1","version":1,"config":{}}`
	)
	cases := []struct {
		schema, data, path string
	}{
		// missing required field
		{"instances.create.request.json", `{"flavor":"small"}`, "poolId"},
		{"provider.create.request.json", `{"account":` + acct + `,"idempotencyKey":"k","machine":{"name":"a","offerId":"o"}}`, "machine.image"},
		{"provider.get.reply.json", `{}`, "machine"},
		{"error.json", `{"error":{"code":"RATE_LIMITED","message":"slow","details":{}}}`, "error.details.retryAfterMs"},
		{"instance.json", `{"id":"` + inst + `"}`, "tenantId"},
		// wrong enum or const
		{"instances.power.request.json", `{"id":"` + inst + `","action":"hibernate"}`, "action"},
		{"provider.power.request.json", `{"account":` + acct + `,"id":"1","action":"ON"}`, "action"},
		{"machine.json", `{"id":"1","state":"hibernating","addresses":[]}`, "state"},
		{"error.json", `{"error":{"code":"TEAPOT","message":"x"}}`, "error.code"},
		{"offer.json", `{"id":"s","kind":"vps","region":"r","vcpu":1,"memoryGiB":1,"available":true,"capacityType":"preemptible","interruptionProbability":0}`, "capacityType"},
		{"offer.json", `{"id":"s","kind":"vps","region":"r","vcpu":1,"memoryGiB":1,"available":true,"capacityType":"spot","interruptionProbability":1.5}`, "interruptionProbability"},
		{"instances.list.request.json", `{"phase":"running"}`, "phase"},
		{"deleted.json", `{"id":"` + pool + `","deleted":false}`, "deleted"},
		// extra field in a request, also nested and through the embedded page
		{"secrets.put.request.json", `{"name":"n","value":"v","ttl":5}`, "ttl"},
		{"pools.create.request.json", `{"class":"provider","providerAccountId":"pacct_01jd3x5y7z9a1b2c3d4e5f6g7h","agent":"none","flavors":[{"name":"s","offerId":"o","cpu":2}]}`, "flavors[0].cpu"},
		{"instances.list.request.json", `{"limit":5,"bogus":1}`, "bogus"},
		{"provider.list.request.json", `{"account":{"id":"a","tenantId":"t","token":"x"}}`, "account.token"},
		// bad id, tenant, secret reference, time
		{"id.request.json", `{"id":"inst_01JD3X5Y7Z9A1B2C3D4E5F6G7H"}`, "id"},
		{"instances.create.request.json", `{"poolId":"` + inst + `","flavor":"small"}`, "poolId"},
		{"instances.reinstall.request.json", `{"id":"inst_123","image":"debian-12"}`, "id"},
		{"accounts.create.request.json", `{"tenantId":"acme.corp","provider":"memory","name":"m"}`, "tenantId"},
		{"secrets.resolve.request.json", `{"tenantId":"acme-1","ref":"secret://acme-1/pool_01jd3x5y7z9a1b2c3d4e5f6g7h"}`, "ref"},
		{"event.json", `{"id":"evt_01jd3x5y7z9a1b2c3d4e5f6g7h","tenantId":"acme-1","resource":"instances","resourceId":"` + inst + `","type":"power.on","time":"2026-01-02T03:04:05Z"}`, "type"},
		{"secret.json", `{"id":"sec_01jd3x5y7z9a1b2c3d4e5f6g7h","tenantId":"acme-1","name":"n","ref":"secret://acme-1/sec_01jd3x5y7z9a1b2c3d4e5f6g7h","createdAt":"yesterday"}`, "createdAt"},
		// bounds and types
		{"list.request.json", `{"limit":1001}`, "limit"},
		{"pools.create.request.json", `{"class":"provider","providerAccountId":"pacct_01jd3x5y7z9a1b2c3d4e5f6g7h","agent":"none","flavors":[]}`, "flavors"},
		{"accounts.update.request.json", `{"id":"pacct_01jd3x5y7z9a1b2c3d4e5f6g7h","version":"1"}`, "version"},
		// not one JSON object
		{"empty.json", `[]`, ""},
		{"empty.json", `{} {}`, ""},
	}
	for _, c := range cases {
		t.Run(c.schema+"/"+c.path, func(t *testing.T) {
			err := Validate(c.schema, []byte(c.data))
			require.Error(t, err)
			ce := api.AsComputeError(err)
			assert.Equal(t, api.CodeInvalidInput, ce.Code, ce.Message)
			assert.Equal(t, c.path, ce.Path(), ce.Message)
			assert.Contains(t, ce.Message, c.schema)
		})
	}
}

// Error messages name the rule, never the offending value (it may be a
// credential pasted into the wrong field).
func TestMessageHidesValues(t *testing.T) {
	const pasted = "hunter2-very-secret"
	err := Validate("secrets.put.request.json", []byte(`{"name":"`+pasted+`!","value":"v"}`))
	ce := api.AsComputeError(err)
	require.Equal(t, api.CodeInvalidInput, ce.Code)
	assert.Equal(t, "name", ce.Path())
	assert.NotContains(t, ce.Message, pasted)
	assert.Contains(t, ce.Message, "pattern")
}

func TestUnknownSchema(t *testing.T) {
	for _, name := range []string{"nope.json", defsFile, ""} {
		err := Validate(name, []byte(`{}`))
		assert.True(t, api.IsCode(err, api.CodeNotFound), "%s: %v", name, err)
	}
	assert.True(t, slices.IsSorted(Names()))
}
