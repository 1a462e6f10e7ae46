package controller

// AssignReplicasToDirs (73) v0 (KIP-858, JBOD in KRaft): a broker tells the
// controller which of its log directories holds each of its replicas, as
// ReplicationControlManager.handleAssignReplicasToDirs decides it. A broker
// sends it when the directory in a partition's metadata is not where its
// log lives: a partition created while the broker had several log dirs is
// UNASSIGNED until the broker reports where it put it
// (ReplicaManager.maybeUpdateTopicAssignment, AssignmentsManager).
//
//   - metadata.version below 3.7-IV2: UNSUPPORTED_VERSION "Directory
//     assignment is not supported yet." for the whole request.
//   - the broker epoch must be the registration's: STALE_BROKER_EPOCH for
//     the whole request otherwise (ClusterControlManager.checkBrokerEpoch).
//   - per partition: UNKNOWN_TOPIC_ID (every partition of an unknown topic),
//     UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER when the broker is
//     not a replica; else a PartitionChangeRecord with the partition's
//     Directories, the broker's entry replaced (none when it is already
//     there: PartitionChangeBuilder.build of a no-op).
//   - a directory the broker's registration does not list as online: its
//     partitions also move their leadership and ISR off the broker
//     (generateLeaderAndIsrUpdates "offline-dir-assignment", as a fenced
//     broker's), in the same batch after the directory records.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/metadatacache"
)

func (c *Controller) assignReplicasToDirs(ctx context.Context, req *kmsg.AssignReplicasToDirsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AssignReplicasToDirsResponse)
	var (
		apiErr *apiError
		recs   []metadatacache.Record
	)
	c.view(func(s *state) {
		mv := s.metadataVersion()
		if !directoryAssignmentSupported(mv) {
			apiErr = newAPIError(kerr.UnsupportedVersion, "Directory assignment is not supported yet.")
			return
		}
		if apiErr = checkBrokerEpoch(s, req.BrokerID, req.BrokerEpoch); apiErr != nil {
			return
		}
		reg := s.brokers[req.BrokerID]
		type offlinePart struct {
			t   *topicState
			pid int32
		}
		var offline []offlinePart
		for _, d := range req.Directories {
			rd := kmsg.NewAssignReplicasToDirsResponseDirectory()
			rd.ID = d.ID
			online := slices.Contains(reg.logDirs, d.ID)
			for _, t := range d.Topics {
				rt := kmsg.NewAssignReplicasToDirsResponseDirectoryTopic()
				rt.TopicID = t.TopicID
				topic := s.topics[t.TopicID]
				if topic == nil {
					c.log.Warn("AssignReplicasToDirsRequest references an unknown topic ID",
						zap.Int32("broker", req.BrokerID), zap.String("topic_id", uuidString(t.TopicID)))
				}
				for _, pd := range t.Partitions {
					rp := kmsg.NewAssignReplicasToDirsResponseDirectoryTopicPartition()
					rp.Partition = pd.Partition
					var p *partitionState
					if topic != nil && pd.Partition >= 0 && int(pd.Partition) < len(topic.parts) {
						p = topic.parts[pd.Partition]
					}
					switch {
					case topic == nil:
						rp.ErrorCode = kerr.UnknownTopicID.Code
					case p == nil:
						c.log.Warn("AssignReplicasToDirsRequest references an unknown partition",
							zap.Int32("broker", req.BrokerID), zap.String("topic", topic.name), zap.Int32("partition", pd.Partition))
						rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
					case !contains(p.replicas, req.BrokerID):
						c.log.Warn("AssignReplicasToDirsRequest references a partition not assigned to the broker",
							zap.Int32("broker", req.BrokerID), zap.String("topic", topic.name), zap.Int32("partition", pd.Partition))
						rp.ErrorCode = kerr.NotLeaderForPartition.Code
					default:
						if r := directoryChange(mv, topic.id, pd.Partition, p, req.BrokerID, d.ID); r != nil {
							recs = append(recs, r)
						}
						if !online {
							offline = append(offline, offlinePart{topic, pd.Partition})
						}
						c.log.Debug("broker assigned a partition to a log dir", zap.Int32("broker", req.BrokerID),
							zap.String("topic", topic.name), zap.Int32("partition", pd.Partition),
							zap.String("dir", uuidString(d.ID)), zap.Bool("online", online))
					}
					rt.Partitions = append(rt.Partitions, rp)
				}
				rd.Topics = append(rd.Topics, rt)
			}
			resp.Directories = append(resp.Directories, rd)
		}
		// The leader and ISR changes are built from the state before the
		// directory records, as Kafka's are (both land in one batch).
		for _, o := range offline {
			// generateLeaderAndIsrUpdates(brokerToRemove = the broker)
			if r := s.leaderAndIsrUpdate(mv, o.t, o.pid, o.t.parts[o.pid], req.BrokerID, -1, -1); r != nil {
				recs = append(recs, r)
			}
		}
	})
	if apiErr != nil {
		resp.ErrorCode = apiErr.code()
		resp.Directories = nil
		return resp
	}
	if _, err := c.write(ctx, recs); err != nil {
		resp.ErrorCode = kerr.NotController.Code
		resp.Directories = nil
	}
	return resp
}

// directoryChange is PartitionChangeBuilder.setDirectory(broker, dir).build
// with nothing else changing: a PartitionChangeRecord with the partition's
// directories (MIGRATING for each replica when it has none), broker's
// entry set to dir; nil when it already is.
func directoryChange(mv int16, topicID [16]byte, pid int32, p *partitionState, broker int32, dir [16]byte) *metadatacache.PartitionChangeRecord {
	dirs := make([][16]byte, len(p.replicas))
	if len(p.directories) == len(p.replicas) {
		copy(dirs, p.directories)
	} // else: every replica MIGRATING (the zero id), as PartitionRegistration without directories
	changed := false
	for i, r := range p.replicas {
		if r == broker && dirs[i] != dir {
			dirs[i], changed = dir, true
		}
	}
	if !changed {
		return nil
	}
	rec := metadatacache.NewPartitionChangeRecord()
	rec.SetVersion(partitionChangeRecordVersion(mv))
	rec.TopicID, rec.PartitionID = topicID, pid
	rec.Directories = dirs
	return rec
}
