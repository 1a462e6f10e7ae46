package broker

// DescribeLogDirs: v1-4
//
// Behavior (replication.ReplicaManager.DescribeLogDirs):
//   - One entry per log dir (absolute path), with every topic that has logs
//     there and, of those, the requested partitions (all for a null topic
//     list): size in bytes, offset lag 0 and is_future false (there are no
//     future replicas: AlterReplicaLogDirs is not served).
//   - v4: total and usable bytes of the dir's file system (statfs).
//   - No ACLs yet: the CLUSTER_AUTHORIZATION_FAILED case never arises.
//
// Version notes:
//   - v1: no change (v0 was removed in 4.x); v2: flexible
//   - v3: top-level error code; v4: total/usable bytes (KIP-827)
//   - v5 (KIP-1066 is_cordoned) is not served.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(35, 1, 4, onBroker, handleDescribeLogDirs) }

func handleDescribeLogDirs(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.DescribeLogDirsRequest)
	return protocol.Response{Msg: b.replicas.DescribeLogDirs(r)}, nil
}
