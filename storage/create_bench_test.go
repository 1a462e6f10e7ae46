package storage

import (
	"fmt"
	"testing"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// BenchmarkCreateLog measures creating a new partition's log on the real
// file system, the per-partition cost of a CreateTopics of many partitions
// (issue 16: 10,000 partitions took 72 s of log creation).
func BenchmarkCreateLog(b *testing.B) {
	dir := b.TempDir()
	m, err := OpenManager(ManagerOptions{FS: vfs.Default, LogDirs: []string{dir}, Config: DefaultConfig()})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	id := [16]byte{1, 2, 3}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.GetOrCreateLog(TopicPartition{Topic: "t", Partition: int32(i)}, id, Config{}); err != nil {
			b.Fatal(err)
		}
	}
}

var _ = fmt.Sprint
