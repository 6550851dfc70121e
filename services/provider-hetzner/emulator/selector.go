package emulator

import (
	"fmt"
	"slices"
	"strings"
)

// selectorOp is the operator of one label selector requirement.
type selectorOp int

const (
	opEquals    selectorOp = iota // k=v, k==v
	opNotEquals                   // k!=v
	opExists                      // k
	opNotExists                   // !k
	opIn                          // k in (a,b)
	opNotIn                       // k notin (a,b)
)

// requirement is one comma-separated term of a label selector.
type requirement struct {
	key    string
	op     selectorOp
	values []string
}

// selector is a parsed label selector: all requirements must hold.
type selector []requirement

// matches reports whether labels satisfy every requirement.
//
// Guess: like Kubernetes (whose grammar the API borrows), k!=v and
// k notin (…) also match objects that do not have the label k at all.
func (s selector) matches(labels map[string]string) bool {
	for _, r := range s {
		v, has := labels[r.key]
		var holds bool
		switch r.op {
		case opEquals:
			holds = has && v == r.values[0]
		case opNotEquals:
			holds = !has || v != r.values[0]
		case opExists:
			holds = has
		case opNotExists:
			holds = !has
		case opIn:
			holds = has && slices.Contains(r.values, v)
		case opNotIn:
			holds = !has || !slices.Contains(r.values, v)
		}
		if !holds {
			return false
		}
	}
	return true
}

// parseSelector parses the label_selector grammar: comma-separated
// requirements `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)` and
// `k notin (a,b)`, with optional blanks around tokens. The empty string
// selects everything.
func parseSelector(s string) (selector, error) {
	p := &selectorParser{s: s}
	p.skipSpace()
	if p.done() {
		return selector{}, nil
	}
	var sel selector
	for {
		r, err := p.requirement()
		if err != nil {
			return nil, err
		}
		sel = append(sel, r)
		p.skipSpace()
		if p.done() {
			return sel, nil
		}
		if p.s[p.i] != ',' {
			return nil, p.errorf("expected ',' or end of selector")
		}
		p.i++
	}
}

// selectorParser is a cursor over a label selector.
type selectorParser struct {
	s string
	i int
}

// done reports whether the whole input is consumed.
func (p *selectorParser) done() bool { return p.i >= len(p.s) }

// skipSpace consumes blanks.
func (p *selectorParser) skipSpace() {
	for !p.done() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// consume advances past prefix if the input continues with it.
func (p *selectorParser) consume(prefix string) bool {
	if strings.HasPrefix(p.s[p.i:], prefix) {
		p.i += len(prefix)
		return true
	}
	return false
}

// word consumes a run of label characters ('/' only if slash is set).
func (p *selectorParser) word(slash bool) string {
	start := p.i
	for !p.done() && (isLabelChar(p.s[p.i]) || (slash && p.s[p.i] == '/')) {
		p.i++
	}
	return p.s[start:p.i]
}

// errorf reports a syntax error at the cursor.
func (p *selectorParser) errorf(format string, args ...any) error {
	return fmt.Errorf("invalid label selector at offset %d: %s", p.i, fmt.Sprintf(format, args...))
}

// requirement parses one term.
func (p *selectorParser) requirement() (requirement, error) {
	p.skipSpace()
	if p.consume("!") {
		p.skipSpace()
		key, err := p.key()
		return requirement{key: key, op: opNotExists}, err
	}
	key, err := p.key()
	if err != nil {
		return requirement{}, err
	}
	afterKey := p.i
	p.skipSpace()
	switch {
	case p.done() || p.s[p.i] == ',':
		return requirement{key: key, op: opExists}, nil
	case p.consume("=="), p.consume("="):
		v, err := p.value()
		return requirement{key: key, op: opEquals, values: []string{v}}, err
	case p.consume("!="):
		v, err := p.value()
		return requirement{key: key, op: opNotEquals, values: []string{v}}, err
	}
	if p.i == afterKey {
		return requirement{}, p.errorf("expected an operator after key %q", key)
	}
	op := opIn
	switch word := p.word(false); word {
	case "in":
	case "notin":
		op = opNotIn
	default:
		return requirement{}, p.errorf("unknown operator %q", word)
	}
	values, err := p.set()
	return requirement{key: key, op: op, values: values}, err
}

// key parses and validates a label key.
func (p *selectorParser) key() (string, error) {
	k := p.word(true)
	if !validLabelKey(k) {
		return "", p.errorf("invalid label key %q", k)
	}
	return k, nil
}

// value parses and validates a label value (may be empty).
func (p *selectorParser) value() (string, error) {
	p.skipSpace()
	v := p.word(false)
	if !validLabelValue(v) {
		return "", p.errorf("invalid label value %q", v)
	}
	return v, nil
}

// set parses `(v1, v2, …)` with at least one value (which may be empty,
// as in `(a,)`, but `()` is an error).
func (p *selectorParser) set() ([]string, error) {
	p.skipSpace()
	if !p.consume("(") {
		return nil, p.errorf("expected '('")
	}
	p.skipSpace()
	if p.consume(")") {
		return nil, p.errorf("empty value set")
	}
	var values []string
	for {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		values = append(values, v)
		p.skipSpace()
		if p.consume(")") {
			return values, nil
		}
		if !p.consume(",") {
			return nil, p.errorf("expected ',' or ')'")
		}
	}
}

// isLabelChar reports whether c may appear in a label key name or value.
func isLabelChar(c byte) bool {
	return isAlnum(c) || c == '-' || c == '_' || c == '.'
}

// isAlnum reports whether c is an ASCII letter or digit.
func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// validLabelValue applies the API's value rules: at most 63 characters of
// [A-Za-z0-9._-], starting and ending alphanumerically; empty is allowed.
func validLabelValue(v string) bool {
	if v == "" {
		return true
	}
	if len(v) > 63 || !isAlnum(v[0]) || !isAlnum(v[len(v)-1]) {
		return false
	}
	for i := range len(v) {
		if !isLabelChar(v[i]) {
			return false
		}
	}
	return true
}

// validLabelKey applies the API's key rules: an optional DNS-subdomain
// prefix (at most 253 characters) and '/', then a non-empty name with the
// value rules.
func validLabelKey(k string) bool {
	name := k
	if prefix, rest, found := strings.Cut(k, "/"); found {
		if !validDNSSubdomain(prefix) {
			return false
		}
		name = rest
	}
	return name != "" && validLabelValue(name)
}

// validDNSSubdomain reports whether s is a lower-case DNS subdomain of at
// most 253 characters.
func validDNSSubdomain(s string) bool {
	if s == "" || len(s) > 253 || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
