package provider

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/textproto"
	"strings"
)

// UserDataWithSSHKeys returns the user data a machine boots with: userData as
// given when keys is empty; otherwise a cloud-init cloud-config that
// authorises the OpenSSH public keys, combined with the caller's user data
// (any format cloud-init accepts) as a MIME multipart archive, which
// cloud-init merges. Keys must be single-line public keys (the instance API
// validates them); they are written as YAML single-quoted strings.
func UserDataWithSSHKeys(userData string, keys []string) string {
	if len(keys) == 0 {
		return userData
	}
	var cfg strings.Builder
	cfg.WriteString("#cloud-config\nssh_authorized_keys:\n")
	for _, k := range keys {
		fmt.Fprintf(&cfg, "  - '%s'\n", strings.ReplaceAll(k, "'", "''"))
	}
	if userData == "" {
		return cfg.String()
	}
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for _, part := range []struct{ kind, data string }{
		{"text/cloud-config", cfg.String()},
		{userDataType(userData), userData},
	} {
		pw, _ := w.CreatePart(textproto.MIMEHeader{"Content-Type": {part.kind + `; charset="utf-8"`}}) // writes to memory
		_, _ = pw.Write([]byte(part.data))
	}
	_ = w.Close()
	return "Content-Type: multipart/mixed; boundary=\"" + w.Boundary() + "\"\nMIME-Version: 1.0\n\n" + body.String()
}

// userDataType is the MIME type cloud-init expects for a user-data part,
// from its first line (cloud-init's own detection).
func userDataType(ud string) string {
	switch {
	case strings.HasPrefix(ud, "#cloud-config"):
		return "text/cloud-config"
	case strings.HasPrefix(ud, "#!"):
		return "text/x-shellscript"
	case strings.HasPrefix(ud, "#include"):
		return "text/x-include-url"
	case strings.HasPrefix(ud, "#cloud-boothook"):
		return "text/cloud-boothook"
	}
	return "text/plain"
}
