package providertest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider/providertest"
)

func TestSecrets(t *testing.T) {
	s := providertest.Secrets{"env://TOKEN": "t0k3n"}
	if v, err := s.Resolve(context.Background(), "env://TOKEN"); err != nil || v != "t0k3n" {
		t.Fatalf("resolve = %q, %v", v, err)
	}
	_, err := s.Resolve(context.Background(), "env://OTHER")
	if ce := providertest.WantCode(t, err, api.CodeNotFound); ce.Details.ID != "env://OTHER" {
		t.Fatalf("details = %v, want id env://OTHER", ce.Details)
	}
}

// TestBarrier: no reply to a matching request comes back before n were
// answered; other requests pass at once.
func TestBarrier(t *testing.T) {
	var mu sync.Mutex
	served := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		served++
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	b := providertest.NewBarrier(2, func(r *http.Request) bool { return r.URL.Path == "/held" })
	c := &http.Client{Transport: b}
	if resp, err := c.Get(srv.URL + "/free"); err != nil {
		t.Fatal(err)
	} else {
		_ = resp.Body.Close()
	}
	done := make(chan int, 2)
	for range 2 {
		go func() {
			resp, err := c.Get(srv.URL + "/held")
			if err != nil {
				t.Error(err)
				done <- 0
				return
			}
			_ = resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			done <- served
		}()
	}
	for range 2 {
		if n := <-done; n != 3 {
			t.Fatalf("a held reply came back after %d requests were served, want all 3", n)
		}
	}
}
