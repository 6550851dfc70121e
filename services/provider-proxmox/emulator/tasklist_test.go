package emulator

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"better-compute.io/compute/pkg/clock"
)

// GET /nodes/{node}/tasks lists finished tasks by default (source
// archive), running ones with source active, both with all; newest
// first, filtered by vmid and type, paged by start and limit, with the
// number of matches in total beside data.
func TestNodeTaskList(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	s := startServer(t, Options{Clock: fake, TaskDurations: map[string]time.Duration{"qmstart": 20 * time.Second}})
	x := newTester(t, s)
	x.clone(101, "web-1")
	fake.Advance(time.Second)
	start := x.do(http.MethodPost, "/nodes/pve1/qemu/101/status/start", nil).upid(t)

	list := func(q url.Values) ([]any, float64) {
		r := x.do(http.MethodGet, "/nodes/pve1/tasks", q)
		entries, _ := r.data().([]any)
		total, _ := r.body["total"].(float64)
		return entries, total
	}
	field := func(e any, k string) any { return e.(map[string]any)[k] }

	archive, total := list(nil)
	if len(archive) != 1 || total != 1 || field(archive[0], "type") != "qmclone" || field(archive[0], "status") != "OK" ||
		field(archive[0], "endtime") == nil {
		t.Fatalf("archive: %v (total %v), want the finished clone", archive, total)
	}
	active, _ := list(url.Values{"source": {"active"}})
	if len(active) != 1 || field(active[0], "upid") != start || field(active[0], "status") != "RUNNING" || field(active[0], "endtime") != nil {
		t.Fatalf("active: %v, want the running start", active)
	}
	all, total := list(url.Values{"source": {"all"}, "limit": {"1"}})
	if len(all) != 1 || total != 2 || field(all[0], "upid") != start {
		t.Fatalf("all, limit 1: %v (total %v), want the newest (the start) of 2", all, total)
	}
	if got, _ := list(url.Values{"source": {"all"}, "start": {"1"}}); len(got) != 1 || field(got[0], "type") != "qmclone" {
		t.Fatalf("all from offset 1: %v, want the clone", got)
	}
	if got, _ := list(url.Values{"source": {"all"}, "typefilter": {"qmstart"}, "vmid": {"101"}}); len(got) != 1 {
		t.Fatalf("typefilter qmstart, vmid 101: %v", got)
	}
	if got, _ := list(url.Values{"source": {"all"}, "since": {"1700000001"}}); len(got) != 1 || field(got[0], "upid") != start {
		t.Fatalf("since the start's second: %v, want the start only", got)
	}
	fake.Advance(20 * time.Second)
	if got, _ := list(url.Values{"source": {"all"}}); len(got) != 2 || field(got[0], "status") != "OK" {
		t.Fatalf("after the start ended: %v", got)
	}
	isErrorReply(t, x.do(http.MethodGet, "/nodes/pve1/tasks", url.Values{"source": {"some"}}), 400, "Parameter verification failed.")
}
