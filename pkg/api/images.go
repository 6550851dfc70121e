package api

import (
	"unicode"
	"unicode/utf8"
)

// MaxImageLength bounds an image name or id (a Hetzner image name or id, a
// Proxmox template), in bytes.
const MaxImageLength = 255

// CheckImage checks the image at path ("image", "machine.image",
// "flavors[0].image"): present when required, at most MaxImageLength
// bytes, valid UTF-8 of printable characters only (no control, format or
// bidi character, which a provider would only refuse later, failing the
// instance). This is the one image check of the API, the pool validation
// and the provider SDK. Error: INVALID_INPUT naming path.
func CheckImage(path, image string, required bool) error {
	switch {
	case required && image == "", len(image) > MaxImageLength:
		if required {
			return InvalidInput(path, "%s is required (at most %d characters)", path, MaxImageLength)
		}
		return InvalidInput(path, "%s must be at most %d characters", path, MaxImageLength)
	case !utf8.ValidString(image):
		return InvalidInput(path, "%s must be UTF-8", path)
	}
	for i, r := range image {
		if !unicode.IsPrint(r) {
			return InvalidInput(path, "%s holds the unprintable character %U at byte %d: only printable characters", path, r, i)
		}
	}
	return nil
}
