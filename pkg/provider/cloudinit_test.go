package provider

import (
	"io"
	"mime"
	"mime/multipart"
	"strings"
	"testing"
)

const testKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl o'brien@host"

func TestUserDataWithSSHKeys(t *testing.T) {
	if got := UserDataWithSSHKeys("#!/bin/sh\necho hi\n", nil); got != "#!/bin/sh\necho hi\n" {
		t.Fatalf("no keys changed user data: %q", got)
	}
	want := "#cloud-config\nssh_authorized_keys:\n  - 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl o''brien@host'\n"
	if got := UserDataWithSSHKeys("", []string{testKey}); got != want {
		t.Fatalf("keys only:\n%s\nwant\n%s", got, want)
	}

	got := UserDataWithSSHKeys("#!/bin/sh\necho hi\n", []string{testKey})
	header, body, ok := strings.Cut(got, "\n\n")
	if !ok {
		t.Fatalf("no MIME header: %q", got)
	}
	mt, params, err := mime.ParseMediaType(strings.TrimPrefix(strings.Split(header, "\n")[0], "Content-Type: "))
	if err != nil || mt != "multipart/mixed" {
		t.Fatalf("media type %q %v", mt, err)
	}
	r := multipart.NewReader(strings.NewReader(body), params["boundary"])
	var kinds, datas []string
	for {
		p, err := r.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(p)
		kinds = append(kinds, p.Header.Get("Content-Type"))
		datas = append(datas, string(data))
	}
	if len(kinds) != 2 || !strings.HasPrefix(kinds[0], "text/cloud-config") || !strings.HasPrefix(kinds[1], "text/x-shellscript") {
		t.Fatalf("parts: %v", kinds)
	}
	if datas[0] != want || datas[1] != "#!/bin/sh\necho hi\n" {
		t.Fatalf("part bodies: %q", datas)
	}
}
