package api

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzAccountBootstrapRequest: a decoded accounts.bootstrap body is
// either refused by Check with INVALID_INPUT naming a field of the
// request, or accepted with values the installimage command line can
// carry as single words (no blank, no shell metacharacter in the image,
// hostname or drives).
func FuzzAccountBootstrapRequest(f *testing.F) {
	for _, s := range []string{
		`{"accountId":"pacct_01jd0000000000000000000000","poolId":"pool_01jd0000000000000000000000","serverNumber":321,` +
			`"image":"/root/.oldroot/nfs/images/Ubuntu-2404-noble-amd64-base.tar.gz"}`,
		`{"accountId":"pacct_01jd0000000000000000000000","poolId":"pool_01jd0000000000000000000000","serverNumber":7,` +
			`"image":"https://img.example/u.tar.zst","hostname":"bm-7","drives":["/dev/nvme0n1"],"raidLevel":-1}`,
		`{"serverNumber":-1}`,
		`{"image":"/x; rm -rf /"}`,
		`{"hostname":"a b"}`,
		`{}`,
	} {
		f.Add(s)
	}
	paths := []string{"accountId", "poolId", "serverNumber", "image", "hostname", "drives", "raidLevel"}
	f.Fuzz(func(t *testing.T, body string) {
		var r AccountBootstrapRequest
		if json.Unmarshal([]byte(body), &r) != nil {
			return
		}
		if err := r.Check(); err != nil {
			ce := AsComputeError(err)
			p := ce.Path()
			if ce.Code != CodeInvalidInput || !(contains(paths, p) || strings.HasPrefix(p, "drives[")) {
				t.Fatalf("refused with %s at %q", ce.Code, p)
			}
			return
		}
		words := append([]string{r.Image, r.Hostname}, r.Drives...)
		for _, w := range words {
			if strings.ContainsAny(w, " \t\n;|&`$<>'\"\\()*!") {
				t.Fatalf("accepted %q, which is no single safe word", w)
			}
		}
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
