package bus_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// nested returns a JSON object whose member "a" nests levels arrays deep, so
// the document nests levels+1 deep.
func nested(levels int) string {
	return `{"a":` + strings.Repeat("[", levels) + strings.Repeat("]", levels) + `}`
}

// decodeCase is one Decode input with the expected INVALID_INPUT path and
// message ("" path and message with ok: success).
type decodeCase struct {
	name    string
	body    string
	target  func() any
	ok      bool
	path    string
	message string
}

// exotic has the member kinds a path search must walk or skip.
type exotic struct {
	Raw    json.RawMessage       `json:"raw"`
	ByName map[string]api.Flavor `json:"byName"`
	Ptr    *api.OfferQuery       `json:"ptr"`
	Any    any                   `json:"any"`
	Hidden string                `json:"-"`
	api.IDRequest
}

func exoticReq() any   { return &exotic{} }
func offersReq() any   { return &api.AccountOffersRequest{} }
func poolReq() any     { return &api.PoolCreateRequest{} }
func instListReq() any { return &api.InstanceListRequest{} }
func anyMap() any      { return &map[string]any{} }

var decodeCases = []decodeCase{
	{name: "valid", body: `{"id":"pacct_1","query":{"minVcpu":2}}`, target: offersReq, ok: true},
	{name: "valid with whitespace", body: " \n\t{\"id\":\"x\"} \n", target: offersReq, ok: true},
	{name: "unknown top-level field", body: `{"id":"x","bogus":1}`, target: offersReq,
		path: "bogus", message: `unknown field "bogus"`},
	{name: "unknown nested field", body: `{"id":"x","query":{"minVcpu":1,"maxVcpu":4}}`, target: offersReq,
		path: "query.maxVcpu", message: `unknown field "query.maxVcpu"`},
	{name: "unknown field in array element", body: `{"class":"provider","flavors":[{"name":"a","offerId":"o"},{"name":"b","offerID2":"o"}]}`,
		target: poolReq, path: "flavors[1].offerID2", message: `unknown field "flavors[1].offerID2"`},
	{name: "unknown nested key also known at top", body: `{"id":"x","query":{"id":"y"}}`, target: offersReq,
		path: "query.id", message: `unknown field "query.id"`},
	{name: "field name in other case accepted", body: `{"ID":"x","Query":{"MINVCPU":1}}`, target: offersReq, ok: true},
	{name: "wrong type top-level", body: `{"id":5}`, target: offersReq,
		path: "id", message: `field "id" must be a string, not a JSON number`},
	{name: "wrong type nested", body: `{"id":"x","query":{"minVcpu":"two"}}`, target: offersReq,
		path: "query.minVcpu", message: `field "query.minVcpu" must be an integer, not a JSON string`},
	{name: "fraction into an int", body: `{"query":{"minVcpu":1.5}}`, target: offersReq,
		path: "query.minVcpu", message: `field "query.minVcpu" must be an integer, not a JSON number 1.5`},
	{name: "array where an object belongs", body: `{"query":[1,2]}`, target: offersReq,
		path: "query", message: `field "query" must be an object, not a JSON array`},
	{name: "object where a string belongs", body: `{"id":{"a":1}}`, target: offersReq,
		path: "id", message: `field "id" must be a string, not a JSON object`},
	{name: "wrong type in array element", body: `{"flavors":[{"name":"a"},{"name":"b","offerId":7}]}`, target: poolReq,
		path: "flavors[1].offerId", message: `field "flavors[1].offerId" must be a string, not a JSON number`},
	{name: "wrong type in embedded struct", body: `{"limit":"ten"}`, target: instListReq,
		path: "limit", message: `field "limit" must be an integer, not a JSON string`},
	{name: "bool where a list belongs", body: `{"flavors":true}`, target: poolReq,
		path: "flavors", message: `field "flavors" must be an array, not a JSON bool`},
	{name: "malformed JSON", body: `{"id":}`, target: offersReq,
		path: "", message: "malformed JSON at byte 7: invalid character '}' looking for beginning of value"},
	{name: "truncated JSON", body: `{"id":"x"`, target: offersReq,
		path: "", message: "malformed JSON: unexpected end of input"},
	{name: "trailing object", body: `{"id":"x"}{}`, target: offersReq,
		path: "", message: "request body has data after the JSON object"},
	{name: "trailing garbage", body: `{"id":"x"} x`, target: offersReq,
		path: "", message: "request body has data after the JSON object"},
	{name: "not an object", body: `["id"]`, target: offersReq,
		path: "", message: "request body must be a JSON object"},
	{name: "a string", body: `"x"`, target: offersReq,
		path: "", message: "request body must be a JSON object"},
	{name: "null", body: `null`, target: offersReq,
		path: "", message: "request body must be a JSON object"},
	{name: "empty body", body: ``, target: offersReq,
		path: "", message: "request body must be a JSON object"},
	{name: "blank body", body: " \n ", target: offersReq,
		path: "", message: "request body must be a JSON object"},
	{name: "raw, any and embedded members", body: `{"raw":{"x":[1]},"any":{"y":{"z":1}},"id":"i","tenantId":"acme"}`, target: exoticReq, ok: true},
	{name: "unknown field in a map value", body: `{"byName":{"a":{"name":"n"},"b":{"bogus":1}}}`, target: exoticReq,
		path: "byName.b.bogus", message: `unknown field "byName.b.bogus"`},
	{name: "unknown field behind a pointer", body: `{"ptr":{"bogus":1}}`, target: exoticReq,
		path: "ptr.bogus", message: `unknown field "ptr.bogus"`},
	{name: "wrong type behind a pointer", body: `{"ptr":{"minVcpu":"x"}}`, target: exoticReq,
		path: "ptr.minVcpu", message: `field "ptr.minVcpu" must be an integer, not a JSON string`},
	{name: "wrong type in a map value", body: `{"byName":{"a":{"name":5}}}`, target: exoticReq,
		path: "byName.a.name", message: `field "byName.a.name" must be a string, not a JSON number`},
	{name: "ignored member is unknown", body: `{"Hidden":"x"}`, target: exoticReq,
		path: "Hidden", message: `unknown field "Hidden"`},
	{name: "escaped key", body: `{"id":"x","qu\u0065ry":{"b\u00e4d":1}}`, target: offersReq,
		path: "query.bäd", message: `unknown field "query.bäd"`},
	{name: "depth 32", body: nested(31), target: anyMap, ok: true},
	{name: "depth 33", body: nested(32), target: anyMap,
		path: "", message: "request body nests deeper than 32 levels"},
	{name: "brackets inside strings do not nest", body: `{"a":"` + strings.Repeat("[{", 40) + `\"` + `"}`, target: anyMap, ok: true},
}

func TestDecode(t *testing.T) {
	for _, tc := range decodeCases {
		t.Run(tc.name, func(t *testing.T) {
			checkDecodeError(t, bus.Decode([]byte(tc.body), tc.target()), tc)
		})
	}
}

func checkDecodeError(t *testing.T, err error, tc decodeCase) {
	t.Helper()
	if tc.ok {
		if err != nil {
			t.Fatalf("decode %s: %v", tc.body, err)
		}
		return
	}
	ce := api.AsComputeError(err)
	if ce == nil {
		t.Fatalf("decode %s succeeded, want INVALID_INPUT at %q", tc.body, tc.path)
	}
	path, hasPath := ce.Path(), ce.Details.Path != nil
	if ce.Code != api.CodeInvalidInput || !hasPath || path != tc.path || ce.Message != tc.message {
		t.Fatalf("decode %s = %s %q path %v; want INVALID_INPUT %q path %q", tc.body, ce.Code, ce.Message, path, tc.message, tc.path)
	}
}

func TestDecodeValues(t *testing.T) {
	var in api.PoolCreateRequest
	body := `{"tenantId":"acme","class":"provider","providerAccountId":"pacct_1","agent":"none","flavors":[{"name":"s","offerId":"cx22","image":"debian-12"}]}`
	if err := bus.Decode([]byte(body), &in); err != nil {
		t.Fatal(err)
	}
	want := api.PoolCreateRequest{TenantID: "acme", Class: "provider", ProviderAccountID: "pacct_1", Agent: "none",
		Flavors: []api.Flavor{{Name: "s", OfferID: "cx22", Image: "debian-12"}}}
	if !reflect.DeepEqual(in, want) {
		t.Fatalf("decoded %+v, want %+v", in, want)
	}
}

func TestDecodeLoose(t *testing.T) {
	type head struct {
		ID    string         `json:"id"`
		Query api.OfferQuery `json:"query"`
	}
	var h head
	if err := bus.DecodeLoose([]byte(`{"id":"pacct_1","other":{"deep":[1,2]},"query":{"region":"fsn1","extra":true}}`), &h); err != nil {
		t.Fatalf("DecodeLoose with unknown fields: %v", err)
	}
	if want := (head{ID: "pacct_1", Query: api.OfferQuery{Region: "fsn1"}}); h != want {
		t.Fatalf("decoded %+v, want %+v", h, want)
	}
	refusals := []decodeCase{
		{name: "wrong type", body: `{"query":{"minVcpu":"x"}}`,
			path: "query.minVcpu", message: `field "query.minVcpu" must be an integer, not a JSON string`},
		{name: "malformed", body: `{"id":`,
			path: "", message: "malformed JSON at byte 6: unexpected end of JSON input"},
		{name: "trailing data", body: `{"id":"x"} {}`,
			path: "", message: "malformed JSON at byte 12: invalid character '{' after top-level value"},
		{name: "not an object", body: `[]`, path: "", message: "request body must be a JSON object"},
		{name: "empty", body: ``, path: "", message: "request body must be a JSON object"},
		{name: "too deep", body: nested(40), path: "", message: "request body nests deeper than 32 levels"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			checkDecodeError(t, bus.DecodeLoose([]byte(tc.body), &head{}), tc)
		})
	}
}

func TestStatusOf(t *testing.T) {
	want := map[api.Code]int{
		api.CodeInvalidInput: 400, api.CodeInvalidConfig: 422, api.CodeNotFound: 404,
		api.CodeAlreadyExists: 409, api.CodeConflict: 409, api.CodeAccessDenied: 403,
		api.CodeUnsupported: 501, api.CodeInvalidState: 409, api.CodeCapacityUnavailable: 507,
		api.CodeRateLimited: 429, api.CodeProviderError: 502, api.CodeUnavailable: 503, api.CodeInternal: 500,
	}
	for _, c := range api.Codes() {
		if got := bus.StatusOf(c); got != want[c] {
			t.Errorf("StatusOf(%s) = %d, want %d", c, got, want[c])
		}
	}
	if got := bus.StatusOf("NO_SUCH_CODE"); got != 500 {
		t.Errorf("StatusOf(unknown) = %d, want 500", got)
	}
}

func TestErrorRoundTrip(t *testing.T) {
	for _, c := range api.Codes() {
		t.Run(string(c), func(t *testing.T) {
			in := api.Errorf(c, "something about %s", c).WithPath("a.b")
			in.Details.Version = 3
			code, text, body := bus.EncodeError(in)
			if code != strconv.Itoa(bus.StatusOf(c)) || text != in.Message {
				t.Fatalf("EncodeError headers = %q %q, want %d %q", code, text, bus.StatusOf(c), in.Message)
			}
			var env map[string]map[string]any
			if err := json.Unmarshal(body, &env); err != nil || env["error"]["code"] != string(c) {
				t.Fatalf("body %s: %v", body, err)
			}
			var out struct{ X int }
			err := bus.DecodeReply(code, text, body, &out)
			got := api.AsComputeError(err)
			want := &api.ComputeError{Code: c, Message: in.Message, Details: api.ErrorDetails{Path: new("a.b"), Version: 3}}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("DecodeReply = %+v, want %+v", got, want)
			}
		})
	}
}

// TestErrorDetailsAlwaysEncode replaces the old test of details JSON could
// not carry (a func value): typed details make that impossible, so this
// proves that every field, set alone to a non-zero value, encodes into the
// body and decodes back to the same details.
func TestErrorDetailsAlwaysEncode(t *testing.T) {
	typ := reflect.TypeFor[api.ErrorDetails]()
	for i := range typ.NumField() {
		field := typ.Field(i)
		t.Run(field.Name, func(t *testing.T) {
			in := api.Errorf(api.CodeProviderError, "boom")
			setNonZero(t, reflect.ValueOf(&in.Details).Elem().Field(i))
			code, text, body := bus.EncodeError(in)
			if code != "502" || text != "boom" || !bytes.Contains(body, []byte(`"details":{"`)) {
				t.Fatalf("EncodeError = %q %q %s, want 502 boom with details", code, text, body)
			}
			got := api.AsComputeError(bus.DecodeReply(code, text, body, nil))
			if !reflect.DeepEqual(got, in) {
				t.Fatalf("body %s decodes to %+v, want %+v", body, got, in)
			}
		})
	}
}

// setNonZero sets v (a field of api.ErrorDetails) to a non-zero value of
// its kind; a kind it does not know fails the test.
func setNonZero(t *testing.T, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		if v.Elem().Kind() == reflect.Struct {
			for i := range v.Elem().NumField() {
				setNonZero(t, v.Elem().Field(i))
			}
			return
		}
		setNonZero(t, v.Elem())
	case reflect.String:
		v.SetString("x\u2028\"<>&")
	case reflect.Int, reflect.Int64:
		v.SetInt(-7)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		v.Set(reflect.ValueOf([]string{"a", ""}))
	default:
		t.Fatalf("ErrorDetails field of kind %s: add it here", v.Kind())
	}
}

func TestDecodeReplyBareHeaders(t *testing.T) {
	want := map[string]api.Code{
		"400": api.CodeInvalidInput, "422": api.CodeInvalidConfig, "404": api.CodeNotFound,
		"409": api.CodeConflict, "403": api.CodeAccessDenied, "501": api.CodeUnsupported,
		"507": api.CodeCapacityUnavailable, "429": api.CodeRateLimited, "502": api.CodeProviderError,
		"503": api.CodeUnavailable, "500": api.CodeInternal, "418": api.CodeInternal, "x": api.CodeInternal,
	}
	for _, c := range api.Codes() { // every status a code is sent with is read back
		if _, ok := want[strconv.Itoa(bus.StatusOf(c))]; !ok {
			t.Fatalf("status %d of %s not covered", bus.StatusOf(c), c)
		}
	}
	for status, code := range want {
		t.Run(status, func(t *testing.T) {
			err := bus.DecodeReply(status, "described "+status, nil, nil)
			ce := api.AsComputeError(err)
			if ce == nil || ce.Code != code || ce.Message != "described "+status || !reflect.DeepEqual(ce.Details, api.ErrorDetails{}) {
				t.Fatalf("DecodeReply(%q) = %+v, want %s", status, ce, code)
			}
		})
	}
}

func TestDecodeReply(t *testing.T) {
	tests := []struct {
		name       string
		code, text string
		body       string
		wantCode   api.Code
		wantMsg    string
		wantOut    string
	}{
		{name: "success", body: `{"id":"x","name":"n"}`, wantOut: "x/n"},
		{name: "error body without header", body: `{"error":{"code":"NOT_FOUND","message":"gone"}}`,
			wantCode: api.CodeNotFound, wantMsg: "gone"},
		{name: "header with a non-envelope body", code: "404", text: "no such thing", body: `{"id":"x"}`,
			wantCode: api.CodeNotFound, wantMsg: "no such thing"},
		{name: "error envelope without a code", body: `{"error":{"message":"?"}}`,
			wantCode: api.CodeInternal, wantMsg: ""},
		{name: "malformed success body", body: `{"id":`, wantCode: api.CodeInternal,
			wantMsg: "malformed reply: unexpected end of JSON input"},
		// A peer's detail of the wrong type is left out; the code, the
		// message and the other details survive.
		{name: "a detail of the wrong type", code: "409", text: "Conflict",
			body:     `{"error":{"code":"INVALID_STATE","message":"in use","details":{"pools":"pool_x","path":"id"}}}`,
			wantCode: api.CodeInvalidState, wantMsg: "in use"},
		{name: "details that are no object", code: "502", text: "Bad Gateway",
			body:     `{"error":{"code":"PROVIDER_ERROR","message":"boom","details":"oops"}}`,
			wantCode: api.CodeProviderError, wantMsg: "boom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out struct{ ID, Name string }
			err := bus.DecodeReply(tc.code, tc.text, []byte(tc.body), &out)
			if tc.wantCode == "" {
				if err != nil || out.ID+"/"+out.Name != tc.wantOut {
					t.Fatalf("DecodeReply = %v, out %+v", err, out)
				}
				return
			}
			ce := api.AsComputeError(err)
			if ce == nil || ce.Code != tc.wantCode || ce.Message != tc.wantMsg {
				t.Fatalf("DecodeReply = %+v, want %s %q", ce, tc.wantCode, tc.wantMsg)
			}
			if tc.name == "a detail of the wrong type" && ce.Path() != "id" {
				t.Fatalf("details.path = %q, want the well-typed detail kept (id)", ce.Path())
			}
		})
	}

	// A permanent refusal stays permanent, and a rate limit keeps its
	// wait, beside a detail of the wrong type; a negative wait is none.
	for body, check := range map[string]func(*api.ComputeError) bool{
		`{"error":{"code":"PROVIDER_ERROR","message":"m","details":{"status":"422","permanent":true}}}`: (*api.ComputeError).Permanent,
		`{"error":{"code":"RATE_LIMITED","message":"m","details":{"code":5,"retryAfterMs":1500}}}`: func(ce *api.ComputeError) bool {
			return ce.RetryAfter() == 1500*time.Millisecond
		},
		`{"error":{"code":"RATE_LIMITED","message":"m","details":{"retryAfterMs":-5}}}`: func(ce *api.ComputeError) bool {
			return ce.RetryAfter() == 0
		},
	} {
		if ce := api.AsComputeError(bus.DecodeReply("", "", []byte(body), nil)); ce == nil || !check(ce) {
			t.Errorf("DecodeReply(%s) = %+v", body, ce)
		}
	}
	if err := bus.DecodeReply("", "", []byte(`{"id":"x"}`), nil); err != nil {
		t.Fatalf("DecodeReply with nil out: %v", err)
	}
}
