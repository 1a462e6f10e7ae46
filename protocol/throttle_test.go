package protocol

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestThrottleMutesConnection (KIP-219): a throttled response is written at
// once and the connection's next request is handled only after the
// throttle time; other connections are not held back.
func TestThrottleMutesConnection(t *testing.T) {
	const throttle = 300 * time.Millisecond
	var handled [3]atomic.Int64
	hook := func(ctx context.Context, req *Request) (Response, error, bool) {
		if _, ok := req.Msg.(*kmsg.MetadataRequest); ok && req.CorrelationID <= 3 {
			handled[req.CorrelationID-1].Store(time.Now().UnixNano())
			if req.CorrelationID == 1 {
				resp := metaResp(req.Version)
				return Response{Msg: resp, Throttle: throttle}, nil, true
			}
		}
		return Response{}, nil, false
	}
	addr, _ := startServer(t, nil, hook)
	a := dialRaw(t, addr)
	a.write(append(reqFrame(kmsg.NewPtrMetadataRequest(), 1, 1), reqFrame(kmsg.NewPtrMetadataRequest(), 1, 2)...))
	start := time.Now()
	if corr := a.readResp(3, metaResp(1)); corr != 1 {
		t.Fatalf("corr %d", corr)
	}
	if d := time.Since(start); d >= throttle {
		t.Fatalf("throttled response took %v: it must be sent at once", d)
	}
	// Another connection is served meanwhile.
	b := dialRaw(t, addr)
	b.write(reqFrame(kmsg.NewPtrMetadataRequest(), 1, 3))
	if corr := b.readResp(3, metaResp(1)); corr != 3 {
		t.Fatalf("corr %d", corr)
	}
	if corr := a.readResp(3, metaResp(1)); corr != 2 {
		t.Fatalf("corr %d", corr)
	}
	if gap := time.Duration(handled[1].Load() - handled[0].Load()); gap < throttle {
		t.Fatalf("second request handled %v after the throttled one, want >= %v", gap, throttle)
	}
	if handled[2].Load() > handled[1].Load() {
		t.Fatal("the other connection waited for the throttle")
	}
}

type delayErr time.Duration

func (d delayErr) Error() string             { return "throttled" }
func (d delayErr) CloseDelay() time.Duration { return time.Duration(d) }

// TestAdmit: a refused connection is closed (at once, or after the delay
// of a ConnThrottled), an admitted one is released when it closes.
func TestAdmit(t *testing.T) {
	var admitted atomic.Int32
	released := make(chan net.IP, 4)
	refuse := make(chan error, 4)
	s := &Server{
		Admit: func(ctx context.Context, listener string, ip net.IP) error {
			if listener != "PLAINTEXT" || ip == nil {
				t.Errorf("admit %q %v", listener, ip)
			}
			select {
			case err := <-refuse:
				return err
			default:
				admitted.Add(1)
				return nil
			}
		},
		Release: func(listener string, ip net.IP) { released <- ip },
	}
	addr, s := startServer(t, s, nil)
	a := dialRaw(t, addr)
	a.write(reqFrame(kmsg.NewPtrMetadataRequest(), 1, 1))
	a.readResp(3, metaResp(1))

	refuse <- errors.New("too many")
	b := dialRaw(t, addr)
	b.expectClosed()

	refuse <- delayErr(200 * time.Millisecond)
	start := time.Now()
	c := dialRaw(t, addr)
	c.expectClosed()
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("throttled connection closed after %v, want the 200ms delay", d)
	}
	a.nc.Close()
	select {
	case ip := <-released:
		if !ip.IsLoopback() {
			t.Fatalf("released %v", ip)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("admitted connection not released")
	}
	if admitted.Load() != 1 || len(released) != 0 {
		t.Fatalf("admitted %d, released %d more", admitted.Load(), len(released))
	}
	if s.CloseLeastRecent() {
		t.Fatal("closed a connection with none open")
	}
}
