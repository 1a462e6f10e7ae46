//go:build linux

package protocol

import (
	"net"
	"testing"
	"time"
)

// TestSetListenBacklog: with nothing accepting, a listener whose backlog is
// 2 completes at most 3 handshakes (Linux queues backlog+1); the kernel
// drops the SYNs of the others, whose dials time out.
func TestSetListenBacklog(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := SetListenBacklog(ln, 2); err != nil {
		t.Fatal(err)
	}
	connected := 0
	for range 10 {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 300*time.Millisecond)
		if err != nil {
			continue
		}
		defer c.Close()
		connected++
	}
	if connected < 1 || connected > 3 {
		t.Fatalf("%d of 10 dials connected with a backlog of 2 and no accept", connected)
	}
	// The listener still accepts what was queued.
	if c, err := ln.Accept(); err != nil {
		t.Fatal(err)
	} else {
		c.Close()
	}
}
