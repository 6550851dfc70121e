package httpfault

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// ExchangesFile is the file of a recording directory holding its
// exchanges, one JSON object (Exchange) per line, in the order the
// responses came, gzip-compressed (an API's catalogue answers are large
// and repeat).
const ExchangesFile = "exchanges.jsonl.gz"

// Redacted replaces every secret value in a recording.
const Redacted = "[REDACTED]"

// Exchange is one recorded request and its response. No request header
// is kept (Authorization never is); bodies are canonical JSON (sorted
// keys) with Dialect.SecretFields and the recorder's secret values
// replaced by Redacted.
type Exchange struct {
	// Hook marks a request of the certifier's own hooks.
	Hook   bool   `json:"hook,omitempty"`
	Method string `json:"method"`
	// Path is the request's path and query.
	Path string `json:"path"`
	Body string `json:"body,omitempty"`
	// Status, Header and Response are the response's status, headers
	// (but Set-Cookie) and body.
	Status   int               `json:"status"`
	Header   map[string]string `json:"header,omitempty"`
	Response string            `json:"response,omitempty"`
}

// key is what a replayed request must match: hook, method, path (its
// time-window parameters aside, see matchPath) and canonical body.
func (e Exchange) key() string {
	return fmt.Sprintf("%t %s %s %s", e.Hook, e.Method, matchPath(e.Path), e.Body)
}

// windowParams are query parameters naming a time window (Hetzner's
// GET /servers/{id}/metrics start and end): a replay runs later than its
// recording, so their RFC3339 values match any time.
var windowParams = []string{"start", "end"}

// matchPath is path with the RFC3339 values of windowParams replaced by
// "*" (the parameters' order and everything else kept).
func matchPath(path string) string {
	p, query, ok := strings.Cut(path, "?")
	if !ok {
		return path
	}
	parts := strings.Split(query, "&")
	for i, part := range parts {
		name, value, _ := strings.Cut(part, "=")
		if !slices.Contains(windowParams, name) {
			continue
		}
		if v, err := url.QueryUnescape(value); err == nil {
			if _, err := time.Parse(time.RFC3339, v); err == nil {
				parts[i] = name + "=*"
			}
		}
	}
	return p + "?" + strings.Join(parts, "&")
}

// recordedRequest is r (with its body) as an Exchange would hold it.
func recordedRequest(r *http.Request, body []byte, hook bool, fields []string) Exchange {
	return Exchange{Hook: hook, Method: r.Method, Path: r.URL.RequestURI(), Body: redact(body, fields, nil)}
}

// Recorder appends exchanges to <dir>/ExchangesFile as they happen
// (flushed after each), so a run cut short (Ctrl-C) keeps what it
// recorded. Safe for concurrent use.
type Recorder struct {
	secrets []string

	mu  sync.Mutex
	f   *os.File
	w   *gzip.Writer
	err error
}

// NewRecorder creates dir (0755) and its exchanges file (0600, replaced
// if present); secrets are values no recorded text may hold (the
// resolved API token…), beyond the dialect's secret fields. Errors: the
// file system's.
func NewRecorder(dir string, secrets []string) (*Recorder, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, ExchangesFile), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	return &Recorder{secrets: secrets, f: f, w: gzip.NewWriter(f)}, nil
}

// add records one exchange.
func (r *Recorder) add(req Exchange, resp *response, fields []string) {
	e := req
	e.Body = scrub(e.Body, r.secrets)
	e.Status, e.Response = resp.status, redact(resp.body, fields, r.secrets)
	for k := range resp.header {
		if strings.EqualFold(k, "Set-Cookie") {
			continue
		}
		if e.Header == nil {
			e.Header = map[string]string{}
		}
		e.Header[k] = scrub(resp.header.Get(k), r.secrets)
	}
	r.write(e)
}

// write appends one exchange and flushes.
func (r *Recorder) write(e Exchange) {
	line, err := json.Marshal(e)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		_, err = r.w.Write(append(line, '\n'))
	}
	if err == nil {
		err = r.w.Flush()
	}
	if r.err == nil {
		r.err = err
	}
}

// Close flushes and closes the file. Errors: the first write error, or
// closing's.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.err, r.w.Close(), r.f.Close())
}

// Replay answers requests from a recording: each request takes the next
// unused exchange with the same hook flag, method, path and body; a GET
// whose exchanges are used up gets the last one again (a poll that
// outlasts the recording's). Safe for concurrent use.
type Replay struct {
	mu    sync.Mutex
	byKey map[string][]Exchange
	next  map[string]int
}

// LoadReplay reads <dir>/ExchangesFile. Errors: see ReadExchanges.
func LoadReplay(dir string) (*Replay, error) {
	exchanges, err := ReadExchanges(dir)
	if err != nil {
		return nil, err
	}
	r := &Replay{byKey: map[string][]Exchange{}, next: map[string]int{}}
	for _, e := range exchanges {
		r.byKey[e.key()] = append(r.byKey[e.key()], e)
	}
	return r, nil
}

// ReadExchanges reads the exchanges of the recording in dir, in order.
// Errors: the file system's, a file that is not gzip, or a line that is
// not an Exchange (naming the line).
func ReadExchanges(dir string) ([]Exchange, error) {
	f, err := os.Open(filepath.Join(dir, ExchangesFile))
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ExchangesFile, err)
	}
	var out []Exchange
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 64<<20)
	for i := 1; sc.Scan(); i++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var e Exchange
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", ExchangesFile, i, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", ExchangesFile, err)
	}
	return out, nil
}

// WriteExchanges writes exchanges as the recording in dir (created 0755),
// replacing its exchanges file: a recording edited by a person or a test.
// Errors: the file system's.
func WriteExchanges(dir string, exchanges []Exchange) error {
	r, err := NewRecorder(dir, nil)
	if err != nil {
		return err
	}
	for _, e := range exchanges {
		r.write(e)
	}
	return r.Close()
}

// answer is the recorded response to req. Errors: req is not in the
// recording (naming it).
func (r *Replay) answer(req Exchange) (*response, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := req.key()
	ex, i := r.byKey[k], r.next[k]
	switch {
	case i < len(ex):
		r.next[k]++
	case len(ex) > 0 && req.Method == http.MethodGet:
		i = len(ex) - 1
	default:
		body := req.Body
		if len(body) > 200 {
			body = body[:200] + "…"
		}
		return nil, fmt.Errorf("replay diverged: request %s %s %s is not in the recording", req.Method, req.Path, body)
	}
	e := ex[i]
	h := http.Header{}
	for k, v := range e.Header {
		h.Set(k, v)
	}
	return &response{status: e.Status, header: h, body: []byte(e.Response)}, nil
}

// redact is body with the values of fields (anywhere in a JSON body,
// field names compared case-insensitively) replaced by Redacted, as
// canonical JSON, and with every one of secrets replaced; a body that is
// not JSON is only scrubbed of secrets.
func redact(body []byte, fields, secrets []string) string {
	if len(bytes.TrimSpace(body)) == 0 {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return scrub(string(body), secrets)
	}
	out, err := json.Marshal(redactValue(v, fields))
	if err != nil {
		return scrub(string(body), secrets)
	}
	return scrub(string(out), secrets)
}

// redactValue replaces the non-null values of fields in v.
func redactValue(v any, fields []string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, item := range x {
			if item != nil && isSecretField(k, fields) {
				x[k] = Redacted
				continue
			}
			x[k] = redactValue(item, fields)
		}
	case []any:
		for i, item := range x {
			x[i] = redactValue(item, fields)
		}
	}
	return v
}

func isSecretField(name string, fields []string) bool {
	for _, f := range fields {
		if strings.EqualFold(name, f) {
			return true
		}
	}
	return false
}

// scrub replaces every one of secrets in s.
func scrub(s string, secrets []string) string {
	for _, v := range secrets {
		if v != "" {
			s = strings.ReplaceAll(s, v, Redacted)
		}
	}
	return s
}
