package emulator

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The label_selector grammar the API takes (api.ParseSelector's): what is
// accepted and what is refused.
func TestParseSelector(t *testing.T) {
	tests := []struct {
		in  string
		err bool
	}{
		{in: ""},
		{in: "   "},
		{in: "env=prod"},
		{in: "env==prod"},
		{in: "env = prod"},
		{in: "env="},
		{in: "env!=prod"},
		{in: "env"},
		{in: "!env"},
		{in: " ! env "},
		{in: "example.com/pool-1=a_b.c"},
		{in: "env in (prod, dev)"},
		{in: "env in(prod)"},
		{in: "env notin (a,b)"},
		{in: "a=1,b!=2, c,!d,e in (x,y),f notin (z)"},
		{in: ",", err: true},
		{in: "a=1,", err: true},
		{in: "=1", err: true},
		{in: "!", err: true},
		{in: "!a=1", err: true},
		{in: "a=b=c", err: true},
		{in: "a b", err: true},
		{in: "a in ()", err: true},
		{in: "a in (x", err: true},
		{in: "a in x", err: true},
		{in: "a=-x", err: true},
		{in: "a=x y", err: true},
		{in: "Upper.Case/k=v", err: true},
		{in: "/k=v", err: true},
		{in: "p/=v", err: true},
		{in: "a>1", err: true},
		{in: "a=" + string(make([]byte, 64)), err: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := parseSelector(tt.in)
			if tt.err {
				require.Error(t, err)
				assert.NotContains(t, err.Error(), "INVALID_INPUT", "the message alone")
				return
			}
			require.NoError(t, err)
		})
	}
}

func TestSelectorMatches(t *testing.T) {
	labels := map[string]string{"env": "prod", "role": "web", "empty": ""}
	tests := []struct {
		sel  string
		want bool
	}{
		{"", true},
		{"env=prod", true},
		{"env==prod", true},
		{"env=dev", false},
		{"env!=dev", true},
		{"env!=prod", false},
		{"missing!=x", true},
		{"env", true},
		{"missing", false},
		{"!missing", true},
		{"!env", false},
		{"env in (dev,prod)", true},
		{"env in (dev)", false},
		{"missing in (x)", false},
		{"env notin (dev)", true},
		{"env notin (prod)", false},
		{"missing notin (x)", true},
		{"empty=", true},
		{"env=prod,role=web", true},
		{"env=prod,role=db", false},
	}
	for _, tt := range tests {
		t.Run(tt.sel, func(t *testing.T) {
			sel, err := parseSelector(tt.sel)
			require.NoError(t, err)
			assert.Equal(t, tt.want, sel.Matches(labels))
		})
	}
}

// A malformed label_selector is answered 400 invalid_input naming the
// field label_selector, on every list that takes one.
func TestListBadSelector(t *testing.T) {
	_, srv := newTestServer(t, Options{})
	for _, path := range []string{"servers", "networks", "firewalls", "placement_groups"} {
		t.Run(path, func(t *testing.T) {
			resp := rawGet(t, srv.URL+"/v1/"+path+"?label_selector="+url.QueryEscape("a in ("))
			defer func() { _ = resp.Body.Close() }() // also closed by rawGet's cleanup; bodyclose wants it here
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
			var body struct {
				Error struct {
					Code    string `json:"code"`
					Details struct {
						Fields []struct {
							Name     string   `json:"name"`
							Messages []string `json:"messages"`
						} `json:"fields"`
					} `json:"details"`
				} `json:"error"`
			}
			require.NoError(t, decodeBody(resp, &body))
			assert.Equal(t, "invalid_input", body.Error.Code)
			require.Len(t, body.Error.Details.Fields, 1)
			assert.Equal(t, "label_selector", body.Error.Details.Fields[0].Name)
			require.Len(t, body.Error.Details.Fields[0].Messages, 1)
			assert.True(t, strings.HasPrefix(body.Error.Details.Fields[0].Messages[0], "label_selector "), body.Error.Details.Fields[0].Messages[0])
		})
	}
}
