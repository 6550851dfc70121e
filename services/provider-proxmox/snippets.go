package proxmox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// DirSnippetWriter writes each cloud-init snippet as a file in dir and
// answers the volume id "<storage>:snippets/<name>". Point dir at the
// directory behind a PVE storage with content type "snippets" that every
// node reads: shared storage (NFS, CephFS) mounted where this provider runs,
// e.g. dir /mnt/pve/shared/snippets for storage "shared". Files are written
// atomically with mode 0640. Errors: PROVIDER_ERROR when the file cannot be
// written.
func DirSnippetWriter(dir, storage string) SnippetWriter {
	return func(_ context.Context, _ *provider.Call, _ int, name, userData string) (string, error) {
		if name == "" || filepath.Base(name) != name {
			return "", api.Errorf(api.CodeInternal, "snippet name %q is not a file name", name)
		}
		tmp, err := os.CreateTemp(dir, ".snippet-*")
		if err == nil {
			_, err = tmp.WriteString(userData)
			if cerr := tmp.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				err = os.Chmod(tmp.Name(), 0o640)
			}
			if err == nil {
				err = os.Rename(tmp.Name(), filepath.Join(dir, name))
			}
			if err != nil {
				_ = os.Remove(tmp.Name())
			}
		}
		if err != nil {
			return "", api.ProviderError(0, "snippet_write_failed", "proxmox: write cloud-init snippet %s: %v", name, err)
		}
		return fmt.Sprintf("%s:snippets/%s", storage, name), nil
	}
}

// MemorySnippets keeps cloud-init snippets in memory, as storage "local"
// would hold them: for tests and the credential-free certification, whose
// emulated cluster reads no files. Its Write method is the SnippetWriter
// (WithSnippetWriter(m.Write)). The zero value is ready to use; it is safe
// for concurrent use.
type MemorySnippets struct {
	mu    sync.Mutex
	files map[string]string
}

// memorySnippetsPrefix starts the volume id of a MemorySnippets snippet.
const memorySnippetsPrefix = "local:snippets/"

// Write stores userData as snippet name and answers its volume id,
// "local:snippets/<name>". It never fails.
func (m *MemorySnippets) Write(_ context.Context, _ *provider.Call, _ int, name, userData string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.files == nil {
		m.files = map[string]string{}
	}
	m.files[name] = userData
	return memorySnippetsPrefix + name, nil
}

// File returns the snippet a volume id of Write names, and whether it exists.
func (m *MemorySnippets) File(volume string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.files[strings.TrimPrefix(volume, memorySnippetsPrefix)]
	return f, ok
}
