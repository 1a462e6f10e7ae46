package broker

import (
	"testing"
	"time"

	"go.uber.org/zap"
)

// A failed log dir that no answered heartbeat has carried within
// log.dir.failure.timeout.ms stops the broker
// (BrokerLifecycleManager.OfflineDirBrokerFailureEvent); one the controller
// was told about does not.
func TestLifecycleDirFailureTimeout(t *testing.T) {
	l := newLifecycle(nil, nil, time.Second, func() int64 { return 0 }, zap.NewNop())
	reported, unreported := [16]byte{1}, [16]byte{2}
	l.mu.Lock()
	l.mu.reported = map[[16]byte]bool{reported: true}
	l.mu.Unlock()
	fired := make(chan [16]byte, 2)
	l.dirFailed(reported, time.Millisecond, func() { fired <- reported })
	l.dirFailed(unreported, time.Millisecond, func() { fired <- unreported })
	select {
	case d := <-fired:
		if d != unreported {
			t.Fatalf("timeout fired for the reported dir %x", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no timeout for the unreported dir")
	}
	select {
	case d := <-fired:
		t.Fatalf("second timeout for %x", d)
	case <-time.After(50 * time.Millisecond):
	}
}
