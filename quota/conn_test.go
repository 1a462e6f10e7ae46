package quota

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

func connCfg(mod func(*ConnConfig)) ConnConfig {
	c := ConnConfig{MaxConnections: noLimit, MaxPerIP: noLimit, MaxCreationRate: noLimit, Window: DefaultWindow,
		InterBrokerListener: "INTERNAL", Listeners: map[string]ListenerLimits{}}
	if mod != nil {
		mod(&c)
	}
	return c
}

var (
	ipA = net.ParseIP("10.0.0.1")
	ipB = net.ParseIP("10.0.0.2")
)

// TestPerIPLimit: the connection beyond max.connections.per.ip is refused
// at once; overrides win; a release frees the slot.
func TestPerIPLimit(t *testing.T) {
	c := newClock()
	q := NewConnectionQuotas(connCfg(func(cc *ConnConfig) {
		cc.MaxPerIP = 2
		cc.PerIPOverrides = map[string]int{ipB.String(): 0}
	}), c.now)
	q.AddListener("PLAINTEXT", nil)
	ctx := context.Background()
	for i := range 2 {
		if err := q.Admit(ctx, "PLAINTEXT", ipA); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	if err := q.Admit(ctx, "PLAINTEXT", ipA); !errors.Is(err, ErrTooManyConnections) {
		t.Fatalf("third connection: %v", err)
	}
	if err := q.Admit(ctx, "PLAINTEXT", ipB); !errors.Is(err, ErrTooManyConnections) {
		t.Fatalf("override 0: %v", err)
	}
	if q.Count(ipA) != 2 {
		t.Fatalf("count %d", q.Count(ipA))
	}
	q.Release("PLAINTEXT", ipA)
	if err := q.Admit(ctx, "PLAINTEXT", ipA); err != nil {
		t.Fatalf("after release: %v", err)
	}
}

// TestIPConnectionRate: an ip's connection_creation_rate throttles the
// connection beyond it (closed after the throttle time), without counting it.
func TestIPConnectionRate(t *testing.T) {
	c := newClock()
	q := NewConnectionQuotas(connCfg(nil), c.now)
	q.AddListener("PLAINTEXT", nil)
	q.SetIPRates(map[string]int{ipA.String(): 1}, -1)
	ctx := context.Background()
	// 10 connections in the padded 10 s window are 1/s.
	for i := range 10 {
		if err := q.Admit(ctx, "PLAINTEXT", ipA); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	var te *ThrottledError
	if err := q.Admit(ctx, "PLAINTEXT", ipA); !errors.As(err, &te) || te.Delay != time.Second {
		// (11-1)/1 * 10 s, bounded by one window.
		t.Fatalf("11th connection: %v", err)
	}
	if q.Count(ipA) != 10 {
		t.Fatalf("throttled connection counted: %d", q.Count(ipA))
	}
	if err := q.Admit(ctx, "PLAINTEXT", ipB); err != nil {
		t.Fatalf("other ip: %v", err)
	}
	q.SetIPRates(nil, -1)
	if err := q.Admit(ctx, "PLAINTEXT", ipA); err != nil {
		t.Fatalf("quota removed: %v", err)
	}
}

// TestMaxConnectionsBlocksAccept: at max.connections the acceptor waits
// for a slot; the protected inter-broker listener does not, and takes a
// connection from another listener instead.
func TestMaxConnectionsBlocksAccept(t *testing.T) {
	c := newClock()
	q := NewConnectionQuotas(connCfg(func(cc *ConnConfig) { cc.MaxConnections = 1 }), c.now)
	closed := make(chan struct{}, 4)
	q.AddListener("PLAINTEXT", func() bool { closed <- struct{}{}; q.Release("PLAINTEXT", ipA); return true })
	q.AddListener("INTERNAL", nil)
	ctx := context.Background()
	if err := q.Admit(ctx, "PLAINTEXT", ipA); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- q.Admit(ctx, "PLAINTEXT", ipB) }()
	select {
	case err := <-done:
		t.Fatalf("second connection admitted over max.connections: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	// The inter-broker listener is protected: admitted at once, and the
	// broker closes a PLAINTEXT connection to get back under the limit.
	if err := q.Admit(ctx, "INTERNAL", ipB); err != nil {
		t.Fatal(err)
	}
	q.EnforceMax()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("no PLAINTEXT connection closed")
	}
	// The waiting PLAINTEXT accept stays blocked (still 1 open: INTERNAL);
	// releasing INTERNAL's frees the slot.
	q.Release("INTERNAL", ipB)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiting accept not released")
	}
	// A cancelled wait returns the context's error.
	cctx, cancel := context.WithCancel(ctx)
	go func() { done <- q.Admit(cctx, "PLAINTEXT", ipA) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
}

// TestListenerMaxConnections: listener.name.<l>.max.connections blocks
// that listener only.
func TestListenerMaxConnections(t *testing.T) {
	c := newClock()
	q := NewConnectionQuotas(connCfg(func(cc *ConnConfig) {
		cc.Listeners["EXTERNAL"] = ListenerLimits{MaxConnections: 1}
	}), c.now)
	q.AddListener("EXTERNAL", nil)
	q.AddListener("PLAINTEXT", nil)
	ctx := context.Background()
	if err := q.Admit(ctx, "EXTERNAL", ipA); err != nil {
		t.Fatal(err)
	}
	if err := q.Admit(ctx, "PLAINTEXT", ipA); err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := q.Admit(tctx, "EXTERNAL", ipA); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second EXTERNAL connection: %v", err)
	}
}

// TestSetBrokerLimits: max.connections.per.ip and max.connections changed
// at run time apply to the next connection; a connection waiting for a
// broker-wide slot is admitted when the limit rises.
func TestSetBrokerLimits(t *testing.T) {
	c := newClock()
	q := NewConnectionQuotas(connCfg(func(cc *ConnConfig) { cc.MaxPerIP = 1 }), c.now)
	q.AddListener("PLAINTEXT", nil)
	ctx := context.Background()
	if err := q.Admit(ctx, "PLAINTEXT", ipA); err != nil {
		t.Fatal(err)
	}
	if err := q.Admit(ctx, "PLAINTEXT", ipA); !errors.Is(err, ErrTooManyConnections) {
		t.Fatalf("second connection at max.connections.per.ip=1: %v", err)
	}
	q.SetBrokerLimits(0, 0, 5, map[string]int{ipB.String(): 0})
	if err := q.Admit(ctx, "PLAINTEXT", ipB); !errors.Is(err, ErrTooManyConnections) {
		t.Fatalf("connection of an IP overridden to 0: %v", err)
	}
	q.SetBrokerLimits(1, 0, 5, nil)
	admitted := make(chan error, 1)
	go func() { admitted <- q.Admit(ctx, "PLAINTEXT", ipA) }() // waits: max.connections=1 is taken
	select {
	case err := <-admitted:
		t.Fatalf("admitted over max.connections=1: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	q.SetBrokerLimits(0, 0, 5, nil)
	if err := <-admitted; err != nil {
		t.Fatalf("waiting connection after max.connections was lifted: %v", err)
	}
	if n := q.Count(ipA); n != 2 {
		t.Fatalf("%d connections of %v, want 2", n, ipA)
	}
}
