package emulator

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// sizePattern is PVE's disk size syntax (resize's "size" parameter and the
// size= drive option): an optional '+', a number and a K/M/G/T suffix
// (binary units; no suffix means bytes).
var sizePattern = regexp.MustCompile(`^(\+)?(\d+(?:\.\d+)?)([KMGT])?$`)

// unitShift maps a size suffix to its power of two.
var unitShift = map[string]uint{"": 0, "K": 10, "M": 20, "G": 30, "T": 40}

// parseSize decodes a size, reporting whether it is relative ("+10G").
func parseSize(s string) (bytes int64, relative bool, err error) {
	m := sizePattern.FindStringSubmatch(s)
	if m == nil {
		return 0, false, fmt.Errorf("value does not match the regex pattern")
	}
	f, err := strconv.ParseFloat(m[2], 64)
	if err != nil {
		return 0, false, err
	}
	return int64(f * float64(int64(1)<<unitShift[m[3]])), m[1] == "+", nil
}

// formatSize renders bytes with the largest unit that divides it exactly,
// as PVE writes size= ("40G", "10752M").
func formatSize(bytes int64) string {
	for _, u := range []string{"T", "G", "M", "K"} {
		unit := int64(1) << unitShift[u]
		if bytes >= unit && bytes%unit == 0 {
			return strconv.FormatInt(bytes/unit, 10) + u
		}
	}
	return strconv.FormatInt(bytes, 10)
}

// driveSize reads the size= option of a drive value such as
// "local-lvm:vm-100-disk-0,iothread=1,size=32G"; 0 when absent.
func driveSize(value string) int64 {
	for _, opt := range strings.Split(value, ",")[1:] {
		if v, ok := strings.CutPrefix(opt, "size="); ok {
			n, _, err := parseSize(v)
			if err == nil {
				return n
			}
		}
	}
	return 0
}

// withDriveSize returns value with its size= option set to bytes.
func withDriveSize(value string, bytes int64) string {
	parts := strings.Split(value, ",")
	sizeOpt := "size=" + formatSize(bytes)
	for i := 1; i < len(parts); i++ {
		if strings.HasPrefix(parts[i], "size=") {
			parts[i] = sizeOpt
			return strings.Join(parts, ",")
		}
	}
	return strings.Join(append(parts, sizeOpt), ",")
}

// isCDROM reports whether a drive value is a CD-ROM (cloud-init included).
func isCDROM(value string) bool {
	for _, opt := range strings.Split(value, ",")[1:] {
		if opt == "media=cdrom" {
			return true
		}
	}
	return strings.HasPrefix(value, "none,") || value == "none" || value == "cdrom"
}
