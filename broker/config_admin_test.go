package broker

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every copy of a (type, name) named twice is marked, and the same name
// under another type is not.
func TestRepeatedResources(t *testing.T) {
	rs := []struct {
		typ  kmsg.ConfigResourceType
		name string
	}{
		{kmsg.ConfigResourceTypeTopic, "a"},
		{kmsg.ConfigResourceTypeBroker, "a"},
		{kmsg.ConfigResourceTypeTopic, "b"},
		{kmsg.ConfigResourceTypeTopic, "a"},
	}
	got := repeatedResources(len(rs), func(i int) (kmsg.ConfigResourceType, string) { return rs[i].typ, rs[i].name })
	if want := []bool{true, false, false, true}; !slices.Equal(got, want) {
		t.Fatalf("repeatedResources = %v, want %v", got, want)
	}
}
