package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// maxBodyBytes bounds request bodies.
const maxBodyBytes = 8 << 20

// params are a request's parameters: query string merged with a
// form-encoded or JSON body (the body wins). All values are strings, as PVE
// sees them.
type params map[string]string

// readParams parses r's query and body. Booleans in JSON bodies become
// "1"/"0" and arrays are joined with ',' (PVE's "-list" formats).
func readParams(r *http.Request) (params, error) {
	p, err := parseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, err
	}
	if r.Body == nil || r.Method == http.MethodGet {
		return p, nil
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes))
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return p, nil
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "application/json" {
		return p, mergeJSON(p, raw)
	}
	form, err := parseQuery(string(raw))
	if err != nil {
		return nil, err
	}
	for k, v := range form {
		p[k] = v
	}
	return p, nil
}

// parseQuery decodes a query string or form body, keeping the first value of
// each key. Unlike url.ParseQuery it accepts raw ';' in values (tags=a;b).
func parseQuery(s string) (params, error) {
	out := params{}
	for s != "" {
		var pair string
		pair, s, _ = strings.Cut(s, "&")
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		key, err := url.QueryUnescape(k)
		if err != nil {
			return nil, err
		}
		val, err := url.QueryUnescape(v)
		if err != nil {
			return nil, err
		}
		if _, seen := out[key]; !seen {
			out[key] = val
		}
	}
	return out, nil
}

// mergeJSON adds the members of a JSON object body to p.
func mergeJSON(p params, raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return fmt.Errorf("malformed JSON body: %w", err)
	}
	for k, v := range obj {
		s, ok := jsonScalar(v)
		if !ok {
			return fmt.Errorf("malformed JSON body: %q is not a scalar or list", k)
		}
		if v != nil {
			p[k] = s
		}
	}
	return nil
}

// jsonScalar renders a decoded JSON value as PVE would see it.
func jsonScalar(v any) (string, bool) {
	switch t := v.(type) {
	case nil:
		return "", true
	case string:
		return t, true
	case json.Number:
		return t.String(), true
	case bool:
		if t {
			return "1", true
		}
		return "0", true
	case []any:
		parts := make([]string, 0, len(t))
		for _, item := range t {
			s, ok := jsonScalar(item)
			if !ok {
				return "", false
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, ","), true
	}
	return "", false
}

// boolParam reads a PVE boolean (1/0, true/false, yes/no, on/off).
func (p params) boolParam(key string) (value, set bool, err *apiError) {
	v, ok := p[key]
	if !ok {
		return false, false, nil
	}
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true, true, nil
	case "0", "false", "no", "off":
		return false, true, nil
	}
	return false, true, errParam(key, fmt.Sprintf("type check ('boolean') failed - got '%s'", v))
}

// intParam reads an integer parameter in [min, max].
func (p params) intParam(key string, minV, maxV int) (value int, set bool, err *apiError) {
	v, ok := p[key]
	if !ok {
		return 0, false, nil
	}
	n, convErr := strconv.Atoi(v)
	if convErr != nil {
		return 0, true, errParam(key, fmt.Sprintf("type check ('integer') failed - got '%s'", v))
	}
	if n < minV {
		return 0, true, errParam(key, fmt.Sprintf("value must have a minimum value of %d", minV))
	}
	if n > maxV {
		return 0, true, errParam(key, fmt.Sprintf("value must have a maximum value of %d", maxV))
	}
	return n, true, nil
}
