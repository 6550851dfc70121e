package proxmox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// maxReplyBytes bounds a reply body (a cluster's resource list included).
const maxReplyBytes = 64 << 20

// The API calls of a session. POST and PUT go through the Telmate client's
// raw calls (CreateItemReturnStatus, UpdateItemReturnStatus): one request,
// the reply body handed back, no retry. GET and DELETE are sent by send,
// with the same HTTP client and token, because Telmate's are unfit:
//   - every Telmate GET helper goes through GetJsonRetryable, which after a
//     failed try (an unreachable node, a reply that is not JSON) sleeps with
//     time.Sleep, ignoring the context and the call's clock, even when asked
//     for a single try; GetItemConfigMapStringInterface also type-asserts
//     the reply and panics on one that is not an object;
//   - Client.Delete drops the reply body, so the UPID to wait for is lost,
//     and DeleteWithTask waits with Telmate's own task polling.

// get reads path (below the API URL) with query and decodes the reply's
// data into out.
func (s *session) get(ctx context.Context, path string, query url.Values, out any) error {
	data, err := s.send(ctx, http.MethodGet, path, query)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, out); err != nil {
		return unexpectedReply("GET "+path, err)
	}
	return nil
}

// post sends POST path with form params (Telmate CreateItemReturnStatus)
// and returns the reply's data.
func (s *session) post(ctx context.Context, path string, params map[string]any) (json.RawMessage, error) {
	body, err := s.pve.CreateItemReturnStatus(ctx, params, path)
	return s.telmateReply("POST "+path, body, err)
}

// put sends PUT path with form params (Telmate UpdateItemReturnStatus) and
// returns the reply's data.
func (s *session) put(ctx context.Context, path string, params map[string]any) (json.RawMessage, error) {
	body, err := s.pve.UpdateItemReturnStatus(ctx, params, path)
	return s.telmateReply("PUT "+path, body, err)
}

// del sends DELETE path with query and returns the reply's data.
func (s *session) del(ctx context.Context, path string, query url.Values) (json.RawMessage, error) {
	return s.send(ctx, http.MethodDelete, path, query)
}

// telmateReply reads a Telmate raw call's outcome: an error reply is the
// recorder's failure (status, and the message from the body or the reason
// phrase); any other error is the transport's.
func (s *session) telmateReply(what, body string, err error) (json.RawMessage, error) {
	if err != nil {
		if f := s.rec.failure(); f != nil {
			return nil, f
		}
		return nil, err
	}
	return envelope(what, []byte(body))
}

// send makes one GET or DELETE request and returns the reply's data.
// Errors: *pveError for an error reply, the transport's error otherwise.
func (s *session) send(ctx context.Context, method, path string, query url.Values) (json.RawMessage, error) {
	target := s.c.cfg.URL + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, target, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", s.auth)
	req.Header.Set("Accept", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, httpFailure(resp.StatusCode, resp.Status, body)
	}
	return envelope(method+" "+path, body)
}

// envelope returns the data of a {"data": …} reply.
func envelope(what string, body []byte) (json.RawMessage, error) {
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, unexpectedReply(what, err)
	}
	return env.Data, nil
}

// upidOf reads the UPID a call answered and the node it runs on.
func upidOf(what string, data json.RawMessage) (upid, node string, err error) {
	if err := json.Unmarshal(data, &upid); err != nil {
		return "", "", unexpectedReply(what, errors.New("no task id"))
	}
	node, ok := upidNode(upid)
	if !ok {
		return "", "", unexpectedReply(what, errors.New("malformed task id"))
	}
	return upid, node, nil
}

// upidNode is the node field of a UPID
// (UPID:{node}:{pid}:{pstart}:{starttime}:{type}:{id}:{user}:).
func upidNode(upid string) (string, bool) {
	parts := strings.Split(upid, ":")
	if len(parts) < 9 || parts[0] != "UPID" || !dnsNamePattern.MatchString(parts[1]) {
		return "", false
	}
	return parts[1], true
}

// isNull reports whether data is JSON null (or absent).
func isNull(data json.RawMessage) bool {
	return len(bytes.TrimSpace(data)) == 0 || bytes.Equal(bytes.TrimSpace(data), []byte("null"))
}

// number is an integer PVE may send as a JSON number (integral or not) or
// a numeric string; null reads as 0.
type number int64

// UnmarshalJSON implements json.Unmarshaler.
func (n *number) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "null" || s == "" {
		*n = 0
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return err
	}
	*n = number(f)
	return nil
}
