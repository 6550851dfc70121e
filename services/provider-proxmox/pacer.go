package proxmox

import (
	"strings"
	"sync"
	"time"
)

// Bounds of the adaptive task poll (see taskPacer).
const (
	// firstTaskPoll is the first poll of a task type never seen to end,
	// and the smallest gap between two polls.
	firstTaskPoll = 250 * time.Millisecond
	// maxTaskPollGap is the largest gap between two polls of one task.
	maxTaskPollGap = 10 * time.Second
)

// taskPacer spaces the polls of task waits by how long each task type
// (qmclone, qmstart, resize, …) ran before on each node of one account's
// cluster (waits key it "<node>/<type>": nodes differ in storage and load),
// instead of polling every second: the first poll comes when a task of the
// type is expected to have ended (firstTaskPoll for a type not seen yet),
// and a task still running is polled again after an eighth of the time it
// has run (a task not seen before: after as long as it has run, doubling),
// between firstTaskPoll and maxTaskPollGap. Each wait teaches the type's
// duration: the midpoint between the last poll that saw the task running
// and the one that saw it stopped, the first time; the stop time after a
// first poll that came too early (see learn). So a clone of 20 s is
// polled about 8 times the first time, at most twice the second and once
// afterwards, where a 1 s poll costs 20 requests every time. It is safe for concurrent use.
type taskPacer struct {
	mu       sync.Mutex
	expected map[string]time.Duration
}

// first is the wait before the first poll of a task of typ.
func (p *taskPacer) first(typ string) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d, ok := p.expected[typ]; ok {
		return d
	}
	return firstTaskPoll
}

// next is the wait before polling again a task of typ that a poll found
// still running after elapsed.
func (p *taskPacer) next(typ string, elapsed time.Duration) time.Duration {
	p.mu.Lock()
	_, known := p.expected[typ]
	p.mu.Unlock()
	gap := elapsed
	if known {
		gap = elapsed / 8
	}
	return min(max(gap, firstTaskPoll), maxTaskPollGap)
}

// learn records that a task of typ was seen stopped after elapsed, having
// been seen running last after running (0: the first poll found it
// stopped, which says only that it ran at most elapsed). A type not seen
// before learns the midpoint of the two (its polls doubled, so the stop
// time may be twice too late). A known type whose first poll came too
// early learns elapsed: its later polls were an eighth of the time apart,
// so that is at most an eighth too late, and the next wait of the type
// polls once instead of twice again (the midpoint may still be short).
func (p *taskPacer) learn(typ string, running, elapsed time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.expected == nil {
		p.expected = map[string]time.Duration{}
	}
	prev, known := p.expected[typ]
	d := elapsed
	switch {
	case running > 0 && !known:
		d = running + (elapsed-running)/2
	case !known || running > 0:
	default:
		d = min(prev, elapsed)
	}
	p.expected[typ] = max(d, firstTaskPoll)
}

// upidType is the task type field of a UPID
// (UPID:{node}:{pid}:{pstart}:{starttime}:{type}:{id}:{user}:), "" when
// it has none.
func upidType(upid string) string {
	if parts := strings.Split(upid, ":"); len(parts) >= 9 {
		return parts[5]
	}
	return ""
}
