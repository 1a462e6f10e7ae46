package coordinator

import (
	"testing"
	"time"
)

func TestManualClockNext(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	c := NewManualClock(start)
	if _, ok := c.Next(); ok {
		t.Fatal("Next with no timer")
	}
	a := c.AfterFunc(3*time.Second, func() {})
	c.AfterFunc(5*time.Second, func() {})
	if next, ok := c.Next(); !ok || !next.Equal(start.Add(3*time.Second)) {
		t.Fatalf("Next = %v %v, want +3s", next, ok)
	}
	a.Stop()
	if next, ok := c.Next(); !ok || !next.Equal(start.Add(5*time.Second)) {
		t.Fatalf("Next after Stop = %v %v, want +5s", next, ok)
	}
	c.Advance(5 * time.Second)
	if _, ok := c.Next(); ok {
		t.Fatal("Next after every timer fired")
	}
}
