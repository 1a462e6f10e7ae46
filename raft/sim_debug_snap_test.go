package raft

import (
	"os"
	"strconv"
	"testing"
)

// TestDebugSimSnapshots replays one 5-voter snapshot simulation seed with a
// full trace: SIMSNAPDEBUG=<seed> go test -run TestDebugSimSnapshots ./raft
func TestDebugSimSnapshots(t *testing.T) {
	if os.Getenv("SIMSNAPDEBUG") == "" {
		t.Skip()
	}
	seed, _ := strconv.Atoi(os.Getenv("SIMSNAPDEBUG"))
	var lines []string
	defer func() {
		for _, l := range lines {
			t.Log(l)
		}
	}()
	simulateOpts(t, int64(seed), []int32{1, 2, 3, 4, 5}, []int32{-1}, simOptions{faults: true, snapshots: true}, 20000, func(s string) {
		lines = append(lines, s)
	})
}
