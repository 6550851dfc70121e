package api

import (
	"fmt"
	"strings"
	"testing"
)

func TestValidateLabels(t *testing.T) {
	long := strings.Repeat("a", 63)
	tooMany := map[string]string{}
	for i := range MaxLabels + 1 {
		tooMany[fmt.Sprintf("k%d", i)] = "v"
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		path   string // "" = valid
	}{
		{"none", nil, ""},
		{"simple", map[string]string{"env": "prod", "team": ""}, ""},
		{"prefixed", map[string]string{"example.com/tier": "web-1.a_b"}, ""},
		{"63 characters", map[string]string{long: long}, ""},
		{"64 labels", func() map[string]string { m := map[string]string{}; fillLabels(m, MaxLabels); return m }(), ""},
		{"65 labels", tooMany, "labels"},
		{"empty key", map[string]string{"": "v"}, "labels[]"},
		{"64-character name", map[string]string{long + "a": "v"}, "labels[" + long + "a]"},
		{"64-character value", map[string]string{"k": long + "a"}, "labels[k]"},
		{"name starts with dash", map[string]string{"-k": "v"}, "labels[-k]"},
		{"value ends with dot", map[string]string{"k": "v."}, "labels[k]"},
		{"value with space", map[string]string{"k": "a b"}, "labels[k]"},
		{"upper-case prefix", map[string]string{"Example.com/k": "v"}, "labels[Example.com/k]"},
		{"empty prefix", map[string]string{"/k": "v"}, "labels[/k]"},
		{"two slashes", map[string]string{"a/b/c": "v"}, "labels[a/b/c]"},
		{"254-character prefix", map[string]string{strings.Repeat("a.", 127) + "/k": "v"}, "labels[" + strings.Repeat("a.", 127) + "/k]"},
		{"system prefix", map[string]string{"better-compute.io/managed": "true"}, "labels[better-compute.io/managed]"},
		{"system subdomain", map[string]string{"x.better-compute.io/k": "v"}, "labels[x.better-compute.io/k]"},
		{"look-alike prefix is free", map[string]string{"notbetter-compute.io/k": "v"}, ""},
		{"emulator key", map[string]string{EmulatorSSHPortKey: "22"}, "labels[" + EmulatorSSHPortKey + "]"},
		{"first bad key in order", map[string]string{"b": "-", "a": "-"}, "labels[a]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateLabels("labels", tc.labels)
			if tc.path == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			ce := AsComputeError(err)
			if err == nil || ce.Code != CodeInvalidInput || ce.Path() != tc.path {
				t.Fatalf("got %v (path %q), want INVALID_INPUT at %q", err, ce.Path(), tc.path)
			}
		})
	}
}

func fillLabels(m map[string]string, n int) {
	for i := range n {
		m[fmt.Sprintf("k%d", i)] = "v"
	}
}

func TestParseSelector(t *testing.T) {
	labels := map[string]string{"env": "prod", "tier": "web", "example.com/team": "a", "empty": ""}
	for _, tc := range []struct {
		selector string
		match    bool
		canon    string
	}{
		{"", true, ""},
		{"env=prod", true, "env=prod"},
		{"env==prod", true, "env=prod"},
		{" env = prod ", true, "env=prod"},
		{"env=dev", false, "env=dev"},
		{"env!=dev", true, "env!=dev"},
		{"env!=prod", false, "env!=prod"},
		{"missing!=x", true, "missing!=x"},
		{"env in (dev, prod)", true, "env in (dev,prod)"},
		{"env in (dev)", false, "env in (dev)"},
		{"env notin (dev,test)", true, "env notin (dev,test)"},
		{"env notin (prod)", false, "env notin (prod)"},
		{"missing notin (prod)", true, "missing notin (prod)"},
		{"env", true, "env"},
		{"missing", false, "missing"},
		{"!missing", true, "!missing"},
		{"! env", false, "!env"},
		{"empty=", true, "empty="},
		{"empty in (,x)", true, "empty in (,x)"},
		{"example.com/team=a,tier in (web),!missing,env", true, "example.com/team=a,tier in (web),!missing,env"},
		{"env=prod,tier=db", false, "env=prod,tier=db"},
		{"better-compute.io/managed", false, "better-compute.io/managed"},
	} {
		t.Run(tc.selector, func(t *testing.T) {
			s, err := ParseSelector("selector", tc.selector)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if got := s.Matches(labels); got != tc.match {
				t.Errorf("matches %v, want %v", got, tc.match)
			}
			if got := s.String(); got != tc.canon {
				t.Errorf("String() = %q, want %q", got, tc.canon)
			}
		})
	}
}

func TestParseSelectorRefuses(t *testing.T) {
	for _, text := range []string{
		"=", "=x", "env=", "env=a b", "env in", "env in ()", "env in (a", "env in a", "env notin (a b)",
		"env >1", "env=prod,", ",env", "env,,tier", "!", "!env=x", "Env.com/x=y", "env=-x", "env in (a,)x",
		strings.Repeat("a", MaxSelectorLength+1),
	} {
		if text == "env=" {
			continue // an empty value is valid
		}
		t.Run(text, func(t *testing.T) {
			_, err := ParseSelector("selector", text)
			ce := AsComputeError(err)
			if err == nil || ce.Code != CodeInvalidInput || ce.Path() != "selector" {
				t.Fatalf("got %v, want INVALID_INPUT at selector", err)
			}
		})
	}
}

// FuzzParseSelector: ParseSelector never panics, refuses only with
// INVALID_INPUT naming the path, and what it parses reads back (String,
// parsed again) to the same selector.
func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{"env=prod", "a==b,c!=d", "e in (f, g),h notin (i)", "j,!k", "x/y=z", "in in (in)", "a=,b in (,)", "!", "(", "a in (b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseSelector("selector", text)
		if err != nil {
			if ce := AsComputeError(err); ce.Code != CodeInvalidInput || ce.Path() != "selector" {
				t.Fatalf("refused with %v, want INVALID_INPUT at selector", err)
			}
			return
		}
		again, err := ParseSelector("selector", s.String())
		if err != nil || again.String() != s.String() {
			t.Fatalf("%q parsed to %q, which reads back as %q (%v)", text, s.String(), again.String(), err)
		}
	})
}

// FuzzValidateLabels: ValidateLabels never panics, refuses only with
// INVALID_INPUT naming the key, and what it accepts a selector can
// select: "key=value" parses and matches.
func FuzzValidateLabels(f *testing.F) {
	for _, kv := range [][2]string{{"env", "prod"}, {"example.com/a", ""}, {"better-compute.io/x", "y"}, {"-", "."}, {"a/b/c", "d"}} {
		f.Add(kv[0], kv[1])
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		labels := map[string]string{key: value}
		err := ValidateLabels("labels", labels)
		if err != nil {
			if ce := AsComputeError(err); ce.Code != CodeInvalidInput || ce.Path() != "labels["+key+"]" {
				t.Fatalf("refused with %v, want INVALID_INPUT at labels[%s]", err, key)
			}
			return
		}
		s, err := ParseSelector("selector", key+"="+value)
		if err != nil || !s.Matches(labels) {
			t.Fatalf("valid label %q=%q: selector refused (%v) or does not match", key, value, err)
		}
	})
}
