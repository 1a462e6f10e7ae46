package raft

import (
	"os"
	"strings"
	"testing"
)

func TestDebugSim(t *testing.T) {
	if os.Getenv("SIMDEBUG") == "" {
		t.Skip()
	}
	var lines []string
	defer func() {
		for _, l := range lines[max(0, len(lines)-150):] {
			t.Log(l)
		}
	}()
	_ = strings.Join
	simulateTrace(t, 2, []int32{1, 2, 3}, []int32{4}, true, 20000, func(s string) {
		if strings.Contains(s, " 1->") || strings.Contains(s, "->1 ") || strings.Contains(s, "node 1") {
			lines = append(lines, s)
		}
	})
}
