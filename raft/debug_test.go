package raft

import (
	"os"
	"strconv"
	"testing"
)

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
