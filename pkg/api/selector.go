package api

import (
	"fmt"
	"slices"
	"strings"
)

// MaxSelectorLength bounds a label selector's text.
const MaxSelectorLength = 4096

// SelectorOperator is the operator of one selector requirement.
type SelectorOperator string

// Selector operators (Kubernetes label selector syntax).
const (
	SelectorEquals       SelectorOperator = "="     // key=value or key==value: the label is value
	SelectorNotEquals    SelectorOperator = "!="    // key!=value: the label is absent or not value
	SelectorIn           SelectorOperator = "in"    // key in (a,b): the label is one of the values
	SelectorNotIn        SelectorOperator = "notin" // key notin (a,b): absent or none of the values
	SelectorExists       SelectorOperator = "exists"
	SelectorDoesNotExist SelectorOperator = "!" // !key: the label is absent
)

// Requirement is one comma-separated part of a selector: Key, Operator
// and, for =, !=, in and notin, Values (one for = and !=).
type Requirement struct {
	Key      string
	Operator SelectorOperator
	Values   []string
}

// Selector is a parsed label selector: every requirement must hold (the
// comma is AND). The empty selector matches everything.
type Selector []Requirement

// ParseSelector parses a Kubernetes label selector: comma-separated
// requirements, each one of "key=value", "key==value", "key!=value",
// "key in (v1,v2)", "key notin (v1,v2)", "key" (exists) and "!key" (does
// not exist); blanks around tokens are ignored. Keys and values follow
// the label rules (CheckLabelKey, CheckLabelValue; the reserved prefix
// may be selected on, it is simply never set). Why not
// k8s.io/apimachinery/pkg/labels: it is the reference, but it pulls
// apimachinery's util, klog and friends (tens of packages) into every
// binary for a ~150-line grammar. Errors: INVALID_INPUT with details.path
// path, the message naming the offending position.
func ParseSelector(path, text string) (Selector, error) {
	if len(text) > MaxSelectorLength {
		return nil, InvalidInput(path, "%s is longer than %d characters", path, MaxSelectorLength)
	}
	p := selectorParser{s: text}
	var out Selector
	if strings.TrimSpace(text) == "" {
		return out, nil
	}
	for {
		req, err := p.requirement()
		if err != nil {
			return nil, InvalidInput(path, "%s %q: %v", path, text, err)
		}
		out = append(out, req)
		p.blanks()
		if p.done() {
			return out, nil
		}
		if !p.take(",") {
			return nil, InvalidInput(path, "%s %q: expected ',' at offset %d", path, text, p.i)
		}
	}
}

// Matches reports whether labels satisfy every requirement of s.
func (s Selector) Matches(labels map[string]string) bool {
	for _, r := range s {
		if !r.Matches(labels) {
			return false
		}
	}
	return true
}

// Matches reports whether labels satisfy r.
func (r Requirement) Matches(labels map[string]string) bool {
	v, ok := labels[r.Key]
	switch r.Operator {
	case SelectorEquals, SelectorIn:
		return ok && slices.Contains(r.Values, v)
	case SelectorNotEquals, SelectorNotIn:
		return !ok || !slices.Contains(r.Values, v)
	case SelectorExists:
		return ok
	case SelectorDoesNotExist:
		return !ok
	}
	return false
}

// String is r in selector syntax (what ParseSelector reads back).
func (r Requirement) String() string {
	switch r.Operator {
	case SelectorEquals, SelectorNotEquals:
		return r.Key + string(r.Operator) + strings.Join(r.Values, "")
	case SelectorIn, SelectorNotIn:
		return r.Key + " " + string(r.Operator) + " (" + strings.Join(r.Values, ",") + ")"
	case SelectorExists:
		return r.Key
	}
	return "!" + r.Key
}

// String is s in selector syntax.
func (s Selector) String() string {
	parts := make([]string, len(s))
	for i, r := range s {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// selectorParser reads a selector's text left to right.
type selectorParser struct {
	s string
	i int
}

func (p *selectorParser) done() bool { return p.i >= len(p.s) }

func (p *selectorParser) blanks() {
	for !p.done() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// take consumes tok when the text continues with it.
func (p *selectorParser) take(tok string) bool {
	if strings.HasPrefix(p.s[p.i:], tok) {
		p.i += len(tok)
		return true
	}
	return false
}

// word reads the longest run of key/value characters ([A-Za-z0-9._/-]).
func (p *selectorParser) word() string {
	start := p.i
	for !p.done() && isSelectorWordByte(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

func isSelectorWordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '.' || b == '_' || b == '-' || b == '/'
}

// requirement reads one requirement.
func (p *selectorParser) requirement() (Requirement, error) {
	p.blanks()
	if p.take("!") {
		p.blanks()
		key, err := p.key()
		return Requirement{Key: key, Operator: SelectorDoesNotExist}, err
	}
	key, err := p.key()
	if err != nil {
		return Requirement{}, err
	}
	p.blanks()
	switch {
	case p.done() || p.s[p.i] == ',':
		return Requirement{Key: key, Operator: SelectorExists}, nil
	case p.take("=="), p.take("="):
		v, err := p.value()
		return Requirement{Key: key, Operator: SelectorEquals, Values: []string{v}}, err
	case p.take("!="):
		v, err := p.value()
		return Requirement{Key: key, Operator: SelectorNotEquals, Values: []string{v}}, err
	}
	at := p.i
	switch op := SelectorOperator(p.word()); op {
	case SelectorIn, SelectorNotIn:
		values, err := p.set()
		return Requirement{Key: key, Operator: op, Values: values}, err
	}
	return Requirement{}, fmt.Errorf("expected an operator (=, ==, !=, in, notin) or ',' after key %q at offset %d", key, at)
}

// key reads a label key.
func (p *selectorParser) key() (string, error) {
	at := p.i
	key := p.word()
	if err := CheckLabelKeySyntax(key); err != nil {
		return "", fmt.Errorf("at offset %d: label key %q: %w", at, key, err)
	}
	return key, nil
}

// value reads a label value (possibly empty).
func (p *selectorParser) value() (string, error) {
	p.blanks()
	at := p.i
	v := p.word()
	if err := CheckLabelValue(v); err != nil {
		return "", fmt.Errorf("at offset %d: %w", at, err)
	}
	return v, nil
}

// set reads "(v1, v2, …)": at least one value ("( )" is refused, "(,a)"
// holds the empty value and a, as in Kubernetes).
func (p *selectorParser) set() ([]string, error) {
	p.blanks()
	if !p.take("(") {
		return nil, fmt.Errorf("expected '(' at offset %d", p.i)
	}
	if p.blanks(); p.take(")") {
		return nil, fmt.Errorf("the set before offset %d is empty: in and notin need at least one value", p.i)
	}
	var values []string
	for {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		values = append(values, v)
		p.blanks()
		if p.take(")") {
			return values, nil
		}
		if !p.take(",") {
			return nil, fmt.Errorf("expected ',' or ')' at offset %d", p.i)
		}
	}
}
