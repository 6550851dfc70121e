package api

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

var updateDocs = flag.Bool("update", false, "rewrite the error table of docs/user-guide.md from the Catalogue")

// declaredCodes parses errors.go for the constants of type Code.
func declaredCodes(t *testing.T) []Code {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []Code
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			for _, v := range vs.Values {
				s, err := strconv.Unquote(v.(*ast.BasicLit).Value)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, Code(s))
			}
		}
	}
	return out
}

// TestCatalogueCoversEveryCode: every Code constant has exactly one row,
// and every row a declared code, a wire status, a retry and a meaning.
func TestCatalogueCoversEveryCode(t *testing.T) {
	declared := declaredCodes(t)
	if len(declared) != 13 {
		t.Fatalf("errors.go declares %d codes: %v", len(declared), declared)
	}
	rows := map[Code]int{}
	for _, row := range Catalogue() {
		rows[row.Code]++
		if row.Status < 400 || row.Status > 599 || row.Description == "" {
			t.Errorf("row %+v: status must be 4xx or 5xx, the description set", row)
		}
		switch row.Retry {
		case RetryNever, RetryBackoff, RetryAfterReset:
		default:
			t.Errorf("row %s: retry %q is none of the Retry constants", row.Code, row.Retry)
		}
	}
	for _, c := range declared {
		if rows[c] != 1 {
			t.Errorf("%s has %d catalogue rows, want 1", c, rows[c])
		}
		delete(rows, c)
	}
	for c := range rows {
		t.Errorf("catalogue row %s is no declared Code", c)
	}
	if got := Code("NO_SUCH_CODE").Info(); got.Code != "NO_SUCH_CODE" || got.Status != 500 || got.Retry != RetryBackoff || got.Refusal {
		t.Errorf("Info of an unknown code = %+v", got)
	}
}

func TestPermanent(t *testing.T) {
	cases := []struct {
		err  *ComputeError
		want bool
	}{
		{Errorf(CodeInvalidInput, "no template"), true},
		{Errorf(CodeUnsupported, "no nmi"), true},
		{permanent(ProviderError(422, "invalid_input", "image not found")), true},
		{&ComputeError{Code: CodeProviderError, Details: ErrorDetails{Permanent: true}}, true},
		// Permanence is the provider's word alone: no status or API code is read.
		{ProviderError(422, "invalid_input", "image not found"), false},
		{ProviderError(409, "uniqueness_error", "name taken"), false},
		{&ComputeError{Code: CodeProviderError, Details: ErrorDetails{Status: new(400), Code: new("json_error"), Permanent: false}}, false},
		{RateLimited(time.Second, "later"), false},
		{Errorf(CodeUnavailable, "no reply"), false},
	}
	for _, c := range cases {
		if got := c.err.Permanent(); got != c.want {
			t.Errorf("Permanent(%v %v) = %v, want %v", c.err, c.err.Details, got, c.want)
		}
	}
}

func TestRefused(t *testing.T) {
	cases := []struct {
		err  *ComputeError
		want bool
	}{
		{Errorf(CodeInvalidInput, "no template"), true},
		{Errorf(CodeInvalidConfig, "unknown offer"), true},
		{Errorf(CodeAccessDenied, "not managed"), true},
		{Errorf(CodeCapacityUnavailable, "every slot of the key holds another VM"), true},
		{permanent(ProviderError(422, "invalid_input", "bad image")), true},
		{ProviderError(409, "uniqueness_error", "name taken"), true},
		{&ComputeError{Code: CodeProviderError, Details: ErrorDetails{Status: new(404)}}, true},
		{ProviderError(423, "locked", "busy"), true},
		{ProviderError(429, "rate_limit_exceeded", "slow down"), false},
		{ProviderError(408, "timeout", "timeout"), false},
		{ProviderError(503, "unavailable", "down"), false},
		{ProviderError(0, "unreachable", "dropped"), false},
		{Errorf(CodeUnavailable, "no reply"), false},
		{Errorf(CodeNotFound, "gone"), false},
		{RateLimited(time.Second, "later"), false},
	}
	for _, c := range cases {
		if got := c.err.Refused(); got != c.want {
			t.Errorf("Refused(%v %v) = %v, want %v", c.err, c.err.Details, got, c.want)
		}
	}
}

const (
	userGuide   = "../../docs/user-guide.md"
	tableBegin  = "<!-- error table: generated from api.Catalogue by go test ./pkg/api -run TestUserGuideErrorTable -update -->\n"
	tableFinish = "<!-- end of error table -->\n"
)

// errorTable is the user guide's error table: one row per Catalogue row.
func errorTable() string {
	var b strings.Builder
	b.WriteString("| code | status | the reconciler retries | meaning |\n|---|---|---|---|\n")
	for _, row := range Catalogue() {
		b.WriteString("| `" + string(row.Code) + "` | " + strconv.Itoa(row.Status) + " | " + string(row.Retry) + " | " + row.Description + " |\n")
	}
	return b.String()
}

// TestUserGuideErrorTable: the error table of docs/user-guide.md is the
// Catalogue's (-update rewrites it).
func TestUserGuideErrorTable(t *testing.T) {
	data, err := os.ReadFile(userGuide)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	before, rest, ok := strings.Cut(doc, tableBegin)
	table, after, ok2 := strings.Cut(rest, tableFinish)
	if !ok || !ok2 {
		t.Fatalf("%s has no %q … %q block", userGuide, tableBegin, tableFinish)
	}
	want := errorTable()
	if table == want {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(userGuide, []byte(before+tableBegin+want+tableFinish+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the error table of %s is not the Catalogue's; run go test ./pkg/api -run TestUserGuideErrorTable -update\ngot:\n%swant:\n%s", userGuide, table, want)
}

// permanent is e marked details.permanent.
func permanent(e *ComputeError) *ComputeError {
	e.Details.Permanent = true
	return e
}
