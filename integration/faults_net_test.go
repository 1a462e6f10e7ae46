//go:build integration

package integration

// The fault suite's network: one network namespace per node, each with a veth
// pair whose host end is a port of one bridge, so that every node has its
// own address (198.18.<subnet>.<id>, the benchmarking range of RFC 2544,
// never routed anywhere) and the test process, in the host namespace,
// reaches all of them through the bridge's address (.254). A partition is a
// set of iptables DROP rules inside the namespaces of the nodes it cuts
// (INPUT and OUTPUT, matched on the peer's address), so the test's own
// clients keep reaching every node; healing flushes them.
//
//	host ns: test process ── kgofbrNNN (198.18.S.254/24)
//	                              │ │ │
//	                 veth ────────┘ │ └──────── veth
//	      ns kgof-NNN-1 (.1)   ns kgof-NNN-2 (.2)   ns kgof-NNN-3 (.3) ...
//
// Needs root, ip (iproute2) and iptables (scripts/install-faults.sh).

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

// faultNet is the bridge and the namespaces of one cluster.
type faultNet struct {
	t      testing.TB
	tag    string // unique per test process and cluster: names start with it
	subnet int    // S in 198.18.S.0/24
	bridge string
	n      int

	mu    sync.Mutex
	rules map[int32][]string // node -> iptables rule specs in place (for Heal)
}

var netSeq struct {
	sync.Mutex
	n int
}

// netnsUnavailable says why network namespaces cannot be used here ("" when
// they can): not root, no ip, no iptables, or the kernel refuses.
func netnsUnavailable() string {
	if os.Getenv("KGO_FAULT_NETNS") == "0" {
		return "KGO_FAULT_NETNS=0 turns network namespaces off"
	}
	if os.Geteuid() != 0 {
		return fmt.Sprintf("network faults need root (euid %d) for ip netns and iptables", os.Geteuid())
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return "network faults need ip (iproute2): " + err.Error()
	}
	if iptablesPath() == "" {
		return "network faults need iptables (not on PATH nor /usr/sbin/iptables): run scripts/install-faults.sh"
	}
	name := fmt.Sprintf("kgof-probe-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		return fmt.Sprintf("ip netns add failed: %v: %s", err, strings.TrimSpace(string(out)))
	}
	defer exec.Command("ip", "netns", "del", name).Run()
	if out, err := exec.Command("ip", "netns", "exec", name, iptablesPath(), "-w", "-S").CombinedOutput(); err != nil {
		return fmt.Sprintf("iptables in a network namespace failed: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return ""
}

func iptablesPath() string {
	if p, err := exec.LookPath("iptables"); err == nil {
		return p
	}
	if fileExists("/usr/sbin/iptables") {
		return "/usr/sbin/iptables"
	}
	return ""
}

// newFaultNet makes the bridge and n namespaces (node ids 1..n), removed at
// the end of the test.
func newFaultNet(t testing.TB, n int) *faultNet {
	t.Helper()
	netSeq.Lock()
	netSeq.n++
	seq := netSeq.n
	netSeq.Unlock()
	f := &faultNet{t: t, n: n, rules: map[int32][]string{}}
	f.tag = fmt.Sprintf("kgof%d%c", os.Getpid()%100000, 'a'+rune(seq%26))
	f.bridge = f.tag + "br"
	// A /24 no other interface on the host has.
	used, _ := exec.Command("ip", "-4", "-o", "addr", "show").Output()
	for s := (os.Getpid() + seq) % 250; ; s = (s + 1) % 250 {
		if !strings.Contains(string(used), fmt.Sprintf(" 198.18.%d.", s)) {
			f.subnet = s
			break
		}
	}
	t.Cleanup(f.close)
	f.must("ip", "link", "add", f.bridge, "type", "bridge")
	f.must("ip", "addr", "add", fmt.Sprintf("198.18.%d.254/24", f.subnet), "dev", f.bridge)
	f.must("ip", "link", "set", f.bridge, "up")
	for id := int32(1); id <= int32(n); id++ {
		ns, host, peer := f.ns(id), f.tag+"h"+fmt.Sprint(id), f.tag+"n"+fmt.Sprint(id)
		f.must("ip", "netns", "add", ns)
		f.must("ip", "link", "add", host, "type", "veth", "peer", "name", peer, "netns", ns)
		f.must("ip", "link", "set", host, "master", f.bridge)
		f.must("ip", "link", "set", host, "up")
		f.must("ip", "-n", ns, "addr", "add", f.IP(id)+"/24", "dev", peer)
		f.must("ip", "-n", ns, "link", "set", peer, "up")
		f.must("ip", "-n", ns, "link", "set", "lo", "up")
	}
	return f
}

func (f *faultNet) ns(id int32) string { return fmt.Sprintf("%s-%d", f.tag, id) }

// IP is node id's address.
func (f *faultNet) IP(id int32) string { return fmt.Sprintf("198.18.%d.%d", f.subnet, id) }

// Placement is a ClusterOptions.Placement: node id on its namespace's address,
// started through ip netns exec.
func (f *faultNet) Placement(id int32) (string, []string) {
	return f.IP(id), []string{"ip", "netns", "exec", f.ns(id)}
}

func (f *faultNet) must(args ...string) {
	f.t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		f.t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// iptables runs iptables -w args in node id's namespace.
func (f *faultNet) iptables(id int32, args ...string) error {
	cmd := exec.Command("ip", append([]string{"netns", "exec", f.ns(id), iptablesPath(), "-w"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("iptables %s in %s: %v: %s", strings.Join(args, " "), f.ns(id), err, out)
	}
	return nil
}

// apply adds rules (iptables-restore lines such as "-A OUTPUT -d ip/32 -j
// DROP") in each node's namespace, one iptables-restore --noflush per node
// (atomic within a node), the nodes in id order.
func (f *faultNet) apply(rules map[int32][]string) {
	f.t.Helper()
	ids := make([]int32, 0, len(rules))
	for id := range rules {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		in := "*filter\n" + strings.Join(rules[id], "\n") + "\nCOMMIT\n"
		cmd := exec.Command("ip", "netns", "exec", f.ns(id), iptablesPath()+"-restore", "-w", "--noflush")
		cmd.Stdin = strings.NewReader(in)
		if out, err := cmd.CombinedOutput(); err != nil {
			f.t.Fatalf("iptables-restore in %s: %v: %s\n%s", f.ns(id), err, out, in)
		}
		f.mu.Lock()
		f.rules[id] = append(f.rules[id], rules[id]...)
		f.mu.Unlock()
	}
}

func (f *faultNet) dropRule(chain string, peer int32) string {
	dir := "-s"
	if chain == "OUTPUT" {
		dir = "-d"
	}
	return fmt.Sprintf("-A %s %s %s/32 -j DROP", chain, dir, f.IP(peer))
}

// Partition cuts every node of a from every node of b, both ways. The
// rules of a's nodes go in first: a single node in a is cut off as soon as
// its own rules are in place.
func (f *faultNet) Partition(a, b []int32) {
	f.t.Helper()
	first, second := map[int32][]string{}, map[int32][]string{}
	for _, x := range a {
		for _, y := range b {
			first[x] = append(first[x], f.dropRule("OUTPUT", y), f.dropRule("INPUT", y))
			second[y] = append(second[y], f.dropRule("OUTPUT", x), f.dropRule("INPUT", x))
		}
	}
	f.apply(first)
	f.apply(second)
}

// DropOneWay loses every packet from node `from` to the nodes in to (the
// other direction still flows), dropped as it leaves from.
func (f *faultNet) DropOneWay(from int32, to []int32) {
	f.t.Helper()
	rules := map[int32][]string{}
	for _, y := range to {
		rules[from] = append(rules[from], f.dropRule("OUTPUT", y))
	}
	f.apply(rules)
}

// Heal removes every rule.
func (f *faultNet) Heal() {
	f.t.Helper()
	f.mu.Lock()
	ids := make([]int32, 0, len(f.rules))
	for id := range f.rules {
		ids = append(ids, id)
	}
	f.rules = map[int32][]string{}
	f.mu.Unlock()
	var errs []error
	for _, id := range ids {
		errs = append(errs, f.iptables(id, "-F", "INPUT"), f.iptables(id, "-F", "OUTPUT"))
	}
	if err := errors.Join(errs...); err != nil {
		f.t.Error(err)
	}
}

// close removes the namespaces (their veth ends go with them) and the
// bridge. The nodes are killed first by their own cleanups (registered
// after this one, so run before it).
func (f *faultNet) close() {
	for id := int32(1); id <= int32(f.n); id++ {
		exec.Command("ip", "netns", "del", f.ns(id)).Run()
		exec.Command("ip", "link", "del", f.tag+"h"+fmt.Sprint(id)).Run()
	}
	exec.Command("ip", "link", "del", f.bridge).Run()
}
