package conformance

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Host describes the machine a run ran on: logical cores, physical memory
// in bytes (0 when unknown), OS, architecture and Go version.
type Host struct {
	Cores       int    `json:"cores"`
	MemoryBytes uint64 `json:"memoryBytes"`
	OS          string `json:"os"`
	Arch        string `json:"arch"`
	GoVersion   string `json:"goVersion"`
}

// currentHost describes this machine.
func currentHost() Host {
	return Host{Cores: runtime.NumCPU(), MemoryBytes: memTotal(), OS: runtime.GOOS, Arch: runtime.GOARCH, GoVersion: runtime.Version()}
}

// memTotal reads MemTotal from /proc/meminfo (Linux); 0 elsewhere.
func memTotal() uint64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kib, err := strconv.ParseUint(fields[1], 10, 64)
			if err == nil {
				return kib * 1024
			}
		}
	}
	return 0
}

// gitCommit is `git rev-parse HEAD` of the working directory, or "unknown".
func gitCommit() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}
