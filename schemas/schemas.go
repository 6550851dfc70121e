// Package schemas embeds the JSON Schemas (draft 2020-12) of every request,
// reply and event on the bus, files v1/<name>.json with $id BaseURL+<name>,
// and validates messages against them.
//
// Requests are closed (additionalProperties: false) because the services
// decode them strictly; replies and events are open, so a field added to v1
// does not break a client that validates them. v1/defs.json holds the
// definitions the others share (ids, tenant ids, secret references, enums).
package schemas

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"better-compute.io/compute/pkg/api"
)

//go:embed v1/*.json
var files embed.FS

// BaseURL is the $id of every schema without its file name.
const BaseURL = "https://better-compute.io/schemas/v1/"

// defsFile holds the shared definitions; it describes no message.
const defsFile = "defs.json"

// fileNames lists every embedded file name, sorted.
func fileNames() []string {
	paths, _ := fs.Glob(files, "v1/*.json") // the pattern is valid
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = path.Base(p)
	}
	return names
}

// Names lists the message schemas by file name, sorted (every file but
// defs.json), e.g. "instance.json", "secrets.put.request.json".
func Names() []string {
	return slices.DeleteFunc(fileNames(), func(n string) bool { return n == defsFile })
}

// compiled compiles every embedded file once, keyed by file name, with
// formats (date-time) asserted.
var compiled = sync.OnceValues(func() (map[string]*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	for _, name := range fileNames() {
		data, err := files.ReadFile("v1/" + name)
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if err := c.AddResource(BaseURL+name, doc); err != nil {
			return nil, err
		}
	}
	out := map[string]*jsonschema.Schema{}
	for _, name := range fileNames() {
		s, err := c.Compile(BaseURL + name)
		if err != nil {
			return nil, err
		}
		out[name] = s
	}
	return out, nil
})

// Validate checks the JSON message data against the schema called name (one
// of Names). Errors: NOT_FOUND (no such schema), INVALID_INPUT (data is not
// one JSON value, or breaks the schema: details.path names the field, e.g.
// "flavors[0].offerId", "" for the whole message; the message names the
// rule, never the offending value), INTERNAL (the embedded schemas do not
// compile).
func Validate(name string, data []byte) error {
	all, err := compiled()
	if err != nil {
		return api.Errorf(api.CodeInternal, "compile schemas: %v", err)
	}
	s, ok := all[name]
	if !ok || name == defsFile {
		return api.NotFound("schema", name)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return api.InvalidInput("", "message for schema %s is not one JSON value", name)
	}
	err = s.Validate(doc)
	var ve *jsonschema.ValidationError
	switch {
	case errors.As(err, &ve):
		return violation(name, ve)
	case err != nil:
		return api.Errorf(api.CodeInternal, "validate against %s: %v", name, err)
	}
	return nil
}

// violation turns the first leaf of a validation error into INVALID_INPUT
// naming the field: the missing or unknown property itself for required and
// additionalProperties.
func violation(schema string, ve *jsonschema.ValidationError) error {
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	loc := slices.Clone(ve.InstanceLocation)
	var rule string
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		loc, rule = append(loc, k.Missing[0]), "is required"
	case *kind.AdditionalProperties:
		loc, rule = append(loc, k.Properties[0]), "is an unknown field"
	case *kind.FalseSchema: // unevaluatedProperties: false, the only false schema
		rule = "is an unknown field"
	default:
		rule = "breaks " + strings.Join(ve.ErrorKind.KeywordPath(), "/")
	}
	p := dotted(loc)
	subject := p
	if subject == "" {
		subject = "message"
	}
	return api.InvalidInput(p, "%s %s (schema %s)", subject, rule, schema)
}

// dotted formats a JSON location as the services name fields:
// ["flavors","0","offerId"] is "flavors[0].offerId".
func dotted(loc []string) string {
	var b strings.Builder
	for _, tok := range loc {
		if _, err := strconv.Atoi(tok); err == nil {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}
