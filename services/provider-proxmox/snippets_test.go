package proxmox

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"better-compute.io/compute/pkg/api"
)

func TestDirSnippetWriter(t *testing.T) {
	dir := t.TempDir()
	w := DirSnippetWriter(dir, "shared")
	vol, err := w(context.Background(), nil, 10001, "bc-10001-abc.yaml", "#cloud-config\n")
	if err != nil || vol != "shared:snippets/bc-10001-abc.yaml" {
		t.Fatalf("volume %q, err %v", vol, err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "bc-10001-abc.yaml"))
	if err != nil || string(data) != "#cloud-config\n" {
		t.Fatalf("snippet %q, err %v", data, err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "bc-10001-abc.yaml")); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", fi.Mode().Perm())
	}
	if _, err := w(context.Background(), nil, 1, "../escape", "x"); !api.IsCode(err, api.CodeInternal) {
		t.Fatalf("path escape: %v", err)
	}
	if _, err := DirSnippetWriter(filepath.Join(dir, "missing"), "s")(context.Background(), nil, 1, "a.yaml", "x"); !api.IsCode(err, api.CodeProviderError) {
		t.Fatalf("unwritable dir: %v", err)
	}
}
