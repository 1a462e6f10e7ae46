package lockrank

import "fmt"

// Rank orders locks: a goroutine takes them in increasing rank.
type Rank uint16

// The ranks, lowest (taken first) to highest. Gaps leave room.
const (
	Unranked Rank = 0

	CacheDeliver Rank = 100 // metadatacache.Cache.deliverMu
	Cache        Rank = 110 // metadatacache.Cache.mu

	ControllerDecide Rank = 200 // controller.Controller.mu (held across the raft append)
	ControllerState  Rank = 210 // controller.Controller.stateMu

	RaftNode Rank = 300 // raft.Node.mu

	Fetchers       Rank = 400 // replication.fetcherManager.mu
	ReplicaManager Rank = 410 // replication.ReplicaManager.mu
	Partition      Rank = 420 // replication.Partition.mu
	PartitionState Rank = 430 // replication.Partition.stateMu
	LogManager     Rank = 500 // storage.Manager.mu
	Cleaner        Rank = 510 // storage.Manager.cleaner.mu
	LogFlush       Rank = 520 // storage.Log.flushMu
	LogCommit      Rank = 530 // storage.Log.commit (group commit rounds)
	Log            Rank = 540 // storage.Log.mu

	// Leaf locks guard a few fields and never call out.
	Leaf Rank = 1000
)

var names = map[Rank]string{
	CacheDeliver: "metadatacache.Cache.deliverMu", Cache: "metadatacache.Cache.mu",
	ControllerDecide: "controller.Controller.mu", ControllerState: "controller.Controller.stateMu",
	RaftNode: "raft.Node.mu",
	Fetchers: "replication.fetcherManager.mu", ReplicaManager: "replication.ReplicaManager.mu",
	Partition: "replication.Partition.mu", PartitionState: "replication.Partition.stateMu",
	LogManager: "storage.Manager.mu", Cleaner: "storage.Manager.cleaner.mu", LogFlush: "storage.Log.flushMu",
	LogCommit: "storage.Log.commit", Log: "storage.Log.mu", Leaf: "a leaf lock",
}

func (r Rank) String() string {
	if n, ok := names[r]; ok {
		return n
	}
	return fmt.Sprintf("rank %d", uint16(r))
}
