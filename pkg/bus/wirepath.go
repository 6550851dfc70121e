package bus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// encoding/json names a type error's field by Go struct path (embedded
// structs by their Go type name, no array indices) and an unknown field by its
// bare key. These helpers find the JSON path ("query.minVcpu",
// "flavors[0].offerId") in the document instead.

// unknownFieldPath is the path of an object key named key that the Go type t
// (the decode target) has no field for, "" when none is found.
func unknownFieldPath(data []byte, t reflect.Type, key string) string {
	w := pathWalker{dec: json.NewDecoder(bytes.NewReader(data)), unknown: key, offset: -1}
	path, _ := w.walk(t, "")
	return path
}

// valuePath is the path of the innermost value spanning byte offset of data
// (where encoding/json reports a type error), "" when none does.
func valuePath(data []byte, offset int64) string {
	w := pathWalker{dec: json.NewDecoder(bytes.NewReader(data)), offset: offset}
	path, _ := w.walk(nil, "")
	return path
}

type pathWalker struct {
	dec     *json.Decoder
	unknown string // key searched for (unknownFieldPath)
	offset  int64  // byte offset searched for (valuePath)
}

// walk reads one value typed t (nil: untyped) at path and reports the path
// found in it, and whether the search is over (found or the input ended).
func (w *pathWalker) walk(t reflect.Type, path string) (string, bool) {
	start := w.dec.InputOffset()
	tok, err := w.dec.Token()
	if err != nil {
		return "", true
	}
	if delim, ok := tok.(json.Delim); ok {
		t = decodeTarget(t)
		for i := 0; w.dec.More(); i++ {
			childType, childPath := elemType(t), fmt.Sprintf("%s[%d]", path, i)
			if delim == '{' {
				keyTok, err := w.dec.Token()
				if err != nil {
					return "", true
				}
				key, _ := keyTok.(string)
				var known bool
				childType, known = fieldType(t, key)
				childPath = joinPath(path, key)
				if !known && key == w.unknown {
					return childPath, true
				}
			}
			if found, done := w.walk(childType, childPath); done {
				return found, done
			}
		}
		if _, err := w.dec.Token(); err != nil {
			return "", true
		}
	}
	if w.offset > start && w.offset <= w.dec.InputOffset() {
		return path, true
	}
	return "", false
}

// joinPath appends an object member to path.
func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// decodeTarget is the type whose fields and elements a JSON value fills:
// pointers followed, nil for interfaces and json.Unmarshaler implementations
// (they accept any member).
func decodeTarget(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	return t
}

// elemType is the element type of a slice or array target, nil otherwise.
func elemType(t reflect.Type) reflect.Type {
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		return t.Elem()
	}
	return nil
}

// fieldType is the type of member key of target t and whether t accepts the
// key: a struct only its JSON fields (exact name first, then any case, as
// encoding/json matches), anything else every key.
func fieldType(t reflect.Type, key string) (reflect.Type, bool) {
	switch {
	case t == nil:
		return nil, true
	case t.Kind() == reflect.Map:
		return t.Elem(), true
	case t.Kind() != reflect.Struct:
		return nil, true
	}
	fields := jsonFields(t)
	for _, f := range fields {
		if f.name == key {
			return f.typ, true
		}
	}
	for _, f := range fields {
		if strings.EqualFold(f.name, key) {
			return f.typ, true
		}
	}
	return nil, false
}

type jsonField struct {
	name string
	typ  reflect.Type
}

// jsonFields lists the JSON members of struct t, embedded structs without a
// JSON name flattened into it.
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" && sf.Tag.Get("json") == "-" {
			continue
		}
		if sf.Anonymous && name == "" {
			if et := derefType(sf.Type); et.Kind() == reflect.Struct {
				out = append(out, jsonFields(et)...)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		out = append(out, jsonField{name: name, typ: sf.Type})
	}
	return out
}

func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}
