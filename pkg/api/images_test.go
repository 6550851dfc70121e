package api

import (
	"strings"
	"testing"
)

func TestCheckImage(t *testing.T) {
	cases := []struct {
		image    string
		required bool
		want     string // the message, "" for accepted
	}{
		{"ubuntu-24.04", true, ""},
		{"", false, ""},
		{"", true, "image is required (at most 255 characters)"},
		{strings.Repeat("i", 256), true, "image is required (at most 255 characters)"},
		{strings.Repeat("i", 256), false, "image must be at most 255 characters"},
		{"ubu\x01ntu", false, "image holds the unprintable character U+0001 at byte 3: only printable characters"},
		{"debian\u202e21", true, "image holds the unprintable character U+202E at byte 6: only printable characters"},
		{"deb\xffian", true, "image must be UTF-8"},
	}
	for _, c := range cases {
		err := CheckImage("image", c.image, c.required)
		if c.want == "" {
			if err != nil {
				t.Errorf("CheckImage(%q, %v) = %v, want accepted", c.image, c.required, err)
			}
			continue
		}
		ce := AsComputeError(err)
		if ce == nil || ce.Code != CodeInvalidInput || ce.Path() != "image" || ce.Message != c.want {
			t.Errorf("CheckImage(%q, %v) = %v, want INVALID_INPUT at image: %s", c.image, c.required, err, c.want)
		}
	}
}
