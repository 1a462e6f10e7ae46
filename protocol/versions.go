package protocol

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// VersionTable tells the Server which API keys and versions it serves. A key
// the table does not know closes the connection (as Kafka does for an API that
// is not enabled on a listener); so does a version outside [min, max], except
// for ApiVersions, which is answered per KIP-511.
type VersionTable interface {
	Versions(key int16) (min, max int16, ok bool)
}

// MapVersionTable is an immutable VersionTable backed by a map from API key to
// [min, max]. Build it with NewVersionTable.
type MapVersionTable struct {
	m    map[int16][2]int16
	keys []int16
}

var _ VersionTable = (*MapVersionTable)(nil)

// NewVersionTable returns a VersionTable serving exactly the given ranges
// (key -> [min, max], both inclusive). The map is copied. Entries with
// min > max or a negative min are dropped.
func NewVersionTable(ranges map[int16][2]int16) *MapVersionTable {
	t := &MapVersionTable{m: make(map[int16][2]int16, len(ranges))}
	for k, r := range ranges {
		if r[0] < 0 || r[0] > r[1] {
			continue
		}
		t.m[k] = r
		t.keys = append(t.keys, k)
	}
	sort.Slice(t.keys, func(i, j int) bool { return t.keys[i] < t.keys[j] })
	return t
}

// Versions implements VersionTable.
func (t *MapVersionTable) Versions(key int16) (min, max int16, ok bool) {
	r, ok := t.m[key]
	return r[0], r[1], ok
}

// Keys returns the keys in the table in ascending order. The caller must not
// modify the returned slice.
func (t *MapVersionTable) Keys() []int16 { return t.keys }

// kmsgVersions is the VersionTable used when Server.Versions is nil: every
// key kmsg knows, from version 0 to kmsg's max.
type kmsgVersions struct{}

func (kmsgVersions) Versions(key int16) (min, max int16, ok bool) {
	r := kmsg.RequestForKey(key)
	if r == nil {
		return 0, 0, false
	}
	return 0, r.MaxVersion(), true
}

// servedRange returns the version range the server actually accepts for key:
// the table's range clamped to what kmsg can decode.
func servedRange(t VersionTable, key int16, kmsgMax int16) (min, max int16, ok bool) {
	min, max, ok = t.Versions(key)
	if !ok {
		return 0, 0, false
	}
	if max > kmsgMax {
		max = kmsgMax
	}
	if min < 0 {
		min = 0
	}
	if min > max {
		return 0, 0, false
	}
	return min, max, true
}
