package proxmox

import (
	"testing"
	"time"
)

// The pacer polls a type never seen early and then doubles; once it saw
// the type end it polls at the learned duration first, and an eighth of
// the elapsed time after that.
func TestTaskPacerLearnsDurations(t *testing.T) {
	var p taskPacer
	if d := p.first("qmclone"); d != firstTaskPoll {
		t.Fatalf("first poll of an unknown type after %s, want %s", d, firstTaskPoll)
	}
	if d := p.next("qmclone", 4*time.Second); d != 4*time.Second {
		t.Fatalf("unknown type running for 4 s: next poll after %s, want 4s (doubling)", d)
	}
	if d := p.next("qmclone", time.Minute); d != maxTaskPollGap {
		t.Fatalf("gap %s, want the cap %s", d, maxTaskPollGap)
	}
	p.learn("qmclone", 16*time.Second, 24*time.Second)
	if d := p.first("qmclone"); d != 20*time.Second {
		t.Fatalf("learned first poll %s, want the midpoint 20s", d)
	}
	if d := p.next("qmclone", 20*time.Second); d != 2500*time.Millisecond {
		t.Fatalf("known type still running at 20 s: next after %s, want 2.5s", d)
	}
	p.learn("qmclone", 0, 30*time.Second) // a first poll found it stopped: no news
	if d := p.first("qmclone"); d != 20*time.Second {
		t.Fatalf("estimate moved to %s on a poll that only bounds it", d)
	}
	p.learn("qmclone", 20*time.Second, 22500*time.Millisecond) // the first poll came too early
	if d := p.first("qmclone"); d != 22500*time.Millisecond {
		t.Fatalf("after a first poll too early, first poll %s, want the stop time 22.5s (one poll next time)", d)
	}
	if got := upidType("UPID:pve1:00001234:00ABCDEF:65F0A1B2:qmclone:9000:root@pam!ci:"); got != "qmclone" {
		t.Fatalf("upidType = %q", got)
	}
}
