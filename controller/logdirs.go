package controller

// Failed log directories (KIP-858, JBOD in KRaft), as
// ReplicationControlManager.handleDirectoriesOffline and the LeaderAcceptor
// decide them.
//
// A broker with several log dirs keeps running when one of them fails
// (ReplicaManager.handleLogDirFailure; it halts only when every dir, or the
// metadata log's, has failed). It reports the failed dir's directory id in
// every BrokerHeartbeat's OfflineLogDirs from then on. From metadata.version
// 3.7-IV2 (directory assignment), a heartbeat naming a dir the broker's
// registration still lists as online:
//
//   - every partition whose replica on that broker lives in the dir (its
//     Directories entry) leaves the broker: a PartitionChangeRecord that
//     takes the broker out of the ISR (and the ELR) and elects another
//     leader when the broker led it (generateLeaderAndIsrUpdates
//     "handleDirectoriesOffline[broker:dir]", brokerToRemove = the broker);
//   - then a BrokerRegistrationChangeRecord v2 whose LogDirs are the
//     broker's remaining online dirs.
//
// A dir already offline (or never registered: a broker that restarts with a
// failed dir registers without it) writes nothing. The offline dir's
// replicas then never lead: a replica may lead only when its directory is
// one of its broker's online dirs (LeaderAcceptor.test ->
// ClusterControlManager.hasOnlineDir -> DirectoryId.isOnline), which every
// election checks (changeBuilder.acceptable).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kgo-broker/kgo-broker/metadatacache"
)

// directoriesOfflineRecords is handleDirectoriesOffline for broker id at
// epoch reporting offline: nil when none of them is a dir its registration
// lists as online.
func directoriesOfflineRecords(s *state, mv int16, id int32, epoch int64, offline [][16]byte) []metadatacache.Record {
	b := s.brokers[id]
	if b == nil || len(offline) == 0 {
		return nil
	}
	var newOffline, stillOnline [][16]byte // directoryIntersection, directoryDifference
	for _, d := range b.logDirs {
		if slices.Contains(offline, d) {
			newOffline = append(newOffline, d)
		} else {
			stillOnline = append(stillOnline, d)
		}
	}
	if len(newOffline) == 0 {
		return nil
	}
	var recs []metadatacache.Record
	for _, dir := range newOffline {
		recs = append(recs, leaderAndIsrUpdates(s, mv, id, -1, -1, func(p *partitionState) bool {
			return replicaDir(p, id) == dir
		})...)
	}
	r := metadatacache.NewBrokerRegistrationChangeRecord()
	r.SetVersion(2)
	r.BrokerID, r.BrokerEpoch = id, epoch
	// Empty (every dir failed) means "no change" to the record's readers;
	// the broker halts in that case anyway.
	r.LogDirs = stillOnline
	return append(recs, r)
}

// replicaDir is PartitionRegistration.directory(broker): the directory of
// broker's replica, MIGRATING when the partition has none recorded, and
// UNASSIGNED when broker is not a replica.
func replicaDir(p *partitionState, broker int32) [16]byte {
	i := slices.Index(p.replicas, broker)
	switch {
	case i < 0:
		return dirUnassigned
	case len(p.directories) != len(p.replicas):
		return dirMigrating
	}
	return p.directories[i]
}

// hasOnlineDir is ClusterControlManager.hasOnlineDir (DirectoryId.isOnline):
// UNASSIGNED and MIGRATING are online, LOST is not, and a broker that
// registered no dirs (before 3.7-IV2) is taken at its word: a broker whose
// every dir failed halts.
func (s *state) hasOnlineDir(id int32, dir [16]byte) bool {
	b := s.brokers[id]
	switch {
	case b == nil:
		return false
	case dir == dirUnassigned || dir == dirMigrating:
		return true
	case dir == dirLost:
		return false
	case len(b.logDirs) == 0:
		return true
	}
	return slices.Contains(b.logDirs, dir)
}

// leaderAcceptor is LeaderAcceptor: replica r of p may lead when
// isAcceptable(r) (by default ClusterControlManager.isActive) and its log
// dir is online.
func (s *state) leaderAcceptor(p *partitionState, isAcceptable func(int32) bool) func(int32) bool {
	return func(r int32) bool {
		return isAcceptable(r) && s.hasOnlineDir(r, replicaDir(p, r))
	}
}

// allDirsCordoned reports whether every log dir of b is cordoned (KIP-1066):
// from metadata.version 4.3-IV0 such a broker takes no new replicas, so a
// topic or partitions that would need it fail with
// INVALID_REPLICATION_FACTOR (Kafka's CordonedLogDirsIntegrationTest). A
// broker that reported no cordoned dirs, or registered none, is not.
func (s *state) allDirsCordoned(b *brokerState) bool {
	if s.metadataVersion() < metadatacache.MV4_3_IV0 || len(b.cordoned) == 0 || len(b.logDirs) == 0 {
		return false
	}
	for _, d := range b.logDirs {
		if !slices.Contains(b.cordoned, d) {
			return false
		}
	}
	return true
}

// cordonedDirsDisabled is ConfigurationControlManager.isCordonedLogDirsDisabled:
// below metadata.version 4.3-IV0 no broker resource's cordoned.log.dirs may
// be set or deleted (KIP-1066).
func cordonedDirsDisabled(s *state, recs []metadatacache.Record) *apiError {
	if s.metadataVersion() >= metadatacache.MV4_3_IV0 {
		return nil
	}
	for _, r := range recs {
		if cr, ok := r.(*metadatacache.ConfigRecord); ok && cr.Name == "cordoned.log.dirs" {
			return newAPIError(kerr.InvalidConfig, "The cordoned.log.dirs configuration value cannot be set because it requires metadata.version >= 4.3-IV0")
		}
	}
	return nil
}
