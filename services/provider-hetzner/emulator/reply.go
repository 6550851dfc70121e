package emulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// reply is an API answer before it is written: status and JSON body.
type reply struct {
	status int
	body   any
}

// errorEnvelope is the API's error body {"error":{code,message,details}}.
type errorEnvelope struct {
	Error apiError `json:"error"`
}

// apiError is the inner error object.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Details any    `json:"details"`
}

// fieldError names one invalid request field, as in invalid_input details.
type fieldError struct {
	Name     string   `json:"name"`
	Messages []string `json:"messages"`
}

// fieldDetails is the details object of invalid_input and uniqueness_error.
type fieldDetails struct {
	Fields []fieldError `json:"fields"`
}

// errorReply builds an error answer; nil details are sent as {}.
func errorReply(status int, code, message string, details any) reply {
	if details == nil {
		details = struct{}{}
	}
	return reply{status: status, body: errorEnvelope{Error: apiError{Code: code, Message: message, Details: details}}}
}

// invalidInput builds an invalid_input answer naming the bad fields.
func invalidInput(status int, fields []fieldError) reply {
	return errorReply(status, "invalid_input", "invalid input in fields", fieldDetails{Fields: fields})
}

// field is one fieldError with a single message.
func field(name, message string) fieldError {
	return fieldError{Name: name, Messages: []string{message}}
}

// notFound builds a not_found answer.
func notFound(what string) reply {
	return errorReply(http.StatusNotFound, "not_found", what+" not found", nil)
}

// ok builds a 200 answer.
func ok(body any) reply { return reply{status: http.StatusOK, body: body} }

// maxBodyBytes bounds request bodies.
const maxBodyBytes = 1 << 20

// bufferBody reads the whole request body up front and puts it back in
// memory. Consuming the body is also what lets net/http notice a client
// that goes away, and so cancel the request context, while a call waits on
// injected latency or a hang.
func bufferBody(w http.ResponseWriter, r *http.Request) (reply, bool) {
	if r.Body == nil { // only for requests built by hand, not by net/http
		r.Body = http.NoBody
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		return errorReply(http.StatusBadRequest, "json_error", "cannot read request body", nil), false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return reply{}, true
}

// decodeJSON reads the (buffered) request body into v. An empty body is
// accepted when optional is set; otherwise, and for malformed JSON, it
// answers 400 json_error.
func decodeJSON(r *http.Request, v any, optional bool) (reply, bool) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return errorReply(http.StatusBadRequest, "json_error", "cannot read request body", nil), false
	}
	if len(body) == 0 && optional {
		return reply{}, true
	}
	if err := json.Unmarshal(body, v); err != nil {
		var syntax *json.SyntaxError
		msg := "invalid JSON in request body"
		if errors.As(err, &syntax) {
			msg = fmt.Sprintf("%s at offset %d", msg, syntax.Offset)
		}
		return errorReply(http.StatusBadRequest, "json_error", msg, nil), false
	}
	return reply{}, true
}

// Pagination limits of the real API.
const (
	defaultPerPage = 25
	maxPerPage     = 50
)

// pagination is meta.pagination; absent pages are null, as in the API.
type pagination struct {
	Page         int  `json:"page"`
	PerPage      int  `json:"per_page"`
	PreviousPage *int `json:"previous_page"`
	NextPage     *int `json:"next_page"`
	LastPage     int  `json:"last_page"`
	TotalEntries int  `json:"total_entries"`
}

// meta is the meta object of list replies.
type meta struct {
	Pagination pagination `json:"pagination"`
}

// paginate cuts the requested page out of items.
//
// Guess: a per_page above 50 is capped at 50 and an unusable page or
// per_page falls back to the default, rather than being rejected.
func paginate[T any](items []T, q url.Values) ([]T, meta) {
	page, err := strconv.Atoi(q.Get("page"))
	if err != nil || page < 1 {
		page = 1
	}
	perPage, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || perPage < 1 {
		perPage = defaultPerPage
	}
	perPage = min(perPage, maxPerPage)
	total := len(items)
	last := max(1, (total+perPage-1)/perPage)
	p := pagination{Page: page, PerPage: perPage, LastPage: last, TotalEntries: total}
	if page > 1 {
		prev := min(page-1, last)
		p.PreviousPage = &prev
	}
	if page < last {
		next := page + 1
		p.NextPage = &next
	}
	start := total
	if page <= last {
		start = min((page-1)*perPage, total)
	}
	end := min(start+perPage, total)
	return items[start:end], meta{Pagination: p}
}

// pageOf is the page of items q asks for (see paginate), each converted by
// conv; never nil, so that an empty page renders as [].
func pageOf[T, S any](items []T, q url.Values, conv func(T) S) ([]S, meta) {
	page, m := paginate(items, q)
	out := make([]S, 0, len(page))
	for _, item := range page {
		out = append(out, conv(item))
	}
	return out, m
}
