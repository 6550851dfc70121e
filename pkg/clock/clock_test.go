package clock_test

import (
	"testing"
	"time"

	"better-compute.io/compute/pkg/clock"
)

func TestFake(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c := clock.NewFake(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now = %v, want %v", got, start)
	}
	c.Advance(90 * time.Second)
	if got, want := c.Now(), start.Add(90*time.Second); !got.Equal(want) {
		t.Fatalf("after Advance: Now = %v, want %v", got, want)
	}
	select {
	case got := <-c.After(time.Minute):
		if want := start.Add(150 * time.Second); !got.Equal(want) || !c.Now().Equal(want) {
			t.Fatalf("After sent %v, Now = %v; want both %v", got, c.Now(), want)
		}
	default:
		t.Fatal("After did not fire at once")
	}
}

func TestReal(t *testing.T) {
	before := time.Now()
	if got := (clock.Real{}).Now(); got.Before(before) {
		t.Fatalf("Real.Now = %v, before %v", got, before)
	}
}

func TestShifted(t *testing.T) {
	var c clock.Shifted
	before := time.Now()
	if got := c.Now(); got.Before(before) || got.After(time.Now()) {
		t.Fatalf("unshifted Now = %v, want the wall time (%v)", got, before)
	}
	c.Advance(time.Hour)
	if got := c.Now(); got.Before(before.Add(time.Hour)) || got.After(time.Now().Add(time.Hour)) {
		t.Fatalf("after Advance(1h): Now = %v, want an hour past the wall time", got)
	}
}
