package main

// Connections mode (BENCH_CONNS=<n>, issue 16): one node of each broker,
// one after the other, with n idle client connections. Each connection
// sends an ApiVersions request (so the broker has read a request and set up
// whatever it keeps per connection) and then stays open and silent. Measured:
// the broker's RSS and open file descriptors before and with the
// connections, RSS per connection, idle CPU with them over 30 s, and whether
// a new client is still served (a Metadata round trip) while they are open.
// Writes conns-latest.{md,json} in the results dir. The bench process holds
// the n sockets itself: the hard RLIMIT_NOFILE must exceed n for both.

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

type connsResult struct {
	Conns         int
	Opened        int     // connections that got their ApiVersions answer
	OpenSeconds   float64 // to open them all
	BaseRSS       int64   // bytes, idle before the connections
	ConnRSS       int64   // bytes, idle with them
	BaseFDs       int
	ConnFDs       int
	IdleCPU       float64 // CPU seconds in 30 s with the connections open
	MetadataMs    float64 // a new client's Metadata round trip with them open
	ClosedByPeer  int     // connections the broker closed while idle
	Err           string
	IdleSeconds   float64
	OpenFailedErr string
}

func (r connsResult) RSSPerConn() float64 {
	if r.Opened == 0 {
		return 0
	}
	return float64(r.ConnRSS-r.BaseRSS) / float64(r.Opened)
}

// apiVersionsFrame is a whole ApiVersions v3 request: size, header v2
// (key, version, correlation id, client id, no tags), body.
func apiVersionsFrame(corr int32) []byte {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName = "kgo-bench"
	req.ClientSoftwareVersion = "1"
	body := req.AppendTo(nil)
	clientID := "bench-idle"
	hdr := make([]byte, 0, 16+len(clientID))
	hdr = binary.BigEndian.AppendUint16(hdr, uint16(req.Key()))
	hdr = binary.BigEndian.AppendUint16(hdr, uint16(req.Version))
	hdr = binary.BigEndian.AppendUint32(hdr, uint32(corr))
	hdr = binary.BigEndian.AppendUint16(hdr, uint16(len(clientID)))
	hdr = append(hdr, clientID...)
	hdr = append(hdr, 0) // no tagged fields
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(hdr)+len(body)))
	return append(append(frame, hdr...), body...)
}

// openIdle opens one connection and reads its ApiVersions answer.
func openIdle(addr string, corr int32) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write(apiVersionsFrame(corr)); err != nil {
		c.Close()
		return nil, err
	}
	r := bufio.NewReaderSize(c, 64)
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		c.Close()
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 1<<20 {
		c.Close()
		return nil, fmt.Errorf("ApiVersions answer of %d bytes", n)
	}
	if _, err := io.CopyN(io.Discard, r, int64(n)); err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

func openFDs(pid int) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(ents)
}

func runConnsOne(ctx context.Context, s settings, k kind, dir string, n int) (r connsResult) {
	r.Conns = n
	b, err := newBroker(s, k, dir)
	if err == nil {
		err = b.format(ctx, s)
	}
	if err == nil {
		err = b.start(ctx, s)
	}
	defer b.stop()
	if err != nil {
		r.Err = err.Error()
		return r
	}
	r.BaseRSS, r.BaseFDs = b.IdleRSS, openFDs(b.Pid())

	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	t0 := time.Now()
	// a few dialers at a time: a SYN backlog of thousands at once measures
	// the accept queue, not what a connection costs
	const dialers = 16
	type res struct {
		c   net.Conn
		err error
	}
	out := make(chan res, dialers)
	next := make(chan int32)
	go func() {
		defer close(next)
		for i := range n {
			select {
			case next <- int32(i):
			case <-ctx.Done():
				return
			}
		}
	}()
	for range dialers {
		go func() {
			for i := range next {
				c, err := openIdle(b.Addr, i)
				out <- res{c, err}
			}
		}()
	}
	for range n {
		x := <-out
		if x.err != nil {
			if r.OpenFailedErr == "" {
				r.OpenFailedErr = x.err.Error()
			}
			continue
		}
		conns = append(conns, x.c)
	}
	r.Opened = len(conns)
	r.OpenSeconds = time.Since(t0).Seconds()

	// settle, then 30 s idle with every connection open
	time.Sleep(5 * time.Second)
	before, err := readProc(b.Pid())
	if err != nil {
		r.Err = err.Error()
		return r
	}
	r.IdleSeconds = 30
	time.Sleep(30 * time.Second)
	after, err := readProc(b.Pid())
	if err != nil {
		r.Err = err.Error()
		return r
	}
	r.IdleCPU, r.ConnRSS, r.ConnFDs = after.CPU-before.CPU, after.RSS, openFDs(b.Pid())
	t1 := time.Now()
	if err := metadataOK(b.Addr); err != nil {
		r.Err = "a new client with the connections open: " + err.Error()
	}
	r.MetadataMs = float64(time.Since(t1).Microseconds()) / 1000
	// connections the broker closed (connections.max.idle.ms is 10 min, so
	// none should be)
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
		var one [1]byte
		if _, err := c.Read(one[:]); err == io.EOF {
			r.ClosedByPeer++
		}
	}
	return r
}

func runConns(ctx context.Context, s settings, tmp string, n int) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < uint64(n)+1000 {
		return fmt.Errorf("BENCH_CONNS=%d: RLIMIT_NOFILE is %d (hard %d); raise it (ulimit -n) above the connection count", n, lim.Cur, lim.Max)
	}
	res := map[kind]connsResult{}
	started := time.Now()
	load0 := loadAvg()
	for _, k := range []kind{kafka, kgo} {
		log.Printf("conns: %s with %d idle connections", k.Title(), n)
		r := runConnsOne(ctx, s, k, filepath.Join(tmp, "conns-"+string(k)), n)
		if r.Err != "" {
			log.Printf("conns: %s: %s", k.Title(), r.Err)
		} else {
			log.Printf("conns: %s: %d open in %.1f s, RSS %.0f -> %.0f MiB (%.1f KiB/connection), idle CPU %.2f s in 30 s",
				k.Title(), r.Opened, r.OpenSeconds, mib(r.BaseRSS), mib(r.ConnRSS), r.RSSPerConn()/1024, r.IdleCPU)
		}
		res[k] = r
		if !s.Keep {
			_ = os.RemoveAll(filepath.Join(tmp, "conns-"+string(k)))
		}
	}
	var w strings.Builder
	p := func(f string, a ...any) { fmt.Fprintf(&w, f, a...) }
	a, g := res[kafka], res[kgo]
	p("# Connections: %d idle client connections to one node\n\n", n)
	p("%s, load average %s at the start, %s at the end; Apache Kafka heap %s. `BENCH_CONNS=%d make bench`.\n\n",
		started.UTC().Format("2006-01-02 15:04 UTC"), load0, loadAvg(), s.KafkaHeap, n)
	if a.Err != "" || g.Err != "" {
		p("Errors: Apache Kafka: %s; kgo-broker: %s\n\n", orDash(a.Err), orDash(g.Err))
	}
	if a.OpenFailedErr != "" || g.OpenFailedErr != "" {
		p("Connections that failed to open: Apache Kafka: %s; kgo-broker: %s\n\n", orDash(a.OpenFailedErr), orDash(g.OpenFailedErr))
	}
	p("| Metric | Apache Kafka | kgo-broker | kgo/kafka |\n|---|--:|--:|--:|\n")
	row := func(name string, x, y float64) {
		p("| %s | %s | %s | %s |\n", name, fmtNum(x), fmtNum(y), fmtRatio(ratio(y, x)))
	}
	row("connections open (ApiVersions answered)", float64(a.Opened), float64(g.Opened))
	row("time to open them (16 at a time), s", a.OpenSeconds, g.OpenSeconds)
	row("idle RSS before, MiB", mib(a.BaseRSS), mib(g.BaseRSS))
	row("idle RSS with them, MiB", mib(a.ConnRSS), mib(g.ConnRSS))
	row("RSS per connection, KiB", a.RSSPerConn()/1024, g.RSSPerConn()/1024)
	row("open file descriptors with them", float64(a.ConnFDs), float64(g.ConnFDs))
	row("idle CPU with them, s per 30 s", a.IdleCPU, g.IdleCPU)
	row("a new client's Metadata round trip with them open, ms", a.MetadataMs, g.MetadataMs)
	row("connections closed by the broker while idle", float64(a.ClosedByPeer), float64(g.ClosedByPeer))
	p("\nRSS per connection is (RSS with the connections - RSS before) / connections. Kafka's RSS includes its JVM heap as far as it was touched.\n")
	if err := os.WriteFile(filepath.Join(s.OutDir, "conns-latest.md"), []byte(w.String()), 0o644); err != nil {
		return err
	}
	js, _ := json.MarshalIndent(map[string]any{"started": started, "connections": n, "results": res}, "", "  ")
	return os.WriteFile(filepath.Join(s.OutDir, "conns-latest.json"), js, 0o644)
}
