package broker

// DescribeLogDirs: v1-5
//
// Behavior (replication.ReplicaManager.DescribeLogDirs):
//   - One entry per log dir (absolute path), with every topic that has logs
//     there and, of those, the requested partitions (all for a null topic
//     list): size in bytes, offset lag 0 and is_future false, and the
//     future replicas of moves between log dirs (KIP-113) with is_future
//     and their lag.
//   - v4: total and usable bytes of the dir's file system (statfs).
//   - v5: is_cordoned for the dirs in cordoned.log.dirs, static or dynamic
//     (KIP-1066; "*" is every dir) once the finalized metadata.version is
//     4.3-IV0 or later, as Kafka's ReplicaManager.describeLogDirs reads
//     LogManager.cordonedLogDirs (cordoned.go).
//   - No ACLs yet: the CLUSTER_AUTHORIZATION_FAILED case never arises.
//
// Version notes:
//   - v1: no change (v0 was removed in 4.x); v2: flexible
//   - v3: top-level error code; v4: total/usable bytes (KIP-827)
//   - v5: is_cordoned (KIP-1066)

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(35, 1, 5, onBroker, handleDescribeLogDirs) }

func handleDescribeLogDirs(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.DescribeLogDirsRequest)
	resp := b.replicas.DescribeLogDirs(r)
	if r.Version >= 5 {
		cordoned := b.cordonedLogDirs() // none below 4.3-IV0 (cordoned.go)
		for i := range resp.Dirs {
			resp.Dirs[i].IsCordoned = cordoned[resp.Dirs[i].Dir]
		}
	}
	return protocol.Response{Msg: resp}, nil
}
