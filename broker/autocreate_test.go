package broker

import (
	"slices"
	"testing"
)

// A topic whose auto-creation is in flight is not asked for again until the
// controller answered (AutoTopicCreationManager's inflightTopics).
func TestInflightTopicsDeduplicate(t *testing.T) {
	var f inflightTopics
	if got := f.claim([]string{"a", "b"}); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("first claim %v", got)
	}
	if got := f.claim([]string{"b", "c", "a"}); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("claim while a, b are in flight: %v", got)
	}
	f.release([]string{"a", "b"})
	if got := f.claim([]string{"a", "b", "c"}); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("claim after a, b were answered: %v", got)
	}
	// the caller's slice is never rewritten
	in := []string{"x", "c"}
	f.claim(in)
	if !slices.Equal(in, []string{"x", "c"}) {
		t.Fatalf("claim changed its argument: %v", in)
	}
}
