package raft

import (
	"os"
	"strconv"
	"testing"
)

// TestDebugSim replays one 3-voter simulation seed with a full trace:
// SIMDEBUG=<seed> go test -run TestDebugSim ./raft
func TestDebugSim(t *testing.T) {
	if os.Getenv("SIMDEBUG") == "" {
		t.Skip()
	}
	seed, _ := strconv.Atoi(os.Getenv("SIMDEBUG"))
	var lines []string
	defer func() {
		for _, l := range lines {
			t.Log(l)
		}
	}()
	simulateTrace(t, int64(seed), []int32{1, 2, 3}, []int32{4}, true, 20000, func(s string) {
		lines = append(lines, s)
	})
}
