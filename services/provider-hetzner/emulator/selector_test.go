package emulator

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSelector(t *testing.T) {
	tests := []struct {
		in   string
		want selector
		err  bool
	}{
		{in: "", want: selector{}},
		{in: "   ", want: selector{}},
		{in: "env=prod", want: selector{{key: "env", op: opEquals, values: []string{"prod"}}}},
		{in: "env==prod", want: selector{{key: "env", op: opEquals, values: []string{"prod"}}}},
		{in: "env = prod", want: selector{{key: "env", op: opEquals, values: []string{"prod"}}}},
		{in: "env=", want: selector{{key: "env", op: opEquals, values: []string{""}}}},
		{in: "env!=prod", want: selector{{key: "env", op: opNotEquals, values: []string{"prod"}}}},
		{in: "env", want: selector{{key: "env", op: opExists}}},
		{in: "!env", want: selector{{key: "env", op: opNotExists}}},
		{in: " ! env ", want: selector{{key: "env", op: opNotExists}}},
		{in: "example.com/pool-1=a_b.c", want: selector{{key: "example.com/pool-1", op: opEquals, values: []string{"a_b.c"}}}},
		{in: "env in (prod, dev)", want: selector{{key: "env", op: opIn, values: []string{"prod", "dev"}}}},
		{in: "env in(prod)", want: selector{{key: "env", op: opIn, values: []string{"prod"}}}},
		{in: "env notin (a,b)", want: selector{{key: "env", op: opNotIn, values: []string{"a", "b"}}}},
		{in: "a=1,b!=2, c,!d,e in (x,y),f notin (z)", want: selector{
			{key: "a", op: opEquals, values: []string{"1"}},
			{key: "b", op: opNotEquals, values: []string{"2"}},
			{key: "c", op: opExists},
			{key: "d", op: opNotExists},
			{key: "e", op: opIn, values: []string{"x", "y"}},
			{key: "f", op: opNotIn, values: []string{"z"}},
		}},
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
			got, err := parseSelector(tt.in)
			if tt.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
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
			assert.Equal(t, tt.want, sel.matches(labels))
		})
	}
}

func FuzzLabelSelector(f *testing.F) {
	for _, seed := range []string{
		"", "a=b", "a==b", "a!=b", "a", "!a", "a in (b,c)", "a notin (b)",
		"x.io/k=v,!y,z in (1, 2)", "a in (", "a=b,", "!!a", "a notin()",
	} {
		f.Add(seed)
	}
	labels := map[string]string{"a": "b", "x.io/k": "v", "z": "1"}
	f.Fuzz(func(t *testing.T, in string) {
		sel, err := parseSelector(in)
		if err != nil {
			return
		}
		for _, r := range sel {
			if !validLabelKey(r.key) {
				t.Fatalf("parsed invalid key %q from %q", r.key, in)
			}
			if (r.op == opIn || r.op == opNotIn) && len(r.values) == 0 {
				t.Fatalf("empty set parsed from %q", in)
			}
		}
		first := sel.matches(labels)
		if again, _ := parseSelector(in); again.matches(labels) != first {
			t.Fatalf("match of %q not deterministic", in)
		}
	})
}
