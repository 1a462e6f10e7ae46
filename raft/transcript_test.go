package raft

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata transcripts with the actual output")

// Transcript tests: testdata/*.txt hold scenarios in the style of etcd-io/raft's
// datadriven files. Each command is followed by "----" and its expected output,
// then a blank line. Commands:
//
//	add-nodes voters=1,2,3 [observers=4] [seed=N] [chunk=BYTES] [dynamic] [endpoints] [autojoin]
//	                       chunk: FetchSnapshot MaxBytes; dynamic: kraft.version 1 with
//	                       the voters in a bootstrap checkpoint (--initial-controllers);
//	                       endpoints: static voters with endpoints (UpdateRaftVoter);
//	                       autojoin: controller.quorum.auto.join.enable
//	add-voter ID VOTER [noack]   AddRaftVoter of VOTER's current key sent to ID
//	remove-voter ID VOTER[:dN]   RemoveRaftVoter of VOTER (its disk N, default the current)
//	upgrade ID             kafka-features.sh upgrade --feature kraft.version=1 on ID
//	voters ID...           the voter set and kraft.version each node sees
//	replace-disk ID        lose ID's whole state; it returns with a new directory id
//	move ID PORT           restart ID with another CONTROLLER port
//	campaign ID            fire ID's election (or fetch) timer
//	expire ID              fire every timer of ID (fetch, election, check-quorum)
//	deliver [from=ID] [to=ID] [type=Fetch]  deliver matching messages until none is left
//	drop [from=ID] [to=ID]                  discard matching queued messages
//	stabilize              deliver everything until the network is quiet
//	propose ID rec...      append one batch on ID
//	tick MS                advance the clock of every node by MS
//	run MS                 advance the clock in 10ms steps, delivering messages;
//	                       prints only state changes
//	isolate ID / heal      cut ID from everyone / restore every link
//	crash ID / restart ID  lose in-memory state / recover from quorum-state + log
//	status                 one line per node
//	log ID...              the log of each node (snapshot@N: its log starts after a snapshot)
//	snapshot ID [keep]     snapshot ID's state at its high watermark and delete the
//	                       log before it (keep: leave the log alone)
func TestTranscripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no transcripts")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runTranscript(t, f) })
	}
}

func runTranscript(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out strings.Builder
	var h *harness
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			out.WriteString(line + "\n")
			continue
		}
		cmd := line
		i++
		if i >= len(lines) || lines[i] != "----" {
			t.Fatalf("%s:%d: command without ----", path, i)
		}
		i++
		var want []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			want = append(want, lines[i])
		}
		got := runCommand(t, &h, cmd)
		out.WriteString(cmd + "\n----\n")
		for _, g := range got {
			out.WriteString(g + "\n")
		}
		if !*rewrite && strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: %s\nwant:\n%s\ngot:\n%s", path, cmd, strings.Join(want, "\n"), strings.Join(got, "\n"))
		}
		if i < len(lines) {
			out.WriteString("\n")
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func parseIDs(s string) []int32 {
	var ids []int32
	for _, f := range strings.Split(s, ",") {
		if f == "" {
			continue
		}
		n, _ := strconv.Atoi(f)
		ids = append(ids, int32(n))
	}
	return ids
}

func runCommand(t *testing.T, hp **harness, line string) []string {
	f := strings.Fields(line)
	args := map[string]string{}
	var pos []string
	for _, a := range f[1:] {
		if k, v, ok := strings.Cut(a, "="); ok {
			args[k] = v
		} else {
			pos = append(pos, a)
		}
	}
	id := func(i int) int32 {
		n, err := strconv.Atoi(pos[i])
		if err != nil {
			t.Fatalf("%s: bad id", line)
		}
		return int32(n)
	}
	var out []string
	h := *hp
	if h != nil {
		h.trace = func(s string) { out = append(out, s) }
	}
	match := func(m Message) bool {
		if v, ok := args["from"]; ok && fmt.Sprint(m.From) != v {
			return false
		}
		if v, ok := args["to"]; ok && fmt.Sprint(m.To) != v {
			return false
		}
		if v, ok := args["type"]; ok && m.Type.String() != v {
			return false
		}
		return true
	}
	switch f[0] {
	case "add-nodes":
		seed, _ := strconv.Atoi(args["seed"])
		var o harnessOpts
		for _, p := range pos {
			switch p {
			case "dynamic":
				o.dynamic = true
			case "endpoints":
				o.endpoints = true
			case "autojoin":
				o.autoJoin = true
			}
		}
		h = newHarnessOpts(t, int64(seed), o, parseIDs(args["voters"]), parseIDs(args["observers"])...)
		if c, err := strconv.Atoi(args["chunk"]); err == nil {
			h.snapChunk = int32(c)
			for _, id := range h.ids() {
				h.nodes[id].core.cfg.FetchSnapshotMaxBytes = int32(c)
			}
		}
		*hp = h
		for _, id := range h.ids() {
			out = append(out, h.statusLine(id))
		}
	case "campaign", "expire":
		n := h.nodes[id(0)]
		c := n.core
		c.electionDeadline = h.now
		if f[0] == "expire" || c.role == RoleFollower {
			c.fetchDeadline = h.now
			c.checkQuorum = h.now
		}
		h.trace = func(s string) { out = append(out, s) }
		h.tick(n.id)
		out = append(out, h.statusLine(n.id))
	case "deliver":
		for {
			k := -1
			for i, hm := range h.queue {
				if match(hm.m) {
					k = i
					break
				}
			}
			if k < 0 {
				break
			}
			hm := h.queue[k]
			h.queue = append(h.queue[:k], h.queue[k+1:]...)
			if !h.deliver(hm) {
				out = append(out, fmt.Sprintf("dropped %v", hm.m))
			}
		}
	case "drop":
		kept := h.queue[:0]
		for _, hm := range h.queue {
			if match(hm.m) {
				out = append(out, fmt.Sprintf("dropped %v", hm.m))
			} else {
				kept = append(kept, hm)
			}
		}
		h.queue = kept
	case "stabilize":
		for len(h.queue) > 0 {
			hm := h.queue[0]
			h.queue = h.queue[1:]
			if !h.deliver(hm) {
				out = append(out, fmt.Sprintf("dropped %v", hm.m))
			}
		}
		for _, id := range h.ids() {
			out = append(out, h.statusLine(id))
		}
	case "propose":
		n := h.nodes[id(0)]
		var recs [][]byte
		for _, r := range pos[1:] {
			recs = append(recs, []byte(r))
		}
		base, last, err := n.core.Propose(recs)
		if err != nil {
			out = append(out, "error: "+err.Error())
			break
		}
		h.process(n)
		out = append(out, fmt.Sprintf("appended [%d,%d]", base, last))
	case "tick":
		ms, _ := strconv.Atoi(pos[0])
		h.now += int64(ms)
		for _, id := range h.ids() {
			h.tick(id)
		}
	case "run":
		// advance the clock in 10ms steps, delivering messages and firing
		// timers as they come; only state changes are printed
		ms, _ := strconv.Atoi(pos[0])
		h.trace = func(s string) {
			if strings.HasPrefix(s, "node ") {
				out = append(out, fmt.Sprintf("t=%d %s", h.now, s))
			}
		}
		for end := h.now + int64(ms); h.now < end; {
			h.now += 10
			for len(h.queue) > 0 {
				hm := h.queue[0]
				h.queue = h.queue[1:]
				h.deliver(hm)
			}
			for _, id := range h.ids() {
				h.tick(id)
			}
		}
	case "add-voter":
		v := h.nodes[id(1)].voter()
		h.admin(id(0), Message{Type: MsgAddVoter, Voter: &v, AckWhenCommitted: !(len(pos) > 2 && pos[2] == "noack"), TimeoutMs: 30000})
		out = append(out, fmt.Sprintf("AddRaftVoter %s sent to %d", v.Key, id(0)))
	case "remove-voter":
		vid, disk, _ := strings.Cut(pos[1], ":d")
		n, _ := strconv.Atoi(vid)
		key := h.nodes[int32(n)].key()
		if disk != "" {
			d, _ := strconv.Atoi(disk)
			key.DirectoryID = dirOf(int32(n), d)
		}
		h.admin(id(0), Message{Type: MsgRemoveVoter, Voter: &Voter{Key: key}})
		out = append(out, fmt.Sprintf("RemoveRaftVoter %s sent to %d", key, id(0)))
	case "upgrade":
		n := h.nodes[id(0)]
		h.trace = func(s string) { out = append(out, s) }
		if err := n.core.UpgradeKRaftVersion(n.core.Epoch(), 1, false); err != nil {
			out = append(out, "error: "+err.Error())
		}
		h.process(n)
	case "voters":
		for i := range pos {
			n := h.nodes[id(i)]
			out = append(out, fmt.Sprintf("%d: kraft=%d voters=%s", n.id, n.core.KRaftVersion(), votersString(n.core.Voters())))
		}
	case "replace-disk":
		h.replaceDisk(id(0))
		out = append(out, h.statusLine(id(0)))
	case "move":
		port, _ := strconv.Atoi(pos[1])
		h.crash(id(0))
		h.nodes[id(0)].port = uint16(port)
		h.restart(id(0))
		out = append(out, h.statusLine(id(0)))
	case "isolate":
		h.isolate(id(0))
	case "heal":
		h.heal()
	case "crash":
		h.crash(id(0))
		out = append(out, h.statusLine(id(0)))
	case "restart":
		h.restart(id(0))
		out = append(out, h.statusLine(id(0)))
	case "snapshot":
		h.trace = func(s string) { out = append(out, s) }
		truncate := !(len(pos) > 1 && pos[1] == "keep")
		if _, ok := h.snapshotAt(id(0), truncate); !ok {
			out = append(out, "no new snapshot")
		}
		out = append(out, h.statusLine(id(0)))
	case "status":
		for _, id := range h.ids() {
			out = append(out, h.statusLine(id))
		}
	case "log":
		for i := range pos {
			n := h.nodes[id(i)]
			var es []string
			if n.logStart > 0 {
				es = append(es, fmt.Sprintf("snapshot@%d", n.logStart))
			}
			for _, e := range n.log {
				es = append(es, entryString(e))
			}
			out = append(out, fmt.Sprintf("%d: %s", n.id, strings.Join(es, " | ")))
		}
	default:
		t.Fatalf("unknown command %q", line)
	}
	if len(out) == 0 {
		out = append(out, "ok")
	}
	return out
}
