package emulator

import (
	"fmt"
	"regexp"
	"strconv"
)

// upid is a decoded PVE task identifier.
type upid struct {
	node      string
	pid       uint32
	pstart    uint64
	startTime int64
	typ       string
	id        string
	user      string
}

// upidPattern is PVE's UPID syntax (PVE::Tools::upid_decode).
var upidPattern = regexp.MustCompile(
	`^UPID:([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?):([0-9A-Fa-f]{8}):([0-9A-Fa-f]{8,9}):([0-9A-Fa-f]{8}):([^:\s]+):([^:\s]*):([^:\s]+):$`,
)

// String encodes u as PVE does:
// UPID:{node}:{pid %08X}:{pstart %08X}:{starttime %08X}:{type}:{id}:{user}:
func (u upid) String() string {
	return fmt.Sprintf("UPID:%s:%08X:%08X:%08X:%s:%s:%s:", u.node, u.pid, u.pstart, u.startTime, u.typ, u.id, u.user)
}

// parseUPID decodes s, failing on anything PVE would not accept.
func parseUPID(s string) (upid, error) {
	m := upidPattern.FindStringSubmatch(s)
	if m == nil {
		return upid{}, fmt.Errorf("unable to parse worker upid '%s'", s)
	}
	pid, _ := strconv.ParseUint(m[3], 16, 32)
	pstart, _ := strconv.ParseUint(m[4], 16, 64)
	start, _ := strconv.ParseInt(m[5], 16, 64)
	return upid{node: m[1], pid: uint32(pid), pstart: pstart, startTime: start, typ: m[6], id: m[7], user: m[8]}, nil
}
