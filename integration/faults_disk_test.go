//go:build integration

package integration

// The fault suite's disk kinds, through the storage fault injection of
// kgo-broker's test binary (cmd/kgo-broker/diskfault_invariants.go, built
// by make build-invariants): each node gets KGO_TEST_DISK_FAULT_FILE, a
// control file the node polls every 20ms, and the suite writes the mode
// into it ("ok", "slow <d>[-<max>]", "fail"); the node's file system (under
// storage and raft) delays or fails the writes and syncs under its log dir.
//
//	slow-disk     a partition leader's disk takes 200-500ms per write and
//	              per sync for slowDiskHold (8s). Nothing fails, so nothing
//	              has to move, but the metadata log is on the same disk: its
//	              raft appends (writes and an fsync each) outlast the suite's
//	              1s controller.quorum.fetch.timeout.ms, the node keeps losing
//	              its raft leader, its heartbeats stop reaching the
//	              controller and it is usually fenced after the 3s session
//	              timeout, and leadership moves (Kafka's raft IO thread,
//	              which also fsyncs each append, would miss the same timer).
//	              Either way acks=all writes must go on or resume, with no
//	              loss; the node must not exit. Reported: resume (the first
//	              ack of a record enqueued after the fault on every partition
//	              the node led, often bounded by the producer's 7s request
//	              timeout on the slow leader), the acks and the longest gap
//	              between acks on those partitions during the hold, and any
//	              leadership change.
//	failing-disk  a partition leader's log dir fails: every write, sync,
//	              truncate, rename and remove under it returns EIO. With one
//	              log dir that also holds the metadata log, Kafka halts the
//	              broker (LogDirFailureChannel -> ReplicaManager.
//	              handleLogDirFailure: "Shutdown broker because the metadata
//	              log dir ... has failed", Exit.halt(1); a failed metadata log
//	              write halts it too, through the raft IO thread's fatal fault
//	              handler): the node must exit with status 1 by itself, the
//	              majority names new leaders, writes resume, and the node,
//	              restarted with a healthy disk, rejoins every ISR.
//
// Apache Kafka has no such seam: against the reference broker both kinds
// skip (even with KGO_REQUIRE_FAULTS), and against a kgo-broker binary
// built without -tags invariants they skip (fail with KGO_REQUIRE_FAULTS).

import (
	"debug/buildinfo"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"
)

const (
	diskFaultEnv = "KGO_TEST_DISK_FAULT_FILE"
	// diskFaultSettle is the node's control file poll interval, doubled: a
	// mode written now is in force after it.
	diskFaultSettle = 40 * time.Millisecond
	slowDiskMode    = "slow 200ms-500ms"
	slowDiskHold    = 8 * time.Second
)

// diskHookUnavailable says why the binary under test has no disk fault
// hook ("" when it has): it must be kgo-broker built with -tags invariants.
func diskHookUnavailable() string {
	bi, err := buildinfo.ReadFile(brokerBin)
	if err != nil {
		return fmt.Sprintf("the disk faults need kgo-broker built with -tags invariants (make build-invariants), and %s has no Go build info: %v", brokerBin, err)
	}
	for _, s := range bi.Settings {
		if s.Key == "-tags" && slices.Contains(strings.Split(s.Value, ","), "invariants") {
			return ""
		}
	}
	return fmt.Sprintf("%s was built without -tags invariants and has no disk fault hook: make build-invariants, KGO_BROKER_BIN=$PWD/bin/invariants/kgo-broker", brokerBin)
}

// setDisk writes node id's disk fault mode (atomically: temp file, rename).
func (e *faultEnv) setDisk(id int32, mode string) {
	e.t.Helper()
	path := e.diskCtl[id]
	if err := os.WriteFile(path+".tmp", []byte(mode+"\n"), 0o644); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		e.t.Fatal(err)
	}
}

func (e *faultEnv) slowDisk() runResult {
	v, parts := e.randomLeader()
	n := e.c.Node(v)
	before := e.states()
	r := runResult{what: fmt.Sprintf("slow node %d's disk (%s per write and sync) for %v (leader of %v)", v, strings.TrimPrefix(slowDiskMode, "slow "), slowDiskHold, parts),
		sameLeader: true}
	e.setDisk(v, slowDiskMode)
	time.Sleep(diskFaultSettle)
	t0 := time.Now()
	tg := faultTarget{parts: parts, majority: e.others(v)}
	e.measure(t0, tg, t0.Add(slowDiskHold), &r.m)
	if d := time.Until(t0.Add(slowDiskHold)); d > 0 {
		select {
		case <-n.Exited():
		case <-time.After(d):
		}
	}
	held := time.Now()
	acks, gap := e.w.ackGaps(parts, t0, held)
	resumedInHold := r.m.resumeOK
	e.setDisk(v, "ok")
	if isClosed(exitedChan(n)) {
		r.failed = fmt.Sprintf("node %d exited on a slow disk (%s): nothing failed, it must go on", v, exitDesc(n.exitErr()))
		n.Start()
		e.c.WaitNodeReady(n, readyTimeout())
	}
	e.measure(t0, tg, t0.Add(totalCap), &r.m)
	r.note = fmt.Sprintf("; during the %v hold %d acks on %v, longest gap between acks %v", held.Sub(t0).Round(time.Millisecond), acks, parts, gap.Round(time.Millisecond))
	if after := e.states(); len(after) == len(before) {
		var moved []string
		for _, p := range parts {
			if after[p].leader != before[p].leader || after[p].epoch != before[p].epoch {
				moved = append(moved, fmt.Sprintf("%d: leader %d epoch %d -> leader %d epoch %d", p, before[p].leader, before[p].epoch, after[p].leader, after[p].epoch))
			}
		}
		if len(moved) > 0 {
			r.note += "; leadership changed on " + strings.Join(moved, ", ")
		}
	}
	if !resumedInHold {
		r.note += "; writes stalled for the whole hold"
	}
	e.recoverAfter(&r, t0)
	return r
}

func (e *faultEnv) failingDisk() runResult {
	v, parts := e.randomLeader()
	n := e.c.Node(v)
	r := runResult{what: fmt.Sprintf("fail node %d's log dir with EIO (leader of %v)", v, parts)}
	set := time.Now()
	e.setDisk(v, "fail")
	// Writes and acks are timed from when the node surely has the mode.
	time.Sleep(diskFaultSettle)
	t0 := time.Now()
	select {
	case <-n.Exited():
		desc := exitDesc(n.exitErr())
		r.note = fmt.Sprintf("; node %d halted %v after its log dir failed (%s: %s)", v, time.Since(set).Round(time.Millisecond), desc, lastLogLine(n, "halting"))
		if desc != "exit code 1" {
			r.failed = fmt.Sprintf("node %d ended with %s after its log dir failed, want exit code 1 (Kafka's Exit.halt(1))", v, desc)
		}
	case <-time.After(holdCap):
		r.failed = fmt.Sprintf("node %d still runs %v after its only log dir (the metadata log dir) failed: Kafka halts the broker (ReplicaManager.handleLogDirFailure)", v, holdCap)
	}
	e.measure(t0, faultTarget{leaders: []int32{v}, parts: parts, majority: e.others(v)}, t0.Add(totalCap), &r.m)
	e.setDisk(v, "ok")
	n.Kill()
	n.Start()
	e.c.WaitNodeReady(n, readyTimeout())
	e.recoverAfter(&r, t0)
	return r
}

// lastLogLine is the last line of n's log (all its runs) containing s.
func lastLogLine(n *ClusterNode, s string) string {
	lines := strings.Split(n.Log(), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], s) {
			return strings.TrimSpace(lines[i])
		}
	}
	return "no " + s + " line in the log"
}

// ackGaps counts the acknowledgements at times in [from, to] on parts and
// returns the longest time any of those partitions went without one in
// that window (from the window's start to its first ack, between acks, and
// from its last ack to the window's end).
func (w *workload) ackGaps(parts []int32, from, to time.Time) (int, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	var worst time.Duration
	for _, p := range parts {
		var at []time.Time
		for _, s := range w.sent[p] {
			if s.acked && !s.ack.Before(from) && !s.ack.After(to) {
				at = append(at, s.ack)
			}
		}
		n += len(at)
		sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
		prev := from
		for _, a := range at {
			worst = max(worst, a.Sub(prev))
			prev = a
		}
		worst = max(worst, to.Sub(prev))
	}
	return n, worst
}
