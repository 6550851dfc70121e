package bus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"better-compute.io/compute/pkg/api"
)

// DeadlineHeader carries the caller's absolute deadline as Unix milliseconds.
// Services stop working on a request when it passes.
const DeadlineHeader = "Compute-Deadline"

// RequestIDHeader carries a request id that services log with every line.
const RequestIDHeader = "Compute-Request-Id"

// ErrorEnvelope is the JSON body of a failed reply.
type ErrorEnvelope struct {
	Error *api.ComputeError `json:"error"`
}

// StatusOf is the numeric service error code sent for code: its
// api.Catalogue row's status (500 for unknown codes).
func StatusOf(code api.Code) int { return code.Info().Status }

// EncodeError returns the header code, description and body of a failed reply.
func EncodeError(err *api.ComputeError) (code, description string, body []byte) {
	// Cannot fail: api.ErrorDetails holds only strings, integers, bools and
	// string lists (TestErrorDetailsAlwaysEncode).
	body, _ = json.Marshal(ErrorEnvelope{Error: err})
	return strconv.Itoa(StatusOf(err.Code)), err.Message, body
}

// DecodeReply turns a reply into out (success) or a *api.ComputeError
// (failure, recognised by the Nats-Service-Error-Code header or an
// {"error":{…}} body). out may be nil to ignore a successful body.
func DecodeReply(headerCode, headerText string, data []byte, out any) error {
	if headerCode != "" || bytes.HasPrefix(bytes.TrimSpace(data), []byte(`{"error":`)) {
		// A value of the wrong type (a peer's detail "status":"503") is
		// left out and the rest decoded (json.Unmarshal does so, then
		// reports the first UnmarshalTypeError): the code, the message and
		// the other details survive.
		var env ErrorEnvelope
		err := json.Unmarshal(data, &env)
		var typeErr *json.UnmarshalTypeError
		if (err == nil || errors.As(err, &typeErr)) && env.Error != nil && env.Error.Code != "" {
			return env.Error
		}
		if headerCode == "" {
			headerCode = "500"
		}
		return api.Errorf(codeFromStatus(headerCode), "%s", headerText)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return api.Errorf(api.CodeInternal, "malformed reply: %v", err)
	}
	return nil
}

// codeFromStatus maps a bare numeric error header (a reply from a service
// that does not send our body) back to a code: the inverse of StatusOf, 409
// (shared by ALREADY_EXISTS, CONFLICT and INVALID_STATE) read as CONFLICT,
// anything unknown as INTERNAL.
func codeFromStatus(status string) api.Code {
	if status == strconv.Itoa(StatusOf(api.CodeConflict)) {
		return api.CodeConflict
	}
	for _, c := range api.Codes() {
		if strconv.Itoa(StatusOf(c)) == status {
			return c
		}
	}
	return api.CodeInternal
}

// maxDecodeDepth bounds nesting in request bodies.
const maxDecodeDepth = 32

// Decode strictly decodes a JSON request body into v: unknown fields, wrong
// types, trailing data, nesting deeper than 32 levels and malformed JSON are
// INVALID_INPUT naming the field in details.path.
func Decode(data []byte, v any) error {
	trimmed, err := objectBody(data)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err, trimmed, v)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return api.InvalidInput("", "request body has data after the JSON object")
	}
	return nil
}

// depth is the deepest nesting of objects and arrays in data (strings skipped).
func depth(data []byte) int {
	d, most, inString, escaped := 0, 0, false, false
	for _, c := range data {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			d++
			most = max(most, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return most
}

// decodeError turns an encoding/json error of decoding data into v into
// INVALID_INPUT naming the field.
func decodeError(err error, data []byte, v any) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return api.InvalidInput("", "malformed JSON at byte %d: %v", syntax.Offset, syntax)
	case errors.As(err, &typ):
		path := valuePath(data, typ.Offset)
		if path == "" {
			path = "."
		}
		return api.InvalidInput(path, "field %q must be %s, not a JSON %s", path, jsonKind(typ.Type.Kind().String()), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return api.InvalidInput("", "malformed JSON: unexpected end of input")
	}
	msg := err.Error()
	if quoted, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		field, uErr := strconv.Unquote(quoted)
		if uErr != nil {
			field = quoted
		}
		path := unknownFieldPath(data, reflect.TypeOf(v), field)
		if path == "" {
			path = field
		}
		return api.InvalidInput(path, "unknown field %q", path)
	}
	return api.InvalidInput("", "malformed request: %s", msg)
}

// jsonKind names a Go kind the way a JSON user thinks of it.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	}
	return fmt.Sprintf("a %s", kind)
}

// DecodeLoose decodes a JSON object body into v, ignoring fields v does not
// name (for reading one part of a request before decoding it strictly).
// Errors: INVALID_INPUT as Decode.
func DecodeLoose(data []byte, v any) error {
	trimmed, err := objectBody(data)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(trimmed, v); err != nil {
		return decodeError(err, trimmed, v)
	}
	return nil
}

// objectBody trims data and checks that it is a JSON object nesting at most
// maxDecodeDepth levels.
func objectBody(data []byte) ([]byte, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, api.InvalidInput("", "request body must be a JSON object")
	}
	if depth(trimmed) > maxDecodeDepth {
		return nil, api.InvalidInput("", "request body nests deeper than %d levels", maxDecodeDepth)
	}
	return trimmed, nil
}
