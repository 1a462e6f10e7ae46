//go:build race

package lockrank

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The check's own bookkeeping must be invisible to the race detector: two
// goroutines taking two unrelated ranked locks do not synchronize, so a
// data race between them is still reported. (A shared lock inside the
// check would order them, hiding the race, and with it most races between
// goroutines that take any ranked lock.) The racy part runs in a child
// process, whose race report the parent looks for.
func TestRacesBetweenRankedLockersAreReported(t *testing.T) {
	if os.Getenv("LOCKRANK_RACY_CHILD") == "1" {
		racyLockers()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRacesBetweenRankedLockersAreReported$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LOCKRANK_RACY_CHILD=1")
	out, err := cmd.CombinedOutput()
	if !strings.Contains(string(out), "WARNING: DATA RACE") {
		t.Fatalf("the race between two goroutines taking unrelated ranked locks was not reported (err %v):\n%s", err, out)
	}
}

var racy int

func racyLockers() {
	var a, b Mutex
	a.SetRank(Partition)
	b.SetRank(Log)
	done := make(chan struct{})
	go func() {
		racy = 1 // unsynchronized write...
		a.Lock()
		a.Unlock()
		close(done)
	}()
	time.Sleep(50 * time.Millisecond) // after the writer, in time only
	b.Lock()
	b.Unlock()
	_ = racy // ...and read: a race
	<-done
}
