package emulator

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/stretchr/testify/require"
)

// testActionDuration keeps real-clock actions short.
const testActionDuration = 30 * time.Millisecond

// newTestServer serves a new emulator over HTTP for the test's lifetime.
func newTestServer(t *testing.T, opts Options) (*Emulator, *httptest.Server) {
	t.Helper()
	if opts.ActionDuration == 0 {
		opts.ActionDuration = testActionDuration
	}
	e := New(opts)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return e, srv
}

// newClient is the real hcloud-go client against url, without retries and
// polling fast.
func newClient(url, token string) *hcloud.Client {
	return hcloud.NewClient(
		hcloud.WithEndpoint(url),
		hcloud.WithToken(token),
		hcloud.WithRetryOpts(hcloud.RetryOpts{MaxRetries: 0}),
		hcloud.WithPollOpts(hcloud.PollOpts{BackoffFunc: hcloud.ConstantBackoff(5 * time.Millisecond)}),
	)
}

// newTestClient starts an emulator and returns it with a client.
func newTestClient(t *testing.T, opts Options) (*Emulator, *hcloud.Client, *httptest.Server) {
	t.Helper()
	e, srv := newTestServer(t, opts)
	return e, newClient(srv.URL+"/v1", "t"), srv
}

// testCtx is a context bounded by a generous timeout.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// createOpts is a minimal valid create request.
func createOpts(name string, labels map[string]string) hcloud.ServerCreateOpts {
	return hcloud.ServerCreateOpts{
		Name:       name,
		ServerType: &hcloud.ServerType{Name: "cx23"},
		Image:      &hcloud.Image{Name: "ubuntu-24.04"},
		Location:   &hcloud.Location{Name: "nbg1"},
		Labels:     labels,
	}
}

// statusOf returns the HTTP status of an hcloud error.
func statusOf(t *testing.T, err error) int {
	t.Helper()
	var herr hcloud.Error
	require.ErrorAs(t, err, &herr)
	require.NotNil(t, herr.Response())
	return herr.Response().StatusCode
}

// rawGet does an authenticated GET and returns the response.
func rawGet(t *testing.T, url string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer t")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// stringsReader is a request body.
func stringsReader(s string) io.Reader { return strings.NewReader(s) }

// decodeBody decodes a JSON response body.
func decodeBody(resp *http.Response, v any) error {
	return json.NewDecoder(resp.Body).Decode(v)
}
