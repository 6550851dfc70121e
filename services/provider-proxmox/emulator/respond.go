package emulator

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// contentType is what pveproxy sends for /api2/json.
const contentType = "application/json;charset=UTF-8"

// counted is list data whose reply also says how many entries matched:
// {"data": items, "total": total}, as PVE's paged lists answer.
type counted struct {
	items any
	total int
}

// writeData writes a 200 reply {"data": data} ({"data", "total"} for
// counted data).
func writeData(w http.ResponseWriter, data any) {
	out := map[string]any{"data": data}
	if c, ok := data.(counted); ok {
		out = map[string]any{"data": c.items, "total": c.total}
	}
	body, err := json.Marshal(out)
	if err != nil {
		body = []byte(`{"data":null}`)
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// errorBody renders e's JSON body for the given legacy setting. Legacy
// bodies keep a 400's "errors" but drop "message" (Guess: only 8.3 added
// "message", for every status).
func errorBody(e *apiError, legacy bool) []byte {
	out := map[string]any{"data": nil}
	if len(e.errors) > 0 {
		out["errors"] = e.errors
	}
	if !legacy && !e.bare {
		out["message"] = e.message + "\n"
	}
	body, _ := json.Marshal(out)
	return body
}

// writeError writes e with PVE's reason phrase. net/http cannot send a
// custom reason phrase, so the connection is hijacked and the status line
// written by hand (then closed, as after any hijack). Where hijacking is
// impossible (an httptest.ResponseRecorder, HTTP/2) the standard phrase is
// sent instead and only the body carries the message.
func writeError(w http.ResponseWriter, r *http.Request, e *apiError, legacy bool) {
	switch e.style {
	case StyleLegacy:
		legacy = true
	case StyleModern:
		legacy = false
	}
	body := errorBody(e, legacy)
	if hj, ok := w.(http.Hijacker); ok && r.ProtoMajor == 1 {
		// Drain what is left of the request so the client is not reset
		// while still sending.
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxBodyBytes))
		if conn, rw, err := hj.Hijack(); err == nil {
			defer func() { _ = conn.Close() }()
			writeRawResponse(rw.Writer, e.status, reasonPhrase(e.message), body)
			return
		}
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(e.status)
	_, _ = w.Write(body)
}

// writeRawResponse writes a whole HTTP/1.1 response to bw.
func writeRawResponse(bw *bufio.Writer, status int, reason string, body []byte) {
	fmt.Fprintf(bw, "HTTP/1.1 %03d %s\r\n", status, reason)
	fmt.Fprintf(bw, "Date: %s\r\n", time.Now().UTC().Format(http.TimeFormat))
	fmt.Fprintf(bw, "Server: pve-api-daemon/3.0\r\n")
	fmt.Fprintf(bw, "Cache-Control: max-age=0\r\nPragma: no-cache\r\n")
	fmt.Fprintf(bw, "Content-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", contentType, len(body))
	_, _ = bw.Write(body)
	_ = bw.Flush()
}
