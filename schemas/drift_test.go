package schemas

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// goTypes maps every message schema to the Go type on the wire.
var goTypes = map[string]any{
	"secrets.put.request.json":         api.SecretPutRequest{},
	"secret.json":                      api.Secret{},
	"secret-list.json":                 api.List[api.Secret]{},
	"id.request.json":                  api.IDRequest{},
	"list.request.json":                api.ListRequest{},
	"deleted.json":                     api.Deleted{},
	"accounts.create.request.json":     api.AccountCreateRequest{},
	"accounts.update.request.json":     api.AccountUpdateRequest{},
	"accounts.offers.request.json":     api.AccountOffersRequest{},
	"account.json":                     api.Account{},
	"account-list.json":                api.List[api.Account]{},
	"offer.json":                       api.Offer{},
	"offer-list.json":                  api.List[api.Offer]{},
	"pools.create.request.json":        api.PoolCreateRequest{},
	"pool.json":                        api.Pool{},
	"pool-list.json":                   api.List[api.Pool]{},
	"pools.update.request.json":        api.PoolUpdateRequest{},
	"pools.rollback.request.json":      api.PoolRollbackRequest{},
	"instances.create.request.json":    api.InstanceCreateRequest{},
	"instances.list.request.json":      api.InstanceListRequest{},
	"instances.power.request.json":     api.InstancePowerRequest{},
	"instances.reinstall.request.json": api.InstanceReinstallRequest{},
	"instances.update.request.json":    api.InstanceUpdateRequest{},
	"instance.json":                    api.Instance{},
	"instance-list.json":               api.List[api.Instance]{},
	"event.json":                       api.Event{},
	"error.json":                       bus.ErrorEnvelope{},
	"provider.describe.reply.json":     api.ProviderDescription{},
	"provider.offers.request.json":     api.ProviderOffersRequest{},
	"provider.create.request.json":     api.ProviderCreateRequest{},
	"machine.json":                     api.ExternalMachine{},
	"provider.get.reply.json":          api.ProviderGetReply{},
	"provider.machine.request.json":    api.ProviderMachineRequest{},
	"provider.power.request.json":      api.ProviderPowerRequest{},
	"provider.reinstall.request.json":  api.ProviderReinstallRequest{},
	"provider.relabel.request.json":    api.ProviderRelabelRequest{},
	"provider.list.request.json":       api.ProviderListRequest{},
	"provider.checkpool.request.json":  api.ProviderPoolCheckRequest{},
	"machine-list.json":                api.List[api.ExternalMachine]{},
	"secrets.resolve.request.json":     api.SecretResolveRequest{},
	"secrets.resolve.reply.json":       api.SecretResolveReply{},
	"empty.json":                       api.Empty{},
	"tenant.json":                      api.Tenant{},
	"tenant-credential.json":           api.TenantCredential{},
	"tenant-list.json":                 api.List[api.Tenant]{},
	"tenants.create.request.json":      api.TenantCreateRequest{},
	"tenants.credentials.request.json": api.TenantCredentialsRequest{},
	"tenants.credentials.reply.json":   api.TenantCredentialsReply{},
	"tenants.revoke.request.json":      api.TenantRevokeRequest{},
	"instances.exec.request.json":      api.InstanceExecRequest{},
	"exec-result.json":                 api.InstanceExecReply{},
	"instances.logs.request.json":      api.InstanceLogsRequest{},
	"log.json":                         api.InstanceLogsReply{},
	"provider.json":                    api.ProviderInfo{},
	"provider-list.json":               api.List[api.ProviderInfo]{},
	"provider.resize.request.json":     api.ProviderResizeRequest{},
	"resize-result.json":               api.ResizeResult{},
	"provider.metrics.request.json":    api.ProviderMetricsRequest{},
	"instances.metrics.request.json":   api.InstanceMetricsRequest{},
	"metrics.json":                     api.Metrics{},
	"accounts.bootstrap.request.json":  api.AccountBootstrapRequest{},
}

// TestNoDrift checks, for every message schema and every struct reachable
// from its Go type (through fields, pointers, slices and $ref), that the
// struct's json field names are exactly the schema's properties.
func TestNoDrift(t *testing.T) {
	assert.ElementsMatch(t, Names(), slices.Collect(maps.Keys(goTypes)))
	d := drift{t: t, docs: map[string]map[string]any{}, seen: map[string]bool{}}
	for _, name := range fileNames() {
		d.docs[name] = readDoc(t, name)
	}
	for name, v := range goTypes {
		d.walk(name, d.docs[name], reflect.TypeOf(v), name)
	}
}

type drift struct {
	t    *testing.T
	docs map[string]map[string]any // file name → parsed schema
	seen map[string]bool           // type@file:node already compared
}

var marshaler = reflect.TypeFor[json.Marshaler]()

// walk compares Go type typ with schema node of file; where names the spot
// for failure messages.
func (d *drift) walk(file string, node map[string]any, typ reflect.Type, where string) {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch {
	case typ.Kind() == reflect.Slice && typ.Elem().Kind() != reflect.Uint8:
		file, node = d.deref(file, node, where)
		items, ok := node["items"].(map[string]any)
		require.True(d.t, ok, "%s: Go slice, schema without items", where)
		d.walk(file, items, typ.Elem(), where+"[]")
	case typ.Kind() == reflect.Struct && !typ.Implements(marshaler):
		file, node = d.deref(file, node, where)
		key := fmt.Sprintf("%s@%s:%p", typ, file, node)
		if d.seen[key] {
			return
		}
		d.seen[key] = true
		fields, props := jsonFields(typ), d.properties(file, node)
		assert.ElementsMatch(d.t, slices.Collect(maps.Keys(fields)), slices.Collect(maps.Keys(props)),
			"%s: json fields of %s (first) and schema properties (second) differ", where, typ)
		for name, ft := range fields {
			if p, ok := props[name]; ok {
				d.walk(file, p, ft, where+"."+name)
			}
		}
	}
}

// deref follows $ref and the non-null branch of anyOf until node declares
// properties or items.
func (d *drift) deref(file string, node map[string]any, where string) (string, map[string]any) {
	for node["properties"] == nil && node["items"] == nil {
		if ref, ok := node["$ref"].(string); ok {
			file, node = d.resolve(file, ref, where)
			continue
		}
		branches, _ := node["anyOf"].([]any)
		i := slices.IndexFunc(branches, func(b any) bool { return b.(map[string]any)["type"] != "null" })
		require.GreaterOrEqual(d.t, i, 0, "%s: no object schema", where)
		node = branches[i].(map[string]any)
	}
	return file, node
}

// properties collects node's properties and those of an object it extends
// by $ref (the page of list.request.json, as Go embeds ListRequest).
func (d *drift) properties(file string, node map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	if ref, ok := node["$ref"].(string); ok {
		f, n := d.resolve(file, ref, file)
		for k, v := range d.properties(f, n) {
			out[k] = v
		}
	}
	props, _ := node["properties"].(map[string]any)
	for k, v := range props {
		out[k] = v.(map[string]any)
	}
	return out
}

// resolve finds a $ref ("machine.json", "#/$defs/x", "defs.json#/$defs/y")
// of file among the embedded files.
func (d *drift) resolve(file, ref, where string) (string, map[string]any) {
	base, frag, _ := strings.Cut(strings.TrimPrefix(ref, BaseURL), "#")
	if base != "" {
		file = base
	}
	node, ok := d.docs[file]
	require.True(d.t, ok, "%s: $ref %s leaves the embedded schemas", where, ref)
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		if tok != "" {
			node, ok = node[tok].(map[string]any)
			require.True(d.t, ok, "%s: $ref %s does not resolve", where, ref)
		}
	}
	return file, node
}

// jsonFields maps the json names of typ's fields to their types, following
// embedded structs (and pointers to them) as encoding/json does: by json
// name, a field of typ itself hiding one of an embedded struct.
func jsonFields(typ reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	var direct []reflect.StructField
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		embedded := f.Type
		if embedded.Kind() == reflect.Pointer {
			embedded = embedded.Elem()
		}
		switch {
		case f.Anonymous && name == "" && embedded.Kind() == reflect.Struct:
			maps.Copy(out, jsonFields(embedded))
		case f.IsExported() && name != "-":
			direct = append(direct, f)
		}
	}
	for _, f := range direct {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}
