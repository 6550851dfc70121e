package bustest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Scan is where AssertNowhere looks for secret values.
type Scan struct {
	// NC reads every message of every stream (KV buckets are streams); it
	// needs JetStream API access to all of them.
	NC *nats.Conn
	// Dirs are walked and every file read: the JetStream store directory,
	// data directories.
	Dirs []string
	// Logs are the captured log lines of the services (must not be empty).
	Logs string
	// Replies are the reply bodies (and error texts) clients received.
	Replies []string
}

// AssertNowhere fails t if any of values appears, raw, base64 or hex
// encoded, in any place s names. It also fails when a place holds nothing
// (no logs, no stream message, no file): such a scan would prove nothing.
// Failures name the place and the index of the value, never the value.
func AssertNowhere(t testing.TB, s Scan, values ...string) {
	t.Helper()
	var forms [][]byte
	var owner []int
	for i, v := range values {
		if v == "" {
			t.Fatalf("value #%d is empty", i)
		}
		for _, f := range []string{v, base64.StdEncoding.EncodeToString([]byte(v)), hex.EncodeToString([]byte(v))} {
			forms = append(forms, []byte(f))
			owner = append(owner, i)
		}
	}
	check := func(where string, data []byte) {
		t.Helper()
		for j, f := range forms {
			if bytes.Contains(data, f) {
				t.Errorf("secret value #%d found in %s", owner[j], where)
			}
		}
	}
	if s.Logs == "" {
		t.Fatal("no log lines captured: the scan would prove nothing")
	}
	check("the logs", []byte(s.Logs))
	for i, r := range s.Replies {
		check(fmt.Sprintf("reply #%d", i), []byte(r))
	}
	if n := scanStreams(t, s.NC, check); n == 0 {
		t.Fatal("no stream message scanned")
	}
	for _, dir := range s.Dirs {
		if n := scanDir(t, dir, check); n == 0 {
			t.Fatalf("no file scanned under %s", dir)
		}
	}
}

// scanStreams passes every stored message of every stream to check and
// returns how many it read.
func scanStreams(t testing.TB, nc *nats.Conn, check func(string, []byte)) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	scanned := 0
	names := js.StreamNames(ctx)
	for name := range names.Name() {
		stream, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		st := stream.CachedInfo().State
		for seq := st.FirstSeq; st.Msgs > 0 && seq <= st.LastSeq; seq++ {
			msg, err := stream.GetMsg(ctx, seq)
			if err != nil {
				continue // deleted or purged
			}
			scanned++
			check("stream "+name+" message "+msg.Subject, msg.Data)
			for k, vs := range msg.Header {
				for _, v := range vs {
					check("stream "+name+" header "+k, []byte(v))
				}
			}
		}
	}
	if err := names.Err(); err != nil {
		t.Fatal(err)
	}
	return scanned
}

// scanDir passes every file under dir to check and returns how many it read.
func scanDir(t testing.TB, dir string, check func(string, []byte)) int {
	t.Helper()
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		check(path, data)
		return nil
	})
	if err != nil {
		t.Fatalf("scan %s: %v", dir, err)
	}
	return files
}
