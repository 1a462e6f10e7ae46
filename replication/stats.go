package replication

import "sync/atomic"

// Read-only state for the broker's metrics (broker/metrics.go). The gauges
// are computed when scraped, from the partitions' state, so the produce and
// fetch paths pay nothing for them; only the produce counters are kept as
// they happen (two atomic adds per appended partition).

// produceStats counts appended records and bytes across all topics: Kafka's
// BrokerTopicMetrics MessagesInPerSec and BytesInPerSec (all-topics).
type produceStats struct {
	messagesIn atomic.Int64
	bytesIn    atomic.Int64
}

// ProduceTotals are the totals since start of what produce requests appended
// as leader: records (MessagesInPerSec) and batch bytes (BytesInPerSec).
type ProduceTotals struct {
	MessagesIn int64
	BytesIn    int64
}

// ProduceTotals returns the produce counters (BrokerTopicMetrics, all topics).
func (rm *ReplicaManager) ProduceTotals() ProduceTotals {
	return ProduceTotals{MessagesIn: rm.stats.messagesIn.Load(), BytesIn: rm.stats.bytesIn.Load()}
}

// ReplicaCounts are ReplicaManager's gauges (kafka.server:type=ReplicaManager).
type ReplicaCounts struct {
	// Partitions is PartitionCount: the partitions this node holds a replica of.
	Partitions int
	// Leaders is LeaderCount: those it leads.
	Leaders int
	// UnderReplicated is UnderReplicatedPartitions: led partitions whose ISR
	// is smaller than their replica set.
	UnderReplicated int
	// Offline is OfflineReplicaCount: replicas whose log went offline with
	// its log dir (KIP-112).
	Offline int
}

// Counts returns the replica gauges, reading each partition's state under its
// read lock (a scrape costs one pass over the partitions).
func (rm *ReplicaManager) Counts() ReplicaCounts {
	rm.mu.RLock()
	parts := make([]*Partition, 0, len(rm.partitions))
	for _, p := range rm.partitions {
		parts = append(parts, p)
	}
	rm.mu.RUnlock()
	var c ReplicaCounts
	for _, p := range parts {
		p.mu.RLock()
		leader := p.isLeader
		under := leader && len(p.isr) < len(p.replicas)
		offline := p.log != nil && p.log.Offline()
		p.mu.RUnlock()
		c.Partitions++
		if leader {
			c.Leaders++
		}
		if under {
			c.UnderReplicated++
		}
		if offline {
			c.Offline++
		}
	}
	return c
}
